package io.github.cdkpromptserving.runtime;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The process's memory (src/runtime/lru.ts): every remembered copy by its target's cache key, bounded by
 * {@code maxEntries} (least recently used first out, approximately: a hit marks its entry on every 16th use), and the
 * table's not-found answers, kept apart so that unknown ids cannot evict prompts.
 */
final class L1Cache {
  /** Every remembered copy, by its target's cache key. */
  final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
  /** Not-found answers from the table. */
  private final ConcurrentHashMap<String, NotFoundMark> notFound = new ConcurrentHashMap<>();
  final AtomicLong tick = new AtomicLong();
  private final int maxEntries;
  private final Counters counters;

  static final class NotFoundMark {
    final long until;
    final String reason;

    NotFoundMark(long until, String reason) {
      this.until = until;
      this.reason = reason;
    }
  }

  L1Cache(int maxEntries, Counters counters) {
    this.maxEntries = maxEntries;
    this.counters = counters;
  }

  Entry get(String cacheKey) {
    return entries.get(cacheKey);
  }

  /** The copy held for {@code target} if it is of the target's kind, valid and fresh at {@code now} (else null). */
  Entry fresh(ReadTarget target, long now) {
    Entry held = entries.get(target.cacheKey);
    return held != null && held.target.kind == target.kind && !held.invalidated && held.expiresAt > now ? held : null;
  }

  void remember(Entry entry) {
    entry.lastUsed = tick.incrementAndGet();
    entries.put(entry.target.cacheKey, entry);
    notFound.remove(entry.target.cacheKey);
    while (entries.size() > maxEntries) evictOne();
  }

  /** Marks an entry used for the size bound on every 16th hit (a hot prompt keeps its place for a fraction of the cost). */
  void touch(Entry entry) {
    if ((entry.hits++ & 15) == 0) entry.lastUsed = tick.get() + 1;
  }

  private void evictOne() {
    Map.Entry<String, Entry> oldest = null;
    for (Map.Entry<String, Entry> e : entries.entrySet()) {
      if (oldest == null || e.getValue().lastUsed < oldest.getValue().lastUsed) oldest = e;
    }
    if (oldest != null && entries.remove(oldest.getKey(), oldest.getValue())) counters.evictions.incrementAndGet();
  }

  void remove(String cacheKey) {
    entries.remove(cacheKey);
  }

  NotFoundMark notFound(String cacheKey) {
    return notFound.get(cacheKey);
  }

  /** Remembers that the table has nothing for this key until {@code until} (all forgotten past {@code maxEntries}). */
  void markNotFound(String cacheKey, long until, String reason) {
    notFound.put(cacheKey, new NotFoundMark(until, reason));
    if (notFound.size() > maxEntries) notFound.clear();
  }

  void forgetNotFound() {
    notFound.clear();
  }

  /** The epoch moved: every CURRENT and label copy is re-validated by its next read, and not-found answers forgotten. */
  void invalidateMutable() {
    for (Entry e : entries.values()) {
      if (e.target.kind == ReadTarget.Kind.VERSION) continue;
      e.invalidated = true;
      e.hitUntil = Long.MIN_VALUE;
    }
    notFound.clear();
  }

  /** Forgets every copy of a prompt (CURRENT, exact versions, labels) and its not-found answers. */
  void invalidate(String promptId) {
    entries.values().removeIf(e -> e.target.promptId.equals(promptId));
    notFound.keySet().removeIf(k -> k.equals(promptId) || k.endsWith("#" + promptId) && k.startsWith("#"));
  }

  void clear() {
    entries.clear();
    notFound.clear();
  }

  int size() {
    return entries.size();
  }
}
