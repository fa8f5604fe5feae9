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
 * A served prompt: immutable, shared by every caller. Copies of one read (as loaded, as a hit serves it, stale) share
 * the content and differ only in {@link #getProvenance()}.
 */
public final class Prompt {
  /** What every copy of one stored item shares: its content and the render plan worked out once. */
  static final class Content {
    final Map<String, Object> content;
    final String templateType;
    final String text;
    final List<Object> messages;
    final List<Object> system;
    private volatile Plan plan;

    Content(Map<String, Object> content, String templateType, String text, List<Object> messages, List<Object> system) {
      this.content = content;
      this.templateType = templateType;
      this.text = text;
      this.messages = messages;
      this.system = system;
    }
  }

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

  private final Content data;
  private final String id;
  private final int version;
  private final String checksum;
  private final List<String> inputVariables;
  private final String modelId;
  private final Map<String, Object> inferenceConfig;
  private final String label;
  private final PromptRollout rollout;
  private final boolean sourceDeleted;
  private final Provenance provenance;

  private Prompt(Content data, String id, int version, String checksum, List<String> inputVariables, String modelId,
      Map<String, Object> inferenceConfig, String label, PromptRollout rollout, boolean sourceDeleted, Provenance provenance) {
    this.data = data;
    this.id = id;
    this.version = version;
    this.checksum = checksum;
    this.inputVariables = inputVariables;
    this.modelId = modelId;
    this.inferenceConfig = inferenceConfig;
    this.label = label;
    this.rollout = rollout;
    this.sourceDeleted = sourceDeleted;
    this.provenance = provenance;
  }

  /** Whether a stored item is a tombstone ({@code status = DELETED}). */
  static boolean isDeleted(Map<String, Object> item) {
    return "DELETED".equals(item.get("status"));
  }

  /** The prompt of a pointer or version item; {@link PromptStoreException} when the item breaks the contract. */
  @SuppressWarnings("unchecked")
  static Prompt fromItem(Map<String, Object> item, int minVersion, Provenance provenance) {
    String id = String.valueOf(item.get("prompt_id"));
    String where = "item " + id + "/" + item.get("version") + " breaks the wire contract: ";
    Map<String, Object> content = (Map<String, Object>) freeze(Schema.contentOf(item));
    Object templateType = content.get("template_type");
    Object number = item.get("version_number");
    int version;
    if (number != null || item.containsKey("version_number")) {
      if (!Schema.isWhole(number) || ((Number) number).doubleValue() < minVersion || ((Number) number).doubleValue() > Schema.MAX_VERSION_NUMBER) {
        throw new PromptStoreException(where + "version_number " + Json.stringify(number) + " is not a whole number from " + minVersion
            + " to " + Schema.MAX_VERSION_NUMBER);
      }
      version = ((Number) number).intValue();
    } else {
      version = Schema.parseVersionKey(String.valueOf(item.get("version")));
      if (version < 0) throw new PromptStoreException(where + "no version_number");
    }
    Object checksum = item.get("checksum");
    if (!(checksum instanceof String)) throw new PromptStoreException(where + "no checksum");
    List<String> declared = new ArrayList<>();
    if (content.get("input_variables") instanceof List) {
      for (Object v : (List<Object>) content.get("input_variables")) if (v instanceof String) declared.add((String) v);
    }
    Object modelId = content.get("model_id");
    Object inference = content.get("inference_config");
    Content data;
    if ("TEXT".equals(templateType)) {
      if (!(content.get("text") instanceof String)) throw new PromptStoreException(where + "TEXT prompt without text");
      data = new Content(content, "TEXT", (String) content.get("text"), null, null);
    } else if ("CHAT".equals(templateType)) {
      if (!(content.get("messages") instanceof List)) throw new PromptStoreException(where + "CHAT prompt without messages");
      List<Object> system = content.get("system") instanceof List ? (List<Object>) content.get("system") : List.of();
      data = new Content(content, "CHAT", null, (List<Object>) content.get("messages"), system);
    } else {
      throw new PromptStoreException(where + "unknown template_type " + (templateType == null && !content.containsKey("template_type")
          ? "undefined" : Json.stringify(templateType)));
    }
    return new Prompt(data, id, version, (String) checksum, Collections.unmodifiableList(declared),
        modelId instanceof String ? (String) modelId : null,
        inference instanceof Map ? (Map<String, Object>) inference : null, null, null, false, provenance);
  }

  /** The same prompt as served for a label. */
  Prompt forLabel(String label, PromptRollout rollout, boolean sourceDeleted) {
    return new Prompt(data, id, version, checksum, inputVariables, modelId, inferenceConfig, label, rollout, sourceDeleted, provenance);
  }

  /** The same prompt with another provenance (same read time). */
  Prompt served(String source, boolean stale) {
    return new Prompt(data, id, version, checksum, inputVariables, modelId, inferenceConfig, label, rollout, sourceDeleted,
        provenance.with(source, stale));
  }

  @SuppressWarnings("unchecked")
  private static Object freeze(Object value) {
    if (value instanceof Map) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<String, Object> e : ((Map<String, Object>) value).entrySet()) out.put(e.getKey(), freeze(e.getValue()));
      return Collections.unmodifiableMap(out);
    }
    if (value instanceof List) {
      List<Object> out = new ArrayList<>();
      for (Object v : (List<Object>) value) out.add(freeze(v));
      return Collections.unmodifiableList(out);
    }
    return value;
  }

  public String getId() {
    return id;
  }

  public int getVersion() {
    return version;
  }

  public String getChecksum() {
    return checksum;
  }

  /** {@code TEXT} or {@code CHAT}. */
  public String getTemplateType() {
    return data.templateType;
  }

  /** The template of a TEXT prompt (null for CHAT). */
  public String getText() {
    return data.text;
  }

  /** The message templates of a CHAT prompt (null for TEXT). */
  public List<Object> getMessages() {
    return data.messages;
  }

  /** The system blocks of a CHAT prompt (empty if none; null for TEXT). */
  public List<Object> getSystem() {
    return data.system;
  }

  public List<String> getInputVariables() {
    return inputVariables;
  }

  public String getModelId() {
    return modelId;
  }

  public Map<String, Object> getInferenceConfig() {
    return inferenceConfig;
  }

  /** The whole stored content, including fields this client does not interpret (unmodifiable). */
  public Map<String, Object> getContent() {
    return data.content;
  }

  public boolean isStale() {
    return provenance.isStale();
  }

  public String getLabel() {
    return label;
  }

  public PromptRollout getRollout() {
    return rollout;
  }

  public boolean isSourceDeleted() {
    return sourceDeleted;
  }

  public Provenance getProvenance() {
    return provenance;
  }

  // -- strict render (src/runtime/render.ts: the same rule, the same vectors) --------------------------------------

  /** A CHAT prompt rendered: the same shapes as stored (Bedrock Converse {@code messages} and {@code system}). */
  public static final class RenderedChat {
    public final List<Object> messages;
    public final List<Object> system;

    RenderedChat(List<Object> messages, List<Object> system) {
      this.messages = messages;
      this.system = system;
    }
  }

  /** Options of one render call. */
  public static final class RenderOptions {
    boolean allowExtra;
    Set<String> jsonVariables = Set.of();

    public static RenderOptions defaults() {
      return new RenderOptions();
    }

    /** Ignore variables the prompt neither uses nor declares instead of throwing. */
    public RenderOptions allowExtra(boolean allow) {
      this.allowExtra = allow;
      return this;
    }

    /** Names that take any JSON value, besides the prompt's own {@code json_variables}. */
    public RenderOptions jsonVariables(java.util.Collection<String> names) {
      this.jsonVariables = Set.copyOf(names);
      return this;
    }
  }

  /** TEXT: the filled string; CHAT: a {@link RenderedChat}. Strict (see {@link #renderText}). */
  public Object render(Map<String, ?> variables, RenderOptions options) {
    return "TEXT".equals(data.templateType) ? renderText(variables, options) : renderChat(variables, options);
  }

  public Object render(Map<String, ?> variables) {
    return render(variables, null);
  }

  /**
   * Fills every {@code {{name}}} of a TEXT prompt in one pass. Every placeholder needs a string, number or boolean value;
   * a variable the prompt neither uses nor declares is refused unless {@code allowExtra}.
   * @throws PromptRenderException listing every missing, unexpected and invalid variable
   */
  public String renderText(Map<String, ?> variables, RenderOptions options) {
    if (!"TEXT".equals(data.templateType)) throw new PromptServingException("renderText on a CHAT prompt: use renderChat");
    Map<String, String> texts = resolve(plan(), variables == null ? Map.of() : variables, options);
    return fill(data.text, texts);
  }

  /** Fills every string of {@code system} and {@code messages}; blocks without a variable come out unchanged. */
  public RenderedChat renderChat(Map<String, ?> variables, RenderOptions options) {
    if (!"CHAT".equals(data.templateType)) throw new PromptServingException("renderChat on a TEXT prompt: use renderText");
    Map<String, String> texts = resolve(plan(), variables == null ? Map.of() : variables, options);
    List<Object> messages = new ArrayList<>();
    for (Object m : data.messages) messages.add(fillJson(m, texts));
    List<Object> system = new ArrayList<>();
    for (Object b : data.system) system.add(fillJson(b, texts));
    return new RenderedChat(messages, system);
  }

  @SuppressWarnings("unchecked")
  private Plan plan() {
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

  private Map<String, String> resolve(Plan plan, Map<String, ?> variables, RenderOptions options) {
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

  private static String fill(String template, Map<String, String> texts) {
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
  private static Object fillJson(Object value, Map<String, String> texts) {
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

  @Override
  public String toString() {
    return "Prompt{id=" + id + ", version=" + version + ", checksum=" + checksum + ", templateType=" + data.templateType
        + (label == null ? "" : ", label=" + label) + ", provenance=" + provenance + "}";
  }
}
