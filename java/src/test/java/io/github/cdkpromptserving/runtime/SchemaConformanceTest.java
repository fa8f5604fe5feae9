package io.github.cdkpromptserving.runtime;

import static io.github.cdkpromptserving.runtime.Fixtures.idOf;
import static io.github.cdkpromptserving.runtime.Fixtures.integer;
import static io.github.cdkpromptserving.runtime.Fixtures.list;
import static io.github.cdkpromptserving.runtime.Fixtures.load;
import static io.github.cdkpromptserving.runtime.Fixtures.map;
import static io.github.cdkpromptserving.runtime.Fixtures.name;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The conformance fixtures that need no service: ids, checksum, bloom, catalog-integrity, options, render, labels (names
 * and label items), rollout (vectors, arms, share counts, maps), iam-token, surface (fallback, errors, stats, invalid id).
 * The same files the Node (test/conformance/*.test.ts, test/runtime/*-conformance.test.ts) and Python
 * (python/tests/test_conformance.py, test_labels.py, test_render.py) suites run.
 */
class SchemaConformanceTest {

  private static Stream<DynamicTest> each(List<Map<String, Object>> cases, Consumer<Map<String, Object>> body) {
    List<DynamicTest> tests = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      Map<String, Object> c = cases.get(i);
      tests.add(DynamicTest.dynamicTest(name(c, i), () -> body.accept(c)));
    }
    return tests.stream();
  }

  @TestFactory
  Stream<DynamicTest> promptIds() {
    return each(list(load("ids.json"), "cases"), c -> assertEquals(c.get("valid"), Schema.isValidPromptId(idOf(c.get("id")))));
  }

  @TestFactory
  Stream<DynamicTest> checksums() {
    return each(list(load("checksum.json"), "cases"), c -> {
      Map<String, Object> content = map(c.get("content"));
      assertEquals(c.get("canonical"), Json.canonical(Schema.contentOf(content)));
      assertEquals(c.get("checksum"), Schema.checksum(content));
    });
  }

  @TestFactory
  Stream<DynamicTest> bloomParameters() {
    return each(list(load("bloom.json"), "parameters"), c -> {
      int[] p = Schema.bloomParameters(integer(c.get("count")));
      assertEquals(integer(c.get("bits")), p[0]);
      assertEquals(integer(c.get("hashes")), p[1]);
    });
  }

  @TestFactory
  Stream<DynamicTest> bloomIndexes() {
    return each(list(load("bloom.json"), "indexes"), c -> {
      long[] got = Schema.bloomIndexes((String) c.get("id"), integer(c.get("bits")), integer(c.get("hashes")));
      List<Object> want = list(c.get("indexes"));
      long[] expected = new long[want.size()];
      for (int i = 0; i < expected.length; i++) expected[i] = ((Number) want.get(i)).longValue();
      assertArrayEquals(expected, got);
    });
  }

  @TestFactory
  Stream<DynamicTest> bloomFilters() {
    return each(list(load("bloom.json"), "filters"), c -> {
      List<String> ids = new ArrayList<>();
      for (Object o : list(c.get("ids"))) ids.add((String) o);
      int bits = integer(c.get("bits"));
      int hashes = integer(c.get("hashes"));
      assertEquals(c.get("bloom"), Base64.getEncoder().encodeToString(Schema.bloomBuild(ids, bits, hashes)));
      byte[] data = Base64.getDecoder().decode((String) c.get("bloom"));
      for (Map.Entry<String, Object> probe : map(c.get("probes")).entrySet()) {
        assertEquals(probe.getValue(), Schema.bloomMightContain(data, bits, hashes, probe.getKey()), probe.getKey());
      }
    });
  }

  @TestFactory
  Stream<DynamicTest> catalogIntegrity() {
    return each(list(load("catalog-integrity.json"), "cases"), c -> {
      Map<String, Object> f = map(c.get("fields"));
      Object bloom = f.get("bloom");
      if (bloom instanceof String && !Boolean.TRUE.equals(f.get("bloomIsText"))) bloom = Base64.getDecoder().decode((String) bloom);
      String problem = Schema.catalogProblem(bloom, f.get("bits"), f.get("hashes"), f.get("count"), f.get("revision"));
      assertEquals(c.get("valid"), problem == null, problem);
    });
  }

  @TestFactory
  Stream<DynamicTest> options() {
    Map<String, String> resolvedNames = Map.of("maxAgeMs", "maxAgeMs", "maxEntries", "maxEntries");
    return each(list(load("options.json"), "cases"), c -> {
      Map<String, Object> given = map(c.get("options"));
      Map<String, String> env = new HashMap<>();
      for (Map.Entry<String, Object> e : map(c.get("env")).entrySet()) env.put(e.getKey(), (String) e.getValue());
      Map<String, Double> numbers = new HashMap<>();
      for (Map.Entry<String, Object> e : given.entrySet()) if (!e.getKey().equals("tableName")) numbers.put(e.getKey(), ((Number) e.getValue()).doubleValue());
      String table = (String) given.get("tableName");
      if (c.containsKey("error")) {
        PromptServingException e = assertThrows(PromptServingException.class, () -> ResolvedOptions.resolve(table, numbers, env));
        assertEquals(c.get("error"), e.getMessage());
        return;
      }
      ResolvedOptions r = ResolvedOptions.resolve(table, numbers, env);
      Map<String, Object> got = new LinkedHashMap<>();
      got.put("tableName", r.tableName);
      got.put("maxAgeMs", r.maxAgeMs);
      got.put("maxEntries", r.maxEntries);
      got.put("notFoundMaxAgeMs", r.notFoundMaxAgeMs);
      got.put("staleWhileRevalidateMs", r.staleWhileRevalidateMs);
      got.put("staleIfErrorMs", r.staleIfErrorMs);
      got.put("catalogMaxAgeMs", r.catalogMaxAgeMs);
      got.put("requestTimeoutMs", r.requestTimeoutMs);
      got.put("maxAttempts", r.maxAttempts);
      got.put("l2TimeoutMs", r.l2TimeoutMs);
      for (Map.Entry<String, Object> e : map(c.get("expect")).entrySet()) {
        Object want = e.getValue();
        Object have = got.get(e.getKey());
        if (want instanceof Number) assertEquals(((Number) want).doubleValue(), ((Number) have).doubleValue(), e.getKey());
        else assertEquals(want, have, e.getKey());
      }
      assertTrue(resolvedNames.size() > 0);
    });
  }

  private static final Map<String, Object> RENDER_META = Map.of("prompt_id", "render-case", "version", "CURRENT", "version_number", 1.0,
      "checksum", "sha256:" + "0".repeat(64));

  @SuppressWarnings("unchecked")
  private static Object expand(Object value, String long_) {
    if (long_ == null) return value;
    if (value instanceof String) return ((String) value).replace("@REPEAT@", long_);
    if (value instanceof List) {
      List<Object> out = new ArrayList<>();
      for (Object v : (List<Object>) value) out.add(expand(v, long_));
      return out;
    }
    if (value instanceof Map) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<String, Object> e : ((Map<String, Object>) value).entrySet()) out.put(e.getKey(), expand(e.getValue(), long_));
      return out;
    }
    return value;
  }

  @TestFactory
  Stream<DynamicTest> render() {
    return each(list(load("render.json"), "cases"), c -> {
      Map<String, Object> item = new LinkedHashMap<>(map(c.get("content")));
      item.putAll(RENDER_META);
      Prompt prompt = Prompt.fromItem(item, 1, new Provenance("table", false, 0));
      Map<String, Object> repeat = c.get("repeat") == null ? null : map(c.get("repeat"));
      String long_ = repeat == null ? null : ((String) repeat.get("unit")).repeat(integer(repeat.get("times")));
      Map<String, Object> variables = map(expand(c.get("variables"), long_));
      Prompt.RenderOptions options = null;
      if (c.get("options") != null) {
        Map<String, Object> o = map(c.get("options"));
        options = Prompt.RenderOptions.defaults().allowExtra(Boolean.TRUE.equals(o.get("allowExtra")));
        if (o.get("jsonVariables") != null) {
          List<String> names = new ArrayList<>();
          for (Object n : list(o.get("jsonVariables"))) names.add((String) n);
          options.jsonVariables(names);
        }
      }
      Prompt.RenderOptions opts = options;
      if (c.containsKey("error")) {
        Map<String, Object> err = map(c.get("error"));
        PromptRenderException e = assertThrows(PromptRenderException.class, () -> prompt.render(variables, opts));
        assertEquals("render-case", e.getPromptId());
        assertEquals(1, e.getVersion());
        assertEquals(err.get("missing"), e.getMissing());
        assertEquals(err.get("missing"), e.getMissingVariables());
        assertEquals(err.getOrDefault("extra", List.of()), e.getExtra());
        assertEquals(err.getOrDefault("invalid", List.of()), e.getInvalid());
        assertEquals(err.get("message"), e.getMessage());
        return;
      }
      Object out = prompt.render(variables, opts);
      Object plain = out instanceof Prompt.RenderedChat ? chat((Prompt.RenderedChat) out) : out;
      Object expected = expand(c.get("expected"), long_);
      assertEquals(expected, plain);
      if (c.get("expectedJson") != null) assertEquals(c.get("expectedJson"), Json.stringify(plain));
    });
  }

  /** A rendered chat as JSON.stringify shows it (messages, then system, as the Node result object holds them). */
  private static Map<String, Object> chat(Prompt.RenderedChat out) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("messages", out.messages);
    m.put("system", out.system);
    return m;
  }

  @TestFactory
  Stream<DynamicTest> labelNames() {
    return each(list(load("labels.json"), "names"), c -> assertEquals(c.get("problem"), Schema.labelNameProblem(c.get("label"))));
  }

  @TestFactory
  Stream<DynamicTest> labelItems() {
    return each(list(load("labels.json"), "reads"), c -> {
      Map<String, Object> item = map(c.get("item"));
      String label = (String) c.get("label");
      if (c.containsKey("notFound")) {
        assertTrue(Prompt.isDeleted(item));
        return;
      }
      Prompt prompt = LabelItems.promptFromLabelItem(item, label);
      if (item.containsKey("rollout")) {
        Schema.ParsedRollout parsed = Schema.parseRollout(item.get("rollout"));
        if (parsed.spec != null) {
          Rollout rollout = new Rollout(parsed.spec, null, label, prompt);
          if (parsed.spec.percentBp <= 0) assertEquals("A", rollout.arm((String) item.get("prompt_id"), label, null));
          prompt = rollout.armA;
        }
      }
      Map<String, Object> e = map(c.get("expect"));
      assertEquals(e.get("id"), prompt.getId());
      assertEquals(integer(e.get("version")), prompt.getVersion());
      assertEquals(e.get("label"), prompt.getLabel());
      assertEquals(e.get("sourceDeleted"), prompt.isSourceDeleted());
      assertEquals(e.get("rollout"), rolloutMap(prompt.getRollout()));
      if (e.get("checksum") != null) assertEquals(e.get("checksum"), prompt.getChecksum());
      assertEquals(e.get("content"), prompt.getContent());
    });
  }

  static Map<String, Object> rolloutMap(PromptRollout r) {
    if (r == null) return null;
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("label", r.getLabel());
    m.put("rolloutId", r.getRolloutId());
    m.put("arm", r.getArm());
    m.put("percentBp", (double) r.getPercentBp());
    m.put("candidateVersion", (double) r.getCandidateVersion());
    return m;
  }

  @Test
  void rolloutVectorsArmsAndShareCounts() {
    Map<String, Object> f = load("rollout.json");
    assertTrue(list(f, "vectors").size() >= 50);
    for (Map<String, Object> v : list(f, "vectors")) {
      assertEquals(integer(v.get("bucket")), Schema.rolloutBucket((String) v.get("promptId"), (String) v.get("label"), (String) v.get("key")),
          Json.stringify(v));
    }
    for (Map<String, Object> a : list(f, "arms")) {
      int bucket = Schema.rolloutBucket((String) a.get("promptId"), (String) a.get("label"), (String) a.get("key"));
      assertEquals(a.get("arm"), Schema.rolloutArm(bucket, integer(a.get("percentBp"))), Json.stringify(a));
    }
    for (Map<String, Object> c : list(f, "shareCounts")) {
      int onB = 0;
      for (int k = 0; k < 10000; k++) if (Schema.rolloutBucket((String) c.get("promptId"), (String) c.get("label"), "user-" + k) < integer(c.get("percentBp"))) onB++;
      assertEquals(integer(c.get("armB")), onB);
    }
  }

  @TestFactory
  Stream<DynamicTest> rolloutMaps() {
    return each(list(load("rollout.json"), "maps"), c -> {
      Schema.ParsedRollout parsed = Schema.parseRollout(c.get("map"));
      if (c.containsKey("problem")) {
        assertNull(parsed.spec);
        assertEquals(c.get("problem"), parsed.problem);
      } else {
        assertNull(parsed.problem);
        Map<String, Object> spec = map(c.get("spec"));
        assertEquals(spec.get("rolloutId"), parsed.spec.rolloutId);
        assertEquals(integer(spec.get("candidateVersion")), parsed.spec.candidateVersion);
        assertEquals(spec.get("candidateChecksum"), parsed.spec.candidateChecksum);
        assertEquals(integer(spec.get("percentBp")), parsed.spec.percentBp);
      }
    });
  }

  @TestFactory
  Stream<DynamicTest> iamTokens() {
    return each(list(load("iam-token.json"), "cases"), c -> {
      String token = IamAuthToken.create((String) c.get("cacheName"), (String) c.get("userId"), (String) c.get("region"),
          (String) c.get("accessKeyId"), (String) c.get("secretAccessKey"), (String) c.get("sessionToken"),
          "ServerlessCache".equals(c.get("resourceType")), Instant.parse((String) c.get("date")));
      assertEquals(c.get("token"), token);
      assertTrue(token.endsWith("X-Amz-Signature=" + c.get("signature")));
      assertFalse(token.startsWith("http"));
      assertEquals("ServerlessCache".equals(c.get("resourceType")), token.contains("ResourceType=ServerlessCache"));
    });
  }

  @TestFactory
  Stream<DynamicTest> fallbacks() {
    Map<String, Object> surface = map(load("surface.json").get("fallback"));
    return each(list(surface, "cases"), c -> {
      Map<String, Object> f = map(c.get("fallback"));
      PromptFallback fallback = f.get("text") != null ? PromptFallback.text((String) f.get("text"))
          : PromptFallback.chat(f.get("messages") == null ? null : list(f.get("messages")), f.get("system") == null ? null : list(f.get("system")));
      fallback = fallback.withModel((String) f.get("modelId"), f.get("inferenceConfig") == null ? null : map(f.get("inferenceConfig")));
      Prompt p = fallback.toPrompt((String) c.get("promptId"));
      Map<String, Object> e = map(c.get("expect"));
      Map<String, Object> got = new LinkedHashMap<>();
      got.put("id", p.getId());
      got.put("version", (double) p.getVersion());
      got.put("stale", p.isStale());
      got.put("templateType", p.getTemplateType());
      got.put("checksum", p.getChecksum());
      got.put("inputVariables", new ArrayList<Object>(p.getInputVariables()));
      got.put("text", p.getText());
      got.put("messages", p.getMessages());
      got.put("system", p.getSystem());
      got.put("modelId", p.getModelId());
      got.put("inferenceConfig", p.getInferenceConfig());
      for (Map.Entry<String, Object> x : e.entrySet()) assertEquals(x.getValue(), got.get(x.getKey()), x.getKey());
      assertEquals("fallback", p.getProvenance().getSource());
    });
  }

  @Test
  void surfaceErrorsStatsAndTheInvalidIdReason() {
    Map<String, Object> surface = load("surface.json");
    Map<String, Object> errors = map(surface.get("errors"));
    assertEquals("PromptServingError", errors.get("base"));
    assertTrue(RuntimeException.class.isAssignableFrom(PromptServingException.class));
    for (Object name : list(errors.get("subclasses"))) {
      String javaName = ((String) name).replace("Error", "Exception");
      try {
        Class<?> k = Class.forName("io.github.cdkpromptserving.runtime." + javaName);
        assertTrue(PromptServingException.class.isAssignableFrom(k), javaName);
      } catch (ClassNotFoundException e) {
        throw new AssertionError("no " + javaName, e);
      }
    }
    List<String> fields = new ArrayList<>();
    for (java.lang.reflect.Field f : PromptClientStats.class.getFields()) fields.add(f.getName());
    assertEquals(map(surface.get("stats")).get("fields"), fields);
    try (PromptClient client = PromptClient.builder().tableName("surface").withoutL2().environment(Map.of())
        .dynamoDbClient(DynamoDbLocal.unusedClient()).build()) {
      PromptNotFoundException e = assertThrows(PromptNotFoundException.class, () -> client.getPrompt("#reserved"));
      assertEquals("prompt '#reserved' not found: " + surface.get("invalidIdReason"), e.getMessage());
      assertEquals(fields, new ArrayList<>(client.stats().toMap().keySet()));
    }
    List<String> readInfo = new ArrayList<>();
    for (java.lang.reflect.Field f : ReadInfo.class.getFields()) readInfo.add(f.getName());
    assertEquals(map(surface.get("readInfo")).get("fields"), readInfo);
    List<String> rolloutFields = new ArrayList<>();
    for (Object o : list(map(surface.get("labels")).get("rolloutFields"))) rolloutFields.add((String) o);
    List<String> getters = new ArrayList<>();
    for (String f : rolloutFields) getters.add("get" + Character.toUpperCase(f.charAt(0)) + f.substring(1));
    for (String g : getters) {
      try {
        PromptRollout.class.getMethod(g);
      } catch (NoSuchMethodException e) {
        throw new AssertionError(g, e);
      }
    }
  }
}
