package io.github.cdkpromptserving.runtime;

/** One remembered copy (src/runtime/entry.ts): as loaded, as a hit serves it, and stale (built on first use). */
final class Entry {
  final ReadTarget target;
  /** Whether this is a CURRENT copy (the one compare the common hit makes). */
  final boolean current;
  final Prompt loaded;
  final Prompt hit;
  private volatile Prompt staleCopy;
  final long expiresAt;
  /** {@code expiresAt} while the copy may be served as a hit; MIN_VALUE once invalidated (one read on the hot path). */
  volatile long hitUntil;
  volatile boolean failing;
  volatile boolean invalidated;
  /** Plain: written on every 16th hit, read (approximately) only to pick an entry to evict. */
  long lastUsed;
  int hits;
  /** A label entry's rollout (null without one). */
  final Rollout rollout;

  Entry(ReadTarget target, Prompt loaded, long expiresAt, Rollout rollout) {
    this.target = target;
    this.current = target.kind == ReadTarget.Kind.CURRENT;
    this.loaded = loaded;
    this.hit = loaded.served("l1", false);
    this.expiresAt = expiresAt;
    this.hitUntil = expiresAt;
    this.rollout = rollout;
  }

  Prompt stale() {
    Prompt s = staleCopy;
    if (s == null) staleCopy = s = loaded.served(loaded.getProvenance().getSource().equals("fallback") ? "fallback" : "l1", true);
    return s;
  }
}
