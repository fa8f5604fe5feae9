package io.github.cdkpromptserving.runtime;

/** Which arm of a label's rollout a read served ({@link Prompt#getRollout()}). */
public final class PromptRollout {
  private final String label;
  private final String rolloutId;
  private final String arm;
  private final int percentBp;
  private final int candidateVersion;

  PromptRollout(String label, String rolloutId, String arm, int percentBp, int candidateVersion) {
    this.label = label;
    this.rolloutId = rolloutId;
    this.arm = arm;
    this.percentBp = percentBp;
    this.candidateVersion = candidateVersion;
  }

  public String getLabel() {
    return label;
  }

  public String getRolloutId() {
    return rolloutId;
  }

  /** {@code A}: the label's own version; {@code B}: the candidate. */
  public String getArm() {
    return arm;
  }

  public int getPercentBp() {
    return percentBp;
  }

  public int getCandidateVersion() {
    return candidateVersion;
  }

  @Override
  public String toString() {
    return "PromptRollout{label=" + label + ", rolloutId=" + rolloutId + ", arm=" + arm + ", percentBp=" + percentBp
        + ", candidateVersion=" + candidateVersion + "}";
  }
}
