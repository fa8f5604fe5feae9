package io.github.cdkpromptserving.runtime;

/**
 * Options of one {@code getPrompt} call: an exact {@code version} or a {@code label} (not both), the {@code stickinessKey}
 * that picks a rollout's arm, and a {@code fallback}. Immutable: each method returns a new value.
 */
public final class GetOptions {
  static final GetOptions NONE = new GetOptions(null, null, null, null);

  final Integer version;
  final String label;
  final String stickinessKey;
  final PromptFallback fallback;

  private GetOptions(Integer version, String label, String stickinessKey, PromptFallback fallback) {
    this.version = version;
    this.label = label;
    this.stickinessKey = stickinessKey;
    this.fallback = fallback;
  }

  public static GetOptions defaults() {
    return NONE;
  }

  /** An exact version (immutable: once read, kept in memory until the size bound evicts it). */
  public static GetOptions ofVersion(int version) {
    return NONE.version(version);
  }

  /** A label ({@code production}, …) instead of CURRENT. */
  public static GetOptions ofLabel(String label) {
    return NONE.label(label);
  }

  public GetOptions version(Integer version) {
    return new GetOptions(version, label, stickinessKey, fallback);
  }

  public GetOptions label(String label) {
    return new GetOptions(version, label, stickinessKey, fallback);
  }

  /** With a label that has a rollout: the key (a user or tenant id) that picks the arm, the same arm for the whole rollout. */
  public GetOptions stickinessKey(String key) {
    return new GetOptions(version, label, key, fallback);
  }

  /** Served (version 0, stale) only when nothing can be read; never for a prompt that does not exist. */
  public GetOptions fallback(PromptFallback fallback) {
    return new GetOptions(version, label, stickinessKey, fallback);
  }

  public Integer getVersion() {
    return version;
  }

  public String getLabel() {
    return label;
  }

  public String getStickinessKey() {
    return stickinessKey;
  }

  public PromptFallback getFallback() {
    return fallback;
  }
}
