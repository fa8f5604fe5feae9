package io.github.cdkpromptserving.runtime;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The step after a label read (src/runtime/rollout-step.ts): a label entry with a rollout is served the arm the read's
 * stickiness key picks; arm B's candidate is an exact-version read through the same cached path. A rollout that cannot
 * serve arm B serves arm A to its share, counted in {@code rolloutFaults} and said once per problem on stdout.
 */
final class RolloutStep {
  private final ReadPath readPath;
  private final Counters counters;
  private final String tableName;
  private final ConcurrentHashMap<String, String> faultsLogged = new ConcurrentHashMap<>();

  RolloutStep(ReadPath readPath, Counters counters, String tableName) {
    this.readPath = readPath;
    this.counters = counters;
    this.tableName = tableName;
  }

  /** The copy of {@code entry} a read serves: by mode ({@code hit}, {@code loaded}, {@code stale}), and by the arm of a rollout. */
  Prompt serve(Entry entry, String stickinessKey, String mode) {
    Rollout r = entry.rollout;
    if (r == null) return "hit".equals(mode) ? entry.hit : "loaded".equals(mode) ? entry.loaded : entry.stale();
    String arm = r.arm(entry.target.promptId, entry.target.label, stickinessKey);
    if ("B".equals(arm)) {
      if (r.spec != null && r.armB == null && r.problem == null) loadCandidate(entry);
      Prompt b = r.armB;
      if (b != null) return "hit".equals(mode) ? r.armBHit : "loaded".equals(mode) ? b : b.served("l1", true);
      counters.count(Counters.ROLLOUT_FAULTS);
      logFault(entry, r.problem);
    }
    return "hit".equals(mode) ? r.armAHit : "loaded".equals(mode) ? r.armA : r.armA.served("l1", true);
  }

  /**
   * A label entry just read: its candidate is read with it (not on the first arm-B read), so stale-if-error can serve
   * either arm. The label is served (arm A) whatever the candidate read did.
   */
  void afterLabelRead(Entry entry) {
    if (entry.rollout == null || !entry.rollout.servesB()) return;
    try {
      loadCandidate(entry);
    } catch (RuntimeException e) {
      // the label is served (arm A) whatever the candidate read did
    }
  }

  /** Arm B's candidate version, read through the same cached path as any pinned read. */
  void loadCandidate(Entry entry) {
    Rollout r = entry.rollout;
    try {
      Prompt candidate = readPath.pinned(ReadTarget.version(entry.target.promptId, r.spec.candidateVersion));
      r.offer(candidate, entry.target.label);
    } catch (PromptNotFoundException e) {
      r.problem = "candidate " + Schema.versionKey(r.spec.candidateVersion) + " does not exist";
    } catch (PromptStoreException e) {
      // not permanent: arm A is served this time, the next read assigned B tries again
      counters.count(Counters.ROLLOUT_FAULTS);
    }
  }

  private void logFault(Entry entry, String problem) {
    String key = entry.target.cacheKey;
    if (problem == null || problem.equals(faultsLogged.put(key, problem))) return;
    Map<String, Object> line = new java.util.LinkedHashMap<>();
    line.put("level", "WARN");
    line.put("message", "cdk-prompt-serving: the rollout of label '" + entry.target.label + "' of prompt '" + entry.target.promptId
        + "' cannot serve arm B (" + problem + "); arm A is served to its share until the rollout is fixed or removed");
    line.put("table", tableName);
    line.put("promptId", entry.target.promptId);
    line.put("label", entry.target.label);
    line.put("rolloutId", entry.rollout.spec == null ? null : entry.rollout.spec.rolloutId);
    System.out.println(Json.stringify(line));
  }
}
