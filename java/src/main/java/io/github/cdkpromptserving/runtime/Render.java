package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;

/**
 * The strict render of {@link Prompt} (src/runtime/render.ts: the same rule, the same vectors): every placeholder needs
 * a string, number or boolean value (any JSON value for a {@code json_variables} name), a variable the prompt neither
 * uses nor declares is refused unless {@code allowExtra}, and every {@code {{name}}} is filled in one pass.
 */
final class Render {
  private Render() {}

  /** What a template takes: placeholders in order of first use, accepted names, names that take JSON. */
  static final class Plan {
    final List<String> placeholders;
    final Set<String> accepted;
    final Set<String> json;

    Plan(List<String> placeholders, Set<String> accepted, Set<String> json) {
      this.placeholders = placeholders;
      this.accepted = accepted;
      this.json = json;
    }
  }

  /** The plan of a prompt's templates, worked out once per stored item (kept in its {@link Prompt.Content}). */
  @SuppressWarnings("unchecked")
  static Plan plan(Prompt.Content data, List<String> inputVariables) {
    Plan plan = data.plan;
    if (plan == null) {
      Set<String> seen = new LinkedHashSet<>();
      List<String> templates = new ArrayList<>();
      if ("TEXT".equals(data.templateType)) templates.add(data.text);
      else strings(List.of(data.system, data.messages), templates);
      for (String t : templates) seen.addAll(Schema.templateVariables(t));
      Set<String> accepted = new HashSet<>(seen);
      accepted.addAll(inputVariables);
      Set<String> json = new HashSet<>();
      Object names = data.content.get("json_variables");
      if (names instanceof List) for (Object n : (List<Object>) names) if (n instanceof String) json.add((String) n);
      plan = new Plan(new ArrayList<>(seen), accepted, json);
      data.plan = plan;
    }
    return plan;
  }

  @SuppressWarnings("unchecked")
  private static void strings(Object value, List<String> into) {
    if (value instanceof String) into.add((String) value);
    else if (value instanceof List) for (Object v : (List<Object>) value) strings(v, into);
    else if (value instanceof Map) for (Object v : ((Map<String, Object>) value).values()) strings(v, into);
  }

  /** Each placeholder's text; throws {@link PromptRenderException} listing every missing, unexpected and invalid variable. */
  static Map<String, String> resolve(Plan plan, Map<String, ?> variables, Prompt.RenderOptions options, String id, int version) {
    Map<String, String> texts = new LinkedHashMap<>();
    List<String> missing = new ArrayList<>();
    List<String> invalid = new ArrayList<>();
    for (String name : plan.placeholders) {
      Object value = variables.get(name);
      if (value == null) {
        missing.add(name);
        continue;
      }
      boolean json = plan.json.contains(name) || (options != null && options.jsonVariables.contains(name));
      String text = valueText(value, json);
      if (text == null) invalid.add(name);
      else texts.put(name, text);
    }
    List<String> extra = new ArrayList<>();
    if (options == null || !options.allowExtra) {
      for (Map.Entry<String, ?> e : variables.entrySet()) {
        if (e.getValue() != null && !plan.accepted.contains(e.getKey())) extra.add(e.getKey());
      }
      Collections.sort(extra);
    }
    if (!missing.isEmpty() || !extra.isEmpty() || !invalid.isEmpty()) throw new PromptRenderException(id, version, missing, extra, invalid);
    return texts;
  }

  private static String valueText(Object value, boolean json) {
    if (value instanceof String) return (String) value;
    if (value instanceof Boolean) return ((Boolean) value) ? "true" : "false";
    if (value instanceof Number) {
      double d = ((Number) value).doubleValue();
      return Double.isFinite(d) ? Json.numberToString(d) : null;
    }
    if (!json || !isJson(value, 0)) return null;
    return Json.canonical(value);
  }

  @SuppressWarnings("unchecked")
  private static boolean isJson(Object value, int depth) {
    if (depth > 64) return false;
    if (value == null || value instanceof String || value instanceof Boolean) return true;
    if (value instanceof Number) return Double.isFinite(((Number) value).doubleValue());
    if (value instanceof List) {
      for (Object v : (List<Object>) value) if (!isJson(v, depth + 1)) return false;
      return true;
    }
    if (value instanceof Map) {
      for (Map.Entry<Object, Object> e : ((Map<Object, Object>) value).entrySet()) {
        if (!(e.getKey() instanceof String) || !isJson(e.getValue(), depth + 1)) return false;
      }
      return true;
    }
    return false;
  }

  static String fill(String template, Map<String, String> texts) {
    Matcher m = Schema.TEMPLATE_VARIABLE.matcher(template);
    StringBuilder sb = new StringBuilder(template.length());
    int last = 0;
    while (m.find()) {
      sb.append(template, last, m.start());
      String text = texts.get(m.group(1));
      sb.append(text != null ? text : m.group());
      last = m.end();
    }
    return sb.append(template, last, template.length()).toString();
  }

  @SuppressWarnings("unchecked")
  static Object fillJson(Object value, Map<String, String> texts) {
    if (value instanceof String) return fill((String) value, texts);
    if (value instanceof List) {
      List<Object> out = new ArrayList<>();
      for (Object v : (List<Object>) value) out.add(fillJson(v, texts));
      return out;
    }
    if (value instanceof Map) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<String, Object> e : ((Map<String, Object>) value).entrySet()) out.put(e.getKey(), fillJson(e.getValue(), texts));
      return out;
    }
    return value;
  }
}
