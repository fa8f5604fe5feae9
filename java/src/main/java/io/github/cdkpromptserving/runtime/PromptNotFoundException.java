package io.github.cdkpromptserving.runtime;

/** The prompt (or version, or label) does not exist, was deleted, or its id or label name can never be valid. */
public class PromptNotFoundException extends PromptServingException {
  private static final long serialVersionUID = 1L;
  private final String promptId;
  private final Integer version;

  public PromptNotFoundException(String promptId, Integer version, String reason) {
    super((version == null ? "prompt '" + promptId + "'" : "version " + version + " of prompt '" + promptId + "'")
        + " not found" + (reason == null || reason.isEmpty() ? "" : ": " + reason));
    this.promptId = promptId;
    this.version = version;
  }

  public String getPromptId() {
    return promptId;
  }

  /** The version asked for, or null for CURRENT (and labels). */
  public Integer getVersion() {
    return version;
  }
}
