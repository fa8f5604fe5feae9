package io.github.cdkpromptserving.runtime;

import static io.github.cdkpromptserving.runtime.Fixtures.idOf;
import static io.github.cdkpromptserving.runtime.Fixtures.integer;
import static io.github.cdkpromptserving.runtime.Fixtures.list;
import static io.github.cdkpromptserving.runtime.Fixtures.load;
import static io.github.cdkpromptserving.runtime.Fixtures.map;
import static io.github.cdkpromptserving.runtime.Fixtures.name;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/** items.json read through the real client from DynamoDB Local (as python/tests/test_conformance.py does). */
class ItemsConformanceTest {
  static DynamoDbLocal.Counter counter = new DynamoDbLocal.Counter();
  static DynamoDbClient ddb;
  static String table;
  static final List<Map<String, Object>> CASES = list(load("items.json"), "cases");

  @BeforeAll
  static void putItems() {
    ddb = DynamoDbLocal.client(counter);
    table = DynamoDbLocal.createTable(ddb);
    for (Map<String, Object> c : CASES) {
      List<Map<String, Object>> items = new ArrayList<>();
      for (Object o : list(c.get("items"))) items.add(map(o));
      DynamoDbLocal.putItems(ddb, table, items);
    }
  }

  private static PromptClient client() {
    return PromptClient.builder().tableName(table).dynamoDbClient(ddb).withoutL2().environment(Map.of()).build();
  }

  @TestFactory
  Stream<DynamicTest> itemsReadThroughTheRealClient() {
    List<DynamicTest> tests = new ArrayList<>();
    for (int i = 0; i < CASES.size(); i++) {
      Map<String, Object> c = CASES.get(i);
      tests.add(DynamicTest.dynamicTest(name(c, i), () -> {
        PromptClient client = client();
        Map<String, Object> get = map(c.get("get"));
        String id = (String) get.get("id");
        GetOptions options = get.get("version") == null ? GetOptions.defaults() : GetOptions.ofVersion(integer(get.get("version")));
        if (Boolean.TRUE.equals(c.get("notFound"))) {
          assertThrows(PromptNotFoundException.class, () -> client.getPrompt(id, options));
          return;
        }
        if (c.containsKey("storeError")) {
          PromptStoreException e = assertThrows(PromptStoreException.class, () -> client.getPrompt(id, options));
          assertTrue(e.getMessage().contains((String) c.get("storeError")), e.getMessage());
          return;
        }
        Prompt p = client.getPrompt(id, options);
        Map<String, Object> e = map(c.get("expect"));
        assertEquals(e.get("id"), p.getId());
        assertEquals(integer(e.get("version")), p.getVersion());
        assertEquals(e.get("checksum"), p.getChecksum());
        assertEquals(e.get("templateType"), p.getTemplateType());
        assertEquals(e.get("inputVariables"), new ArrayList<Object>(p.getInputVariables()));
        Map<String, Object> got = new LinkedHashMap<>();
        got.put("text", p.getText());
        got.put("messages", p.getMessages());
        got.put("system", p.getSystem());
        got.put("modelId", p.getModelId());
        got.put("inferenceConfig", p.getInferenceConfig());
        got.put("content", p.getContent());
        for (String field : got.keySet()) if (e.containsKey(field)) assertEquals(e.get(field), got.get(field), field);
        assertEquals("table", p.getProvenance().getSource());
      }));
    }
    return tests.stream();
  }

  @Test
  void invalidIdsAreNotFoundWithoutARemoteCall() {
    PromptClient client = client();
    counter.reset();
    for (Map<String, Object> c : list(load("ids.json"), "cases")) {
      if (Boolean.TRUE.equals(c.get("valid"))) continue;
      Object id = idOf(c.get("id"));
      if (id != null && !(id instanceof String)) {
        assertTrue(Fixtures.javaNote(c).startsWith("not applicable"), c.get("name") + " needs a note for Java");
        continue;
      }
      assertThrows(PromptNotFoundException.class, () -> client.getPrompt((String) id));
    }
    assertEquals(0, counter.keys.size());
  }
}
