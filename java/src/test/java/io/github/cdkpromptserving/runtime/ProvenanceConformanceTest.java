package io.github.cdkpromptserving.runtime;

import static io.github.cdkpromptserving.runtime.Fixtures.integer;
import static io.github.cdkpromptserving.runtime.Fixtures.list;
import static io.github.cdkpromptserving.runtime.Fixtures.load;
import static io.github.cdkpromptserving.runtime.Fixtures.map;
import static io.github.cdkpromptserving.runtime.Fixtures.name;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/** provenance.json's scenarios through the real client (DynamoDB Local, a clock that moves only by `advance`). */
class ProvenanceConformanceTest {
  static final Map<String, Object> FIXTURE = load("provenance.json");
  static final AtomicBoolean failTable = new AtomicBoolean();
  static DynamoDbClient ddb;
  static String table;

  @BeforeAll
  static void setUp() {
    ddb = DynamoDbClient.builder().endpointOverride(java.net.URI.create("http://127.0.0.1:" + DynamoDbLocal.port()))
        .region(software.amazon.awssdk.regions.Region.US_EAST_1)
        .credentialsProvider(software.amazon.awssdk.auth.credentials.StaticCredentialsProvider.create(
            software.amazon.awssdk.auth.credentials.AwsBasicCredentials.create("local", "local")))
        .httpClientBuilder(software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient.builder())
        .overrideConfiguration(o -> o.addExecutionInterceptor(new ExecutionInterceptor() {
          @Override
          public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
            if (failTable.get()) throw SdkClientException.create("the table fails every GetItem");
          }
        }))
        .build();
    table = DynamoDbLocal.createTable(ddb);
    List<Map<String, Object>> items = new ArrayList<>();
    for (Object o : list(FIXTURE.get("items"))) items.add(map(o));
    DynamoDbLocal.putItems(ddb, table, items);
  }

  @TestFactory
  Stream<DynamicTest> scenarios() {
    List<DynamicTest> tests = new ArrayList<>();
    List<Map<String, Object>> scenarios = list(FIXTURE, "scenarios");
    for (int i = 0; i < scenarios.size(); i++) {
      Map<String, Object> s = scenarios.get(i);
      tests.add(DynamicTest.dynamicTest(name(s, i), () -> run(s)));
    }
    return tests.stream();
  }

  private void run(Map<String, Object> scenario) {
    failTable.set(false);
    AtomicLong clock = new AtomicLong(System.currentTimeMillis());
    List<ReadInfo> infos = new ArrayList<>();
    PromptClient.Builder b = PromptClient.builder().tableName(table).dynamoDbClient(ddb).withoutL2().environment(Map.of())
        .clock(clock::get).onRead((info, c) -> infos.add(info));
    for (Map.Entry<String, Object> o : map(scenario.get("options")).entrySet()) b.number(o.getKey(), ((Number) o.getValue()).doubleValue());
    try (PromptClient client = b.build()) {
      for (Object st : list(scenario.get("steps"))) {
        Map<String, Object> step = map(st);
        if (step.containsKey("advance")) {
          clock.addAndGet(Math.round(((Number) step.get("advance")).doubleValue() * 1000));
          continue;
        }
        if (step.containsKey("failTable")) {
          failTable.set(Boolean.TRUE.equals(step.get("failTable")));
          continue;
        }
        GetOptions options = GetOptions.defaults();
        if (step.get("version") != null) options = options.version(integer(step.get("version")));
        if (step.get("label") != null) options = options.label((String) step.get("label"));
        if (step.get("stickinessKey") != null) options = options.stickinessKey((String) step.get("stickinessKey"));
        if (step.get("fallback") != null) options = options.fallback(PromptFallback.text((String) map(step.get("fallback")).get("text")));
        int before = infos.size();
        Prompt p = client.getPrompt((String) step.get("read"), options);
        waitForBackground();
        Map<String, Object> e = map(step.get("expect"));
        String where = step.get("read") + " " + Json.stringify(e);
        assertEquals(e.get("source"), p.getProvenance().getSource(), where);
        assertEquals(e.get("stale"), p.isStale(), where);
        assertEquals(integer(e.get("version")), p.getVersion(), where);
        assertTrue(Math.abs(((Number) e.get("ageSeconds")).doubleValue() - p.getProvenance().getAgeSeconds()) <= 0.5, where + " age "
            + p.getProvenance().getAgeSeconds());
        assertEquals(e.get("label"), p.getLabel(), where);
        assertEquals(e.get("rolloutId"), p.getRollout() == null ? null : p.getRollout().getRolloutId(), where);
        assertEquals(e.get("arm"), p.getRollout() == null ? null : p.getRollout().getArm(), where);
        assertEquals(before + 1, infos.size(), where);
        ReadInfo info = infos.get(before);
        assertEquals(e.get("source"), info.source, where);
        assertEquals(e.get("stale"), info.stale, where);
        assertEquals(integer(e.get("version")), info.version, where);
        assertEquals(e.get("requestedVersion") == null ? null : integer(e.get("requestedVersion")), info.requestedVersion, where);
        assertEquals(e.get("label"), info.label, where);
        assertEquals(e.get("rolloutId"), info.rolloutId, where);
        assertEquals(e.get("arm"), info.arm, where);
        assertEquals(p.getId(), info.promptId);
      }
    } finally {
      failTable.set(false);
    }
  }

  /** A stale serve starts a background refresh: let it finish before the clock moves again. */
  private static void waitForBackground() {
    try {
      Thread.sleep(30);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
