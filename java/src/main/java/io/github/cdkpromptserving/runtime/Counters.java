package io.github.cdkpromptserving.runtime;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The client's counters (src/runtime/stats.ts): one atomic slot each, in the order of {@link PromptClientStats}. The
 * CURRENT hits of {@link PromptClient#getPrompt(String)} are counted apart, in a plain field of the client.
 */
final class Counters {
  static final int HITS = 0, MISSES = 1, STALE_SERVES = 2, NEGATIVE_HITS = 3, CATALOG_REJECTIONS = 4, STORE_READS = 5, STORE_ERRORS = 6,
      RETRIES = 7, CATALOG_LOADS = 8, L2_HITS = 9, L2_MISSES = 10, L2_ERRORS = 11, L2_UNAVAILABLE = 12, FALLBACK_SERVES = 13,
      EPOCH_MOVES = 14, REVALIDATIONS = 15, ROLLOUT_FAULTS = 16;

  private final AtomicLongArray slots = new AtomicLongArray(17);
  final AtomicLong evictions = new AtomicLong();

  void count(int slot) {
    slots.incrementAndGet(slot);
  }

  /** The counters now, with {@code plainHits} (the client's CURRENT hits) added to {@code hits}. */
  PromptClientStats snapshot(long plainHits, int entries) {
    long[] c = new long[slots.length()];
    for (int i = 0; i < c.length; i++) c[i] = slots.get(i);
    c[HITS] += plainHits;
    return new PromptClientStats(c, evictions.get(), entries);
  }
}
