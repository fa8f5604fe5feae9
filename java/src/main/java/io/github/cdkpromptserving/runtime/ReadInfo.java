package io.github.cdkpromptserving.runtime;

/** What {@code onRead} receives per read: fields in the order of surface.json's readInfo. */
public final class ReadInfo {
  public final String tableName;
  public final String promptId;
  public final int version;
  /** The version asked for; null for CURRENT and labels. */
  public final Integer requestedVersion;
  public final String checksum;
  public final String source;
  public final boolean stale;
  public final double ageSeconds;
  /** Null for CURRENT and exact versions. */
  public final String label;
  /** Null unless the label has a rollout. */
  public final String rolloutId;
  /** Null unless the label has a rollout. */
  public final String arm;

  ReadInfo(String tableName, String promptId, int version, Integer requestedVersion, String checksum, String source, boolean stale,
      double ageSeconds, String label, String rolloutId, String arm) {
    this.tableName = tableName;
    this.promptId = promptId;
    this.version = version;
    this.requestedVersion = requestedVersion;
    this.checksum = checksum;
    this.source = source;
    this.stale = stale;
    this.ageSeconds = ageSeconds;
    this.label = label;
    this.rolloutId = rolloutId;
    this.arm = arm;
  }

  ReadInfo(String tableName, Prompt prompt, Integer requestedVersion) {
    this.tableName = tableName;
    this.promptId = prompt.getId();
    this.version = prompt.getVersion();
    this.requestedVersion = requestedVersion;
    this.checksum = prompt.getChecksum();
    this.source = prompt.getProvenance().getSource();
    this.stale = prompt.isStale();
    this.ageSeconds = prompt.getProvenance().getAgeSeconds();
    this.label = prompt.getLabel();
    this.rolloutId = prompt.getRollout() == null ? null : prompt.getRollout().getRolloutId();
    this.arm = prompt.getRollout() == null ? null : prompt.getRollout().getArm();
  }
}
