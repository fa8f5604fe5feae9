package io.github.cdkpromptserving.runtime;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One label entry's rollout (src/runtime/rollout.ts): arm A always; arm B once its candidate is in hand with the map's
 * checksum. Which arm a read gets is {@link #arm}; serving it is {@link RolloutStep}.
 */
final class Rollout {
  final Schema.RolloutSpec spec;
  final Prompt armA;
  final Prompt armAHit;
  volatile Prompt armB;
  volatile Prompt armBHit;
  volatile String problem;
  private final ConcurrentHashMap<String, Integer> buckets = new ConcurrentHashMap<>();

  /** {@code spec} null: a map that cannot be used ({@code problem} says why): every read is served arm A, counted. */
  Rollout(Schema.RolloutSpec spec, String problem, String label, Prompt labelPrompt) {
    this.spec = spec;
    this.problem = problem;
    this.armA = spec == null ? labelPrompt : labelPrompt.forLabel(label, report(label, "A"), labelPrompt.isSourceDeleted());
    this.armAHit = armA.served("l1", false);
  }

  /** The rollout of a label item (null when the item has none). */
  static Rollout of(Map<String, Object> labelItem, String label, Prompt labelPrompt) {
    if (!labelItem.containsKey("rollout")) return null;
    Schema.ParsedRollout parsed = Schema.parseRollout(labelItem.get("rollout"));
    return new Rollout(parsed.spec, parsed.problem, label, labelPrompt);
  }

  /** Whether arm B is served to some reads, so its candidate is worth reading. */
  boolean servesB() {
    return spec != null && spec.percentBp > 0;
  }

  private PromptRollout report(String label, String arm) {
    return new PromptRollout(label, spec.rolloutId, arm, spec.percentBp, spec.candidateVersion);
  }

  void offer(Prompt candidate, String label) {
    if (!candidate.getChecksum().equals(spec.candidateChecksum)) {
      problem = "candidate " + Schema.versionKey(spec.candidateVersion) + " has checksum " + candidate.getChecksum()
          + ", the rollout names " + spec.candidateChecksum;
      return;
    }
    Prompt b = candidate.forLabel(label, report(label, "B"), armA.isSourceDeleted());
    armBHit = b.served("l1", false);
    armB = b;
    problem = null;
  }

  String arm(String promptId, String label, String key) {
    if (spec == null) return "B"; // never served: the fault path serves arm A and counts it
    int percent = spec.percentBp;
    if (percent <= 0) return "A";
    if (percent >= Schema.ROLLOUT_SCALE) return "B";
    if (key == null) return ThreadLocalRandom.current().nextInt(Schema.ROLLOUT_SCALE) < percent ? "B" : "A";
    Integer bucket = buckets.get(key);
    if (bucket == null) {
      bucket = Schema.rolloutBucket(promptId, label, key);
      if (buckets.size() >= 1024) buckets.clear();
      buckets.put(key, bucket);
    }
    return bucket < percent ? "B" : "A";
  }
}
