package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

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
    /** Worked out on the first render (see {@link Render#plan}). */
    volatile Render.Plan plan;

    Content(Map<String, Object> content, String templateType, String text, List<Object> messages, List<Object> system) {
      this.content = content;
      this.templateType = templateType;
      this.text = text;
      this.messages = messages;
      this.system = system;
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

  // -- strict render (the rule is in Render, as src/runtime/render.ts) --------------------------------------------

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
    Map<String, String> texts = Render.resolve(Render.plan(data, inputVariables), variables == null ? Map.of() : variables, options, id, version);
    return Render.fill(data.text, texts);
  }

  /** Fills every string of {@code system} and {@code messages}; blocks without a variable come out unchanged. */
  public RenderedChat renderChat(Map<String, ?> variables, RenderOptions options) {
    if (!"CHAT".equals(data.templateType)) throw new PromptServingException("renderChat on a TEXT prompt: use renderText");
    Map<String, String> texts = Render.resolve(Render.plan(data, inputVariables), variables == null ? Map.of() : variables, options, id, version);
    List<Object> messages = new ArrayList<>();
    for (Object m : data.messages) messages.add(Render.fillJson(m, texts));
    List<Object> system = new ArrayList<>();
    for (Object b : data.system) system.add(Render.fillJson(b, texts));
    return new RenderedChat(messages, system);
  }

  @Override
  public String toString() {
    return "Prompt{id=" + id + ", version=" + version + ", checksum=" + checksum + ", templateType=" + data.templateType
        + (label == null ? "" : ", label=" + label) + ", provenance=" + provenance + "}";
  }
}
