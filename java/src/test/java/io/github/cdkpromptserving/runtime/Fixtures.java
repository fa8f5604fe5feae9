package io.github.cdkpromptserving.runtime;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;

/** The shared conformance fixtures (test/conformance/fixtures at the repository root), parsed as JavaScript parses them. */
final class Fixtures {
  private Fixtures() {}

  static final Path REPO = Paths.get(System.getProperty("repo.root", "..")).toAbsolutePath().normalize();
  static final Path DIR = REPO.resolve("test/conformance/fixtures");

  @SuppressWarnings("unchecked")
  static Map<String, Object> load(String name) {
    try {
      return (Map<String, Object>) Json.parse(new String(Files.readAllBytes(DIR.resolve(name)), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> list(Map<String, Object> fixture, String key) {
    return (List<Map<String, Object>>) fixture.get(key);
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> map(Object o) {
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  static List<Object> list(Object o) {
    return (List<Object>) o;
  }

  static int integer(Object o) {
    return ((Number) o).intValue();
  }

  /** {@code {repeat, times}} as the repeated string; anything else as is. */
  static Object idOf(Object spec) {
    if (spec instanceof Map && map(spec).containsKey("repeat")) return ((String) map(spec).get("repeat")).repeat(integer(map(spec).get("times")));
    return spec;
  }

  static String name(Map<String, Object> c, int i) {
    Object n = c.get("name");
    String s = n == null ? String.valueOf(i) : String.valueOf(n);
    return s.length() > 120 ? s.substring(0, 120) : s;
  }

  /** A case's note for Java, when the fixture says it cannot apply here (and why). */
  static String javaNote(Map<String, Object> c) {
    Object n = c.get("java");
    return n instanceof String ? (String) n : null;
  }
}
