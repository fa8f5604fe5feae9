package io.github.cdkpromptserving.runtime;

import static io.github.cdkpromptserving.runtime.Fixtures.integer;
import static io.github.cdkpromptserving.runtime.Fixtures.list;
import static io.github.cdkpromptserving.runtime.Fixtures.load;
import static io.github.cdkpromptserving.runtime.Fixtures.map;
import static io.github.cdkpromptserving.runtime.Fixtures.name;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * l2.json (keys, value encodings and decode rules, the epoch, tokens, fill lifetimes) and l2-hostile.json (hostile
 * values and catalog fills read through the real client, a real TLS redis-server with the reader ACL user, DynamoDB
 * Local), as python/tests/test_conformance.py runs them.
 */
class L2ConformanceTest {
  static final Map<String, Object> L2 = load("l2.json");
  static final Map<String, Object> HOSTILE = load("l2-hostile.json");
  static RedisServer redis;
  static DynamoDbLocal.Counter counter = new DynamoDbLocal.Counter();
  static DynamoDbClient ddb;

  @BeforeAll
  static void start() throws Exception {
    redis = new RedisServer();
    ddb = DynamoDbLocal.client(counter);
  }

  @AfterAll
  static void stop() {
    if (redis != null) redis.close();
  }

  private static Stream<DynamicTest> each(List<Map<String, Object>> cases, java.util.function.Consumer<Map<String, Object>> body) {
    List<DynamicTest> tests = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      Map<String, Object> c = cases.get(i);
      tests.add(DynamicTest.dynamicTest(name(c, i), () -> body.accept(c)));
    }
    return tests.stream();
  }

  @Test
  void keysEncodingsTokensAndFillLifetimes() {
    for (Map<String, Object> k : list(L2, "keys")) {
      assertEquals(k.get("key"), L2Schema.itemKey((String) k.get("table"), (String) k.get("promptId"), (String) k.get("sortKey")));
      assertEquals(k.get("fillKey"), L2Schema.fillKey((String) k.get("table"), (String) k.get("promptId"), (String) k.get("sortKey")));
    }
    assertEquals(map(L2.get("catalogKey")).get("key"), L2Schema.catalogKey((String) map(L2.get("catalogKey")).get("table")));
    assertEquals(map(L2.get("epochKey")).get("key"), L2Schema.epochKey((String) map(L2.get("epochKey")).get("table")));
    Map<String, Object> pattern = map(L2.get("keyPattern"));
    assertEquals(pattern.get("pattern"), L2Schema.keyPattern((String) pattern.get("table")));
    assertEquals(pattern.get("fillPattern"), L2Schema.fillPattern((String) pattern.get("table")));
    assertEquals(integer(L2.get("valueTtlSeconds")), L2Schema.VALUE_TTL_SECONDS);
    assertEquals(integer(L2.get("maxClockSkewMs")), (int) L2Schema.MAX_CLOCK_SKEW_MS);
    for (Map<String, Object> e : list(L2, "encodeFill")) {
      assertEquals(e.get("encoded"), L2Schema.encodeFillValue((String) e.get("inc"), ((Number) e.get("fetchedAt")).longValue(), map(e.get("item"))));
    }
    for (Map<String, Object> e : list(L2, "encodeStream")) {
      assertEquals(e.get("encoded"), L2Schema.encodeStreamValue((String) e.get("inc"), (String) e.get("seq"), ((Number) e.get("writtenAt")).longValue(),
          map(e.get("item"))));
    }
    for (Map<String, Object> c : list(L2, "fillTtl")) {
      assertEquals(((Number) c.get("ttl")).longValue(), L2Schema.fillTtlSeconds(((Number) c.get("maxAgeMs")).longValue(),
          ((Number) c.get("staleWhileRevalidateMs")).longValue()), Json.stringify(c));
    }
    for (Map<String, Object> c : list(L2, "tokens")) {
      List<Object> a = list(c.get("a"));
      List<Object> b = list(c.get("b"));
      assertEquals(integer(c.get("compare")), Integer.signum(L2Schema.compareTokens((String) a.get(0), (String) a.get(1), (String) b.get(0),
          (String) b.get(1))), Json.stringify(c));
    }
  }

  @TestFactory
  Stream<DynamicTest> streamValues() {
    return each(list(L2, "decodeStream"), c -> {
      L2Schema.StreamValue v = L2Schema.decodeStreamValue((String) c.get("raw"), (String) c.get("promptId"), (String) c.get("sortKey"));
      Map<String, Object> got = null;
      if (v != null) {
        got = new LinkedHashMap<>();
        got.put("inc", v.inc);
        got.put("seq", v.seq);
        got.put("removed", v.item == null);
      }
      assertEquals(c.get("expect"), got);
    });
  }

  @TestFactory
  Stream<DynamicTest> fillValues() {
    return each(list(L2, "decodeFill"), c -> {
      L2Schema.FillValue v = L2Schema.decodeFillValue((String) c.get("raw"), (String) c.get("promptId"), (String) c.get("sortKey"),
          ((Number) c.get("nowMs")).longValue());
      Map<String, Object> got = null;
      if (v != null) {
        got = new LinkedHashMap<>();
        got.put("inc", v.inc);
        got.put("fetchedAt", (double) v.fetchedAt);
      }
      assertEquals(c.get("expect"), got);
    });
  }

  @TestFactory
  Stream<DynamicTest> epochIncarnations() {
    return each(list(L2, "epoch"), c -> assertEquals(c.get("incarnation"), L2Schema.epochIncarnation((String) c.get("raw"))));
  }

  @TestFactory
  Stream<DynamicTest> writerScripts() {
    List<Map<String, Object>> cases = new ArrayList<>(list(L2, "ordering"));
    cases.addAll(list(L2, "epochBump"));
    return each(cases, c -> {
      String note = Fixtures.javaNote(c);
      assertNotNull(note, "a script case needs a note saying why it does not apply to the Java reader");
      assertTrue(note.startsWith("not applicable: "), note);
    });
  }

  private static final Pattern NOW = Pattern.compile("\"NOW([+-]\\d+)?\"");

  @TestFactory
  Stream<DynamicTest> hostileValues() {
    String table = DynamoDbLocal.createTable(ddb);
    List<Map<String, Object>> items = new ArrayList<>();
    for (Map<String, Object> c : list(HOSTILE, "cases")) if (c.get("tableItem") != null) items.add(map(c.get("tableItem")));
    DynamoDbLocal.putItems(ddb, table, items);
    return each(list(HOSTILE, "cases"), c -> {
      redis.admin().set(L2Schema.epochKey(table), (String) HOSTILE.get("epoch"));
      long now = System.currentTimeMillis();
      Map<String, Object> l2 = map(c.get("l2"));
      Matcher m = NOW.matcher((String) l2.get("raw"));
      StringBuilder raw = new StringBuilder();
      while (m.find()) m.appendReplacement(raw, String.valueOf(now + (m.group(1) == null ? 0 : Long.parseLong(m.group(1)))));
      m.appendTail(raw);
      String id = (String) c.get("id");
      String key = "stream".equals(l2.get("kind")) ? L2Schema.itemKey(table, id, "CURRENT") : L2Schema.fillKey(table, id, "CURRENT");
      redis.admin().set(key, raw.toString());
      counter.reset();
      try (PromptClient client = PromptClient.builder().tableName(table).dynamoDbClient(ddb).environment(Map.of())
          .l2(redis.reader("reader", RedisServer.READER_PASSWORD)).maxAgeSeconds(60).build()) {
        Object answer;
        try {
          Prompt p = client.getPrompt(id);
          Map<String, Object> a = new LinkedHashMap<>();
          a.put("version", (double) p.getVersion());
          a.put("inputVariables", new ArrayList<Object>(p.getInputVariables()));
          if (p.getInferenceConfig() != null) a.put("inferenceConfig", p.getInferenceConfig());
          answer = a;
        } catch (PromptNotFoundException e) {
          answer = "notFound";
        }
        assertEquals(c.get("expect"), answer);
        assertEquals(c.get("tableRead"), counter.keys.contains(id + "/CURRENT"), "table read");
      }
    });
  }

  @TestFactory
  Stream<DynamicTest> catalogFillsNeverRuleAnIdOutAlone() {
    return each(list(HOSTILE, "catalogCases"), c -> {
      String table = DynamoDbLocal.createTable(ddb);
      List<String> tableIds = new ArrayList<>();
      for (Object o : list(c.get("tableCatalog"))) tableIds.add((String) o);
      Map<String, Object> catalog = catalogItem(tableIds);
      ddb.putItem(b -> b.tableName(table).item(DdbJson.toItem(L2Schema.toDynamoJson(catalog))));
      List<Map<String, Object>> items = new ArrayList<>();
      for (Object o : list(c.get("tableItems"))) items.add(map(o));
      DynamoDbLocal.putItems(ddb, table, items);
      if (c.get("epoch") != null) redis.admin().set(L2Schema.epochKey(table), (String) c.get("epoch"));
      Map<String, Object> fill = map(c.get("fill"));
      Matcher m = Pattern.compile("NOW([+-]\\d+)?").matcher((String) fill.get("fetchedAt"));
      assertTrue(m.matches());
      long fetchedAt = System.currentTimeMillis() + (m.group(1) == null ? 0 : Long.parseLong(m.group(1)));
      List<String> fillIds = new ArrayList<>();
      for (Object o : list(fill.get("ids"))) fillIds.add((String) o);
      redis.admin().set(L2Schema.fillKey(table, "#catalog", "CURRENT"),
          L2Schema.encodeFillValue((String) fill.get("inc"), fetchedAt, L2Schema.toDynamoJson(catalogItem(fillIds))));
      counter.reset();
      try (PromptClient client = PromptClient.builder().tableName(table).dynamoDbClient(ddb).environment(Map.of())
          .l2(redis.reader("reader", RedisServer.READER_PASSWORD)).maxAgeSeconds(60).build()) {
        for (Object r : list(c.get("reads"))) {
          Map<String, Object> read = map(r);
          Object answer;
          try {
            Prompt p = client.getPrompt((String) read.get("id"));
            Map<String, Object> a = new LinkedHashMap<>();
            a.put("version", (double) p.getVersion());
            a.put("inputVariables", new ArrayList<Object>(p.getInputVariables()));
            answer = a;
          } catch (PromptNotFoundException e) {
            answer = "notFound";
          }
          assertEquals(read.get("expect"), answer, String.valueOf(read.get("id")));
        }
        assertEquals(integer(c.get("catalogTableReads")), (int) counter.count("#catalog/CURRENT"));
      }
    });
  }

  /** The catalog item of {@code ids}, sized and built as the sync builds it. */
  static Map<String, Object> catalogItem(List<String> ids) {
    int[] p = Schema.bloomParameters(ids.size());
    Map<String, Object> item = new LinkedHashMap<>();
    item.put("prompt_id", "#catalog");
    item.put("version", "CURRENT");
    item.put("bloom", Schema.bloomBuild(ids, p[0], p[1]));
    item.put("bloom_bits", (double) p[0]);
    item.put("bloom_hashes", (double) p[1]);
    item.put("count", (double) ids.size());
    item.put("revision", 1.0);
    return item;
  }
}
