package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The prompt served (version 0, flagged stale) only when nothing can be read: never for a prompt that does not exist.
 * Either {@code text} (TEXT) or {@code messages}/{@code system} (CHAT).
 */
public final class PromptFallback {
  private final String text;
  private final List<Object> messages;
  private final List<Object> system;
  private final String modelId;
  private final Map<String, Object> inferenceConfig;

  private PromptFallback(String text, List<Object> messages, List<Object> system, String modelId, Map<String, Object> inferenceConfig) {
    this.text = text;
    this.messages = messages;
    this.system = system;
    this.modelId = modelId;
    this.inferenceConfig = inferenceConfig;
  }

  public static PromptFallback text(String text) {
    return new PromptFallback(text, null, null, null, null);
  }

  public static PromptFallback chat(List<Object> messages, List<Object> system) {
    return new PromptFallback(null, messages, system, null, null);
  }

  /** The same fallback with a model id and inference settings. */
  public PromptFallback withModel(String modelId, Map<String, Object> inferenceConfig) {
    return new PromptFallback(text, messages, system, modelId, inferenceConfig);
  }

  public String getText() {
    return text;
  }

  public List<Object> getMessages() {
    return messages;
  }

  public List<Object> getSystem() {
    return system;
  }

  public String getModelId() {
    return modelId;
  }

  public Map<String, Object> getInferenceConfig() {
    return inferenceConfig;
  }

  /** What a read of {@code target} serves instead of failing when the table cannot be read (a label read: as that label). */
  Prompt servedFor(ReadTarget target, java.util.function.LongSupplier clock) {
    Prompt fallback = toPrompt(target.promptId, clock);
    return target.kind == ReadTarget.Kind.LABEL ? fallback.forLabel(target.label, null, false) : fallback;
  }

  /** The prompt this fallback is served as for {@code promptId}. */
  Prompt toPrompt(String promptId) {
    return toPrompt(promptId, System::currentTimeMillis);
  }

  Prompt toPrompt(String promptId, java.util.function.LongSupplier clock) {
    boolean isText = text != null;
    List<Object> sys = system == null ? new ArrayList<>() : new ArrayList<>(system);
    List<Object> msgs = messages == null ? new ArrayList<>() : new ArrayList<>(messages);
    String templates = isText ? text : Json.stringify(List.of(sys, msgs));
    Map<String, Object> content = new LinkedHashMap<>();
    content.put("template_type", isText ? "TEXT" : "CHAT");
    if (isText) {
      content.put("text", text);
    } else {
      content.put("messages", msgs);
      content.put("system", sys);
    }
    content.put("input_variables", new ArrayList<Object>(Schema.templateVariables(templates)));
    if (modelId != null) content.put("model_id", modelId);
    if (inferenceConfig != null) content.put("inference_config", new LinkedHashMap<>(inferenceConfig));
    Map<String, Object> item = new LinkedHashMap<>(content);
    item.put("prompt_id", promptId);
    item.put("version", Schema.CURRENT);
    item.put("version_number", 0.0);
    item.put("checksum", Schema.checksum(content));
    return Prompt.fromItem(item, 0, new Provenance("fallback", true, clock.getAsLong(), clock));
  }
}
