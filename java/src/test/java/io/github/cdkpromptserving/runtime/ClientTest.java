package io.github.cdkpromptserving.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/** The client's read path against DynamoDB Local: single-flight across threads, the catalog, SWR/SIE, labels, hooks, the bound. */
class ClientTest {
  static final DynamoDbLocal.Counter counter = new DynamoDbLocal.Counter();
  /** Set: every call fails as an unreachable table does. */
  static final AtomicBoolean outage = new AtomicBoolean();
  static DynamoDbClient ddb;
  static String table;

  static final String SUM_V1 = "sha256:" + "1".repeat(64);

  @BeforeAll
  static void setUp() {
    ddb = DynamoDbClient.builder().endpointOverride(java.net.URI.create("http://127.0.0.1:" + DynamoDbLocal.port()))
        .region(software.amazon.awssdk.regions.Region.US_EAST_1)
        .credentialsProvider(software.amazon.awssdk.auth.credentials.StaticCredentialsProvider.create(
            software.amazon.awssdk.auth.credentials.AwsBasicCredentials.create("local", "local")))
        .httpClientBuilder(software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient.builder())
        .overrideConfiguration(o -> o.addExecutionInterceptor(counter).addExecutionInterceptor(new ExecutionInterceptor() {
          @Override
          public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
            if (outage.get()) throw SdkClientException.create("simulated outage: the table cannot be reached");
          }
        }))
        .build();
    table = DynamoDbLocal.createTable(ddb);
    put("greeting", "CURRENT", 2, "Hello {{name}} v2", SUM_V1, null);
    put("greeting", "v000001", 1, "Hello {{name}} v1", "sha256:" + "a".repeat(64), null);
    put("greeting", "v000002", 2, "Hello {{name}} v2", SUM_V1, null);
    put("greeting", "LABEL#production", 1, "Hello {{name}} v1", "sha256:" + "a".repeat(64),
        Map.of("rollout_id", "r-1", "candidate_version", 2, "candidate_checksum", SUM_V1, "percent_bp", 5000));
    put("greeting", "LABEL#bad", 1, "Hello {{name}} v1", "sha256:" + "a".repeat(64),
        Map.of("rollout_id", "r-2", "candidate_version", 2, "candidate_checksum", "sha256:" + "f".repeat(64), "percent_bp", 10000));
    for (int i = 0; i < 5; i++) put("p" + i, "CURRENT", 1, "P" + i, SUM_V1, null);
    List<String> ids = new ArrayList<>(List.of("greeting"));
    for (int i = 0; i < 5; i++) ids.add("p" + i);
    int[] p = Schema.bloomParameters(ids.size());
    ddb.putItem(b -> b.tableName(table).item(Map.of("prompt_id", s("#catalog"), "version", s("CURRENT"),
        "bloom", AttributeValue.builder().b(SdkBytes.fromByteArray(Schema.bloomBuild(ids, p[0], p[1]))).build(),
        "bloom_bits", n(p[0]), "bloom_hashes", n(p[1]), "count", n(ids.size()), "revision", n(1))));
  }

  static AttributeValue s(String v) {
    return AttributeValue.builder().s(v).build();
  }

  static AttributeValue n(int v) {
    return AttributeValue.builder().n(String.valueOf(v)).build();
  }

  static void put(String id, String sortKey, int version, String text, String checksum, Map<String, Object> rollout) {
    java.util.Map<String, AttributeValue> item = new java.util.HashMap<>();
    item.put("prompt_id", s(id));
    item.put("version", s(sortKey));
    item.put("version_number", n(version));
    item.put("checksum", s(checksum));
    item.put("status", s("ACTIVE"));
    item.put("template_type", s("TEXT"));
    item.put("text", s(text));
    if (sortKey.startsWith("LABEL#")) item.put("label", s(sortKey.substring(6)));
    if (rollout != null) {
      java.util.Map<String, AttributeValue> m = new java.util.HashMap<>();
      for (Map.Entry<String, Object> e : rollout.entrySet()) m.put(e.getKey(), e.getValue() instanceof String ? s((String) e.getValue()) : n((Integer) e.getValue()));
      item.put("rollout", AttributeValue.builder().m(m).build());
    }
    ddb.putItem(b -> b.tableName(table).item(item));
  }

  static PromptClient.Builder builder() {
    return PromptClient.builder().tableName(table).dynamoDbClient(ddb).withoutL2().environment(Map.of());
  }

  @Test
  void concurrentColdReadsOfOneIdAcrossThreadsMakeOneTableRead() throws Exception {
    // GIVEN a cold client and 200 threads released together
    PromptClient client = builder().build();
    counter.reset();
    int threads = 200;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<Prompt>> reads = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      reads.add(pool.submit((Callable<Prompt>) () -> {
        go.await();
        return client.getPrompt("greeting");
      }));
    }
    // WHEN they all read one id
    go.countDown();
    for (Future<Prompt> r : reads) assertEquals(2, r.get().getVersion());
    pool.shutdown();
    // THEN the item was read once (and the catalog once)
    assertEquals(1, counter.count("greeting/CURRENT"));
    assertEquals(1, counter.count("#catalog/CURRENT"));
    // every read counted once, a miss (atomic, exact) or a hit: the CURRENT hit counter is a plain field that may
    // undercount when many threads hit at once (PromptClient#hitCount says why), so only a bound holds for it
    PromptClientStats stats = client.stats();
    assertTrue(stats.misses >= 1, "the read that loaded the item is a miss");
    assertTrue(stats.hits + stats.misses <= threads, "no read counted twice: " + stats.hits + " + " + stats.misses);
  }

  @Test
  void aHitIsServedFromMemoryAsTheSameObjectWithProvenanceL1() {
    PromptClient client = builder().build();
    Prompt first = client.getPrompt("greeting");
    counter.reset();
    Prompt second = client.getPrompt("greeting");
    assertEquals("table", first.getProvenance().getSource());
    assertEquals("l1", second.getProvenance().getSource());
    assertSame(second, client.getPrompt("greeting"));
    assertEquals(0, counter.keys.size());
    assertEquals(2, client.stats().hits);
  }

  @Test
  void anIdTheCatalogRulesOutIsNotFoundWithoutReadingItsItemAndIsNegativeCached() {
    PromptClient client = builder().build();
    client.getPrompt("greeting"); // warms the catalog
    counter.reset();
    PromptNotFoundException e = assertThrows(PromptNotFoundException.class, () -> client.getPrompt("no-such-prompt"));
    assertEquals("prompt 'no-such-prompt' not found: not in the catalog", e.getMessage());
    assertEquals(0, counter.keys.size());
    assertEquals(1, client.stats().catalogRejections);
  }

  @Test
  void aPinnedVersionIsReadOnceAndNeverExpires() {
    PromptClient client = builder().maxAgeSeconds(0).build();
    Prompt v1 = client.getPrompt("greeting", GetOptions.ofVersion(1));
    counter.reset();
    Prompt again = client.getPrompt("greeting", GetOptions.ofVersion(1));
    assertEquals(1, v1.getVersion());
    assertEquals("Hello {{name}} v1", again.getText());
    assertEquals(0, counter.count("greeting/v000001"));
    assertThrows(PromptNotFoundException.class, () -> client.getPrompt("greeting", GetOptions.ofVersion(7)));
    PromptNotFoundException bad = assertThrows(PromptNotFoundException.class, () -> client.getPrompt("greeting", GetOptions.ofVersion(0)));
    assertEquals("version 0 of prompt 'greeting' not found: a version is an integer from 1 to 999999", bad.getMessage());
  }

  @Test
  void staleWhileRevalidateServesTheExpiredCopyAtOnceAndStaleIfErrorServesItThroughAnOutage() throws Exception {
    PromptClient client = builder().maxAgeSeconds(0.2).staleWhileRevalidateSeconds(0.5).staleIfErrorSeconds(60).build();
    client.getPrompt("greeting");
    Thread.sleep(300); // expired, within stale-while-revalidate
    Prompt swr = client.getPrompt("greeting");
    assertTrue(swr.isStale());
    assertEquals("l1", swr.getProvenance().getSource());
    Thread.sleep(800); // past stale-while-revalidate (of the copy the background refresh brought)
    outage.set(true);
    try {
      Prompt sie = client.getPrompt("greeting");
      assertTrue(sie.isStale());
      assertEquals(2, sie.getVersion());
      assertTrue(client.stats().storeErrors >= 1);
      assertEquals(2, client.stats().staleServes);
      // a cold client has nothing to serve: the store error, or the fallback when one is given
      PromptClient cold = builder().build();
      assertThrows(PromptStoreException.class, () -> cold.getPrompt("greeting"));
      Prompt fallback = cold.getPrompt("greeting", GetOptions.defaults().fallback(PromptFallback.text("Hi {{name}}")));
      assertEquals(0, fallback.getVersion());
      assertEquals("fallback", fallback.getProvenance().getSource());
      assertEquals(1, cold.stats().fallbackServes);
    } finally {
      outage.set(false);
    }
  }

  @Test
  void aLabelWithARolloutServesEachStickinessKeyItsArmAndTheCandidateOnlyWithTheMapsChecksum() {
    PromptClient client = builder().build();
    int onB = 0;
    for (int k = 0; k < 100; k++) {
      String key = "user-" + k;
      Prompt p = client.getPrompt("greeting", GetOptions.ofLabel("production").stickinessKey(key));
      String arm = Schema.rolloutArm(Schema.rolloutBucket("greeting", "production", key), 5000);
      assertEquals(arm, p.getRollout().getArm(), key);
      assertEquals(arm.equals("B") ? 2 : 1, p.getVersion(), key);
      assertEquals("production", p.getLabel());
      assertEquals(p, client.getPrompt("greeting", GetOptions.ofLabel("production").stickinessKey(key)).getRollout().getArm().equals(arm) ? p : null);
      if (arm.equals("B")) onB++;
    }
    assertTrue(onB > 20 && onB < 80, "about half on B: " + onB);
    // a rollout whose candidate has another checksum serves arm A to everyone, counted
    Prompt bad = client.getPrompt("greeting", GetOptions.ofLabel("bad").stickinessKey("user-1"));
    assertEquals(1, bad.getVersion());
    assertEquals("A", bad.getRollout().getArm());
    assertTrue(client.stats().rolloutFaults >= 1);
    PromptNotFoundException missing = assertThrows(PromptNotFoundException.class, () -> client.getPrompt("greeting", GetOptions.ofLabel("staging")));
    assertEquals(((String) Fixtures.map(Fixtures.load("labels.json").get("notFound")).get("missing")).replace("support-triage", "greeting"),
        missing.getMessage());
    PromptServingException both = assertThrows(PromptServingException.class,
        () -> client.getPrompt("greeting", GetOptions.ofLabel("production").version(1)));
    assertEquals("give `version` or `label`, not both: a label names its own version", both.getMessage());
  }

  @Test
  void onReadSeesEveryReadAndAHookThatThrowsNeverFailsOne() {
    List<ReadInfo> seen = new ArrayList<>();
    PromptClient client = builder().onRead((info, c) -> {
      seen.add(info);
      throw new IllegalStateException("hook bug");
    }).build();
    client.getPrompt("greeting");
    client.getPrompt("greeting");
    assertEquals(2, seen.size());
    assertEquals("table", seen.get(0).source);
    assertEquals("l1", seen.get(1).source);
    assertNull(seen.get(1).label);
    assertEquals(table, seen.get(0).tableName);
  }

  @Test
  void theMemoryIsBoundedAndInvalidateForgetsAPrompt() {
    PromptClient client = builder().maxEntries(3).build();
    for (int i = 0; i < 5; i++) client.getPrompt("p" + i);
    assertEquals(3, client.stats().entries);
    assertEquals(2, client.stats().evictions);
    Prompt before = client.getPrompt("p4");
    client.invalidate("p4");
    assertNotSame(before, client.getPrompt("p4"));
  }

  @Test
  void aClientGivenAnotherTableDoesNotUseTheEnvironmentsCache() {
    // GIVEN an environment whose cache belongs to another table (an endpoint that cannot be used: any use throws)
    Map<String, String> env = Map.of("PROMPT_SERVING_TABLE_NAME", "another-table", "PROMPT_SERVING_CACHE_ENDPOINT", "not-an-endpoint");
    // WHEN a client is built with an explicit table name
    PromptClient client = PromptClient.builder().tableName(table).dynamoDbClient(ddb).environment(env).build();
    // THEN it has no L2 and reads its own table
    assertNull(client.sharedTier());
    assertEquals("P0", client.getPrompt("p0").renderText(Map.of(), null));
    assertEquals(0, client.stats().l2Misses + client.stats().l2Errors + client.stats().l2Unavailable);
    // and the same environment naming this table does use its cache (here: fails on the endpoint)
    Map<String, String> same = Map.of("PROMPT_SERVING_TABLE_NAME", table, "PROMPT_SERVING_CACHE_ENDPOINT", "not-an-endpoint");
    assertThrows(PromptServingException.class, () -> PromptClient.builder().tableName(table).dynamoDbClient(ddb).environment(same).build());
  }

  @Test
  void anIdleClockIsDisarmedSoAThawedProcessReadsTheRealClock() throws Exception {
    // GIVEN a client on the coarse clock, and a hit (which arms it)
    PromptClient client = PromptClient.builder().tableName(table).dynamoDbClient(ddb).withoutL2().environment(Map.of()).build();
    client.getPrompt("p1");
    client.getPrompt("p1");
    // WHEN no hit comes for a few ticks (the state in which Lambda freezes a process)
    Thread.sleep(50);
    // THEN the clock is disarmed: the next hit judges freshness by the real clock, not the ticker's last value
    assertEquals(CoarseClock.DISARMED, CoarseClock.SYSTEM.state);
    long stale = System.currentTimeMillis() - 3_600_000;
    CoarseClock.SYSTEM.now = stale; // a value from before a long freeze
    assertTrue(CoarseClock.SYSTEM.forHit(Long.MAX_VALUE) >= System.currentTimeMillis() - 1000);
  }

  @Test
  void aSnapshotStopsTheTickerAndTheRestoredClientServesNothingBeyondMaxAge() throws Exception {
    // GIVEN a client on the coarse clock with a short max age, a loaded prompt and hits (the ticker runs, armed)
    PromptClient client = PromptClient.builder().tableName(table).dynamoDbClient(ddb).withoutL2().environment(Map.of())
        .maxAgeSeconds(0.3).staleWhileRevalidateSeconds(0).build();
    SnapStart hook = client.registerSnapStart(List.of(), null);
    client.getPrompt("p2");
    for (int i = 0; i < 1000; i++) client.getPrompt("p2");
    long readsBefore = client.stats().storeReads;
    // WHEN a snapshot is taken, the clock's field is left at the snapshot's time, and the restore comes after maxAge
    hook.beforeCheckpoint(null);
    assertEquals(CoarseClock.DISARMED, CoarseClock.SYSTEM.state);
    long deadline = System.currentTimeMillis() + 2000;
    while (CoarseClock.SYSTEM.ticking() && System.currentTimeMillis() < deadline) Thread.sleep(5);
    assertTrue(!CoarseClock.SYSTEM.ticking(), "the ticker stops before the snapshot");
    long frozenAt = CoarseClock.SYSTEM.now;
    Thread.sleep(400);
    assertEquals(frozenAt, CoarseClock.SYSTEM.now, "nothing moves the clock's field while suspended");
    hook.afterRestore(null);
    // THEN the first read after the restore is not served from memory: the copy is past maxAge by the real clock
    client.getPrompt("p2");
    assertEquals(readsBefore + 1, client.stats().storeReads);
    // and hits arm the clock again (the ticker restarts)
    for (int i = 0; i < 1000; i++) client.getPrompt("p2");
    assertTrue(CoarseClock.SYSTEM.ticking());
  }

  @Test
  void theEnvironmentContractNamesTheTable() {
    PromptServingException e = assertThrows(PromptServingException.class,
        () -> PromptClient.builder().environment(Map.of()).withoutL2().dynamoDbClient(ddb).build());
    assertTrue(e.getMessage().startsWith("no table name"));
    try (PromptClient fromEnv = PromptClient.builder().environment(Map.of("PROMPT_SERVING_TABLE_NAME", table, "PROMPT_SERVING_MAX_AGE_SECONDS", "7"))
        .dynamoDbClient(ddb).build()) {
      assertEquals(table, fromEnv.options().tableName);
      assertEquals(7000, fromEnv.options().maxAgeMs);
      assertEquals(2, fromEnv.getPrompt("greeting").getVersion());
    }
  }
}
