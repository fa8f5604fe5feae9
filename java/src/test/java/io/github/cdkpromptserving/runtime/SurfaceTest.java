package io.github.cdkpromptserving.runtime;

import static io.github.cdkpromptserving.runtime.Fixtures.list;
import static io.github.cdkpromptserving.runtime.Fixtures.load;
import static io.github.cdkpromptserving.runtime.Fixtures.map;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * surface.json in Java's spelling: the client's public methods, the builder's options, and a Java counterpart for every
 * name both other clients export (a type, a constant or a static method; see {@link #JAVA}).
 */
class SurfaceTest {
  static final Map<String, Object> SURFACE = load("surface.json");

  /** Where each shared export lives in Java: {@code Class}, {@code Class#member} or {@code Class.Nested}. */
  static final Map<String, String> JAVA = Map.ofEntries(
      Map.entry("PromptClient", "PromptClient"), Map.entry("PromptFallback", "PromptFallback"), Map.entry("Prompt", "Prompt"),
      Map.entry("PromptRollout", "PromptRollout"), Map.entry("PromptCacheL2", "PromptCacheL2"),
      Map.entry("PromptClientStats", "PromptClientStats"), Map.entry("Defaults", "ResolvedOptions#DEFAULTS"),
      Map.entry("EnvVars", "ResolvedOptions#ENV_VARS"), Map.entry("MAX_TIMER_MS", "ResolvedOptions#MAX_TIMER_MS"),
      Map.entry("l2Key", "L2Schema#itemKey"), Map.entry("PromptServingError", "PromptServingException"),
      Map.entry("PromptNotFoundError", "PromptNotFoundException"), Map.entry("PromptRenderError", "PromptRenderException"),
      Map.entry("PromptStoreError", "PromptStoreException"), Map.entry("Provenance", "Provenance"), Map.entry("ReadInfo", "ReadInfo"),
      Map.entry("ReadSource", "Provenance#getSource"), Map.entry("OnRead", "OnRead"), Map.entry("EmfReadMetrics", "ReadHooks$EmfReadMetrics"),
      Map.entry("logReads", "ReadHooks#logReads"), Map.entry("emfReadMetrics", "ReadHooks#emfReadMetrics"),
      Map.entry("otelReadAttributes", "ReadHooks#otelReadAttributes"), Map.entry("combineReadHooks", "ReadHooks#combineReadHooks"));

  @Test
  void everySharedExportHasAJavaCounterpart() throws Exception {
    Set<String> expected = new TreeSet<>();
    for (Object o : list(map(SURFACE.get("exports")).get("both"))) expected.add((String) map(o).get("node"));
    assertEquals(expected, new TreeSet<>(JAVA.keySet()));
    for (String where : JAVA.values()) {
      String[] parts = where.split("#");
      Class<?> k = Class.forName("io.github.cdkpromptserving.runtime." + parts[0]);
      assertTrue(Modifier.isPublic(k.getModifiers()), where);
      if (parts.length == 2) {
        boolean found = false;
        for (Method m : k.getMethods()) found |= m.getName().equals(parts[1]);
        for (java.lang.reflect.Field f : k.getFields()) found |= f.getName().equals(parts[1]);
        assertTrue(found, where);
      }
    }
  }

  @Test
  void theClientHasTheListedMethodsAndTheBuilderTheListedOptions() {
    Set<String> methods = new TreeSet<>();
    for (Method m : PromptClient.class.getDeclaredMethods()) if (Modifier.isPublic(m.getModifiers()) && !Modifier.isStatic(m.getModifiers())) methods.add(m.getName());
    for (Object o : list(SURFACE.get("methods"))) assertTrue(methods.contains((String) map(o).get("name")), String.valueOf(map(o).get("name")));
    // Java-only public methods, each with its reason: the builder's `options()` view, `invalidateAll`, `registerSnapStart`
    Set<String> javaOnly = new TreeSet<>(methods);
    for (Object o : list(SURFACE.get("methods"))) javaOnly.remove((String) map(o).get("name"));
    assertEquals(Set.of("options", "invalidateAll", "registerSnapStart"), javaOnly);
    Set<String> builder = new TreeSet<>();
    for (Method m : PromptClient.Builder.class.getDeclaredMethods()) if (Modifier.isPublic(m.getModifiers())) builder.add(m.getName());
    List<String> missing = new ArrayList<>();
    for (Object o : list(map(SURFACE.get("clientOptions")).get("options"))) {
      String name = ((String) o).replace("dynamoDBClient", "dynamoDbClient"); // the AWS SDK for Java's spelling
      if (!builder.contains(name)) missing.add(name);
    }
    assertEquals(List.of(), missing);
    assertTrue(builder.containsAll(Set.of("clock", "environment", "withoutL2", "build")));
  }
}
