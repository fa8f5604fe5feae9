package io.github.cdkpromptserving.runtime;

import static io.github.cdkpromptserving.runtime.Fixtures.list;
import static io.github.cdkpromptserving.runtime.Fixtures.load;
import static io.github.cdkpromptserving.runtime.Fixtures.map;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** provenance.json's logLine, logLineLabeled, emf and otel vectors against the Java hooks. */
class ReadHooksConformanceTest {
  static final Map<String, Object> FIXTURE = load("provenance.json");

  static ReadInfo info(Map<String, Object> i) {
    return new ReadInfo((String) i.get("tableName"), (String) i.get("promptId"), ((Number) i.get("version")).intValue(),
        i.get("requestedVersion") == null ? null : ((Number) i.get("requestedVersion")).intValue(), (String) i.get("checksum"),
        (String) i.get("source"), (Boolean) i.get("stale"), ((Number) i.get("ageSeconds")).doubleValue(), (String) i.get("label"),
        (String) i.get("rolloutId"), (String) i.get("arm"));
  }

  @Test
  void logLines() {
    for (String k : List.of("logLine", "logLineLabeled")) {
      Map<String, Object> c = map(FIXTURE.get(k));
      List<String> lines = new ArrayList<>();
      ReadHooks.logReads(lines::add, "INFO").onRead(info(map(c.get("info"))), null);
      assertEquals(c.get("expected"), Json.parse(lines.get(0)), k);
    }
  }

  @Test
  void otelAttributes() {
    for (Object o : list(FIXTURE.get("otel"))) {
      Map<String, Object> c = map(o);
      Map<String, Object> got = new LinkedHashMap<>();
      ReadHooks.otelReadAttributes(a -> a.forEach((key, v) -> got.put(key, v instanceof Number ? ((Number) v).doubleValue() : v)))
          .onRead(info(map(c.get("info"))), null);
      assertEquals(c.get("expected"), got);
    }
  }

  @Test
  void emfLine() {
    Map<String, Object> c = map(FIXTURE.get("emf"));
    List<String> lines = new ArrayList<>();
    ReadHooks.EmfReadMetrics emf = ReadHooks.emfReadMetrics(3600, (String) c.get("tableName"), null, lines::add);
    for (Object r : list(c.get("reads"))) {
      Map<String, Object> read = map(r);
      emf.onRead.onRead(new ReadInfo("x", "greeting", 1, null, "sha256:0", (String) read.get("source"), (Boolean) read.get("stale"), 0, null,
          null, null), null);
    }
    emf.flush();
    Map<String, Object> got = map(Json.parse(String.join("", lines)));
    map(got.get("_aws")).remove("Timestamp");
    assertEquals(c.get("expected"), got);
  }
}
