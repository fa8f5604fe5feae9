package io.github.cdkpromptserving.runtime;

import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The L2 tier as the read path uses it (src/runtime/tiers.ts): a stream value of the epoch's incarnation first, then a
 * fill of the same lineage within maxAgeSeconds (any age for an immutable version), else the table (and a fill for the
 * other processes). Every failure is counted and read from the table. With a write-through cache, the freshness epoch
 * is polled every {@code epochPollIntervalMs}; a move re-validates every CURRENT and label copy held.
 */
final class SharedTier {
  private final PromptCacheL2 cache;
  private final boolean owned;
  private final PromptClient client;
  private final String table;
  private volatile String incarnation;
  private volatile long epochCounter = -1;
  private volatile long epochReadAt = Long.MIN_VALUE;
  private ScheduledExecutorService poller;
  private ScheduledFuture<?> polling;

  SharedTier(PromptCacheL2 cache, boolean owned, PromptClient client) {
    this.cache = cache;
    this.owned = owned;
    this.client = client;
    this.table = client.options.tableName;
  }

  boolean writeThrough() {
    return cache.writeThrough();
  }

  /** Starts the epoch poll (write-through caches only). */
  synchronized void start() {
    if (!cache.writeThrough() || polling != null) return;
    if (poller == null) {
      poller = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "prompt-serving-epoch");
        t.setDaemon(true);
        return t;
      });
    }
    long interval = client.options.epochPollIntervalMs;
    polling = poller.scheduleWithFixedDelay(this::checkEpochQuietly, 0, interval, TimeUnit.MILLISECONDS);
  }

  /** Stops the poll (before a snapshot, or at close). */
  synchronized void stop() {
    if (polling != null) polling.cancel(false);
    polling = null;
  }

  private void checkEpochQuietly() {
    try {
      checkEpoch();
    } catch (RuntimeException e) {
      failed(e);
    }
  }

  /** Reads the epoch; a counter that moved re-validates the client's copies. Sets how long copies may be trusted. */
  void checkEpoch() {
    String raw = cache.get(L2Schema.epochKey(table));
    long counter = L2Schema.epochCounter(raw);
    String inc = L2Schema.epochIncarnation(raw);
    long before = epochCounter;
    boolean first = epochReadAt == Long.MIN_VALUE;
    incarnation = inc;
    epochCounter = counter;
    epochReadAt = client.now();
    if (!first && counter != before) epochMoved();
    client.epochTrustedUntil = epochReadAt + 2 * client.options.epochPollIntervalMs;
  }

  /** The epoch moved: every CURRENT and label copy is re-validated by its next read, not-found answers and the catalog forgotten. */
  private void epochMoved() {
    client.l1.invalidateMutable();
    client.catalog.forget();
    client.counters.count(Counters.EPOCH_MOVES);
  }

  private String incarnation() {
    if (epochReadAt == Long.MIN_VALUE) {
      try {
        checkEpoch();
      } catch (RuntimeException e) {
        client.counters.count(Counters.L2_ERRORS);
      }
    }
    return incarnation;
  }

  private String get(String key) {
    try {
      return cache.get(key);
    } catch (RuntimeException e) {
      failed(e);
      return null;
    }
  }

  private volatile boolean errorLogged;

  /** Counts an L2 failure; the first is said once on stderr (reads go on to the table). */
  private void failed(RuntimeException e) {
    client.counters.count(Counters.L2_ERRORS);
    if (errorLogged) return;
    errorLogged = true;
    Map<String, Object> line = new java.util.LinkedHashMap<>();
    line.put("level", "WARN");
    line.put("message", "cdk-prompt-serving: an L2 call failed (reads go to the table; said once): " + e);
    line.put("table", table);
    System.err.println(Json.stringify(line));
  }

  /** The item as the L2 holds it (null: read the table). */
  Loaded read(String promptId, String sortKey) {
    boolean wt = cache.writeThrough();
    String inc = wt ? incarnation() : null;
    String rawStream = wt ? get(L2Schema.itemKey(table, promptId, sortKey)) : null;
    String rawFill = get(L2Schema.fillKey(table, promptId, sortKey));
    long now = client.now();
    L2Schema.StreamValue stream = rawStream == null ? null : L2Schema.decodeStreamValue(rawStream, promptId, sortKey);
    if (stream != null && stream.inc.equals(inc)) {
      Map<String, Object> item = stream.item == null ? null : L2Schema.fromDynamoJson(stream.item);
      if (stream.item == null || item != null) {
        client.counters.count(Counters.L2_HITS);
        return new Loaded(item, "stream", now);
      }
    }
    L2Schema.FillValue fill = rawFill == null ? null : L2Schema.decodeFillValue(rawFill, promptId, sortKey, now);
    String lineage = wt ? inc : null;
    if (fill != null && java.util.Objects.equals(fill.inc, lineage)
        && (Schema.parseVersionKey(sortKey) > 0 || now < fill.fetchedAt + client.options.maxAgeMs)) {
      Map<String, Object> item = L2Schema.fromDynamoJson(fill.item);
      if (item != null) {
        client.counters.count(Counters.L2_HITS);
        return new Loaded(item, "fill", fill.fetchedAt);
      }
    }
    client.counters.count(Counters.L2_MISSES);
    return null;
  }

  /** Stores what the table answered, for the other processes (nothing for an absent item). */
  void fill(String promptId, String sortKey, Map<String, Object> item, long fetchedAt) {
    if (item == null) return;
    long ttl = L2Schema.fillTtlSeconds(client.options.maxAgeMs, client.options.staleWhileRevalidateMs);
    if (ttl < 1) return;
    String inc = cache.writeThrough() ? incarnation : null;
    try {
      cache.set(L2Schema.fillKey(table, promptId, sortKey), L2Schema.encodeFillValue(inc, fetchedAt, L2Schema.toDynamoJson(item)), (int) ttl);
    } catch (RuntimeException e) {
      failed(e);
    }
  }

  /** Before a snapshot: no poll, no connection (the adapter reconnects on its next call). */
  void beforeCheckpoint() {
    stop();
    if (cache instanceof Resettable) ((Resettable) cache).reset();
    epochReadAt = Long.MIN_VALUE;
  }

  void afterRestore() {
    start();
  }

  void close() {
    stop();
    if (poller != null) poller.shutdownNow();
    if (owned) cache.close();
  }

  /** An adapter that can drop its connections and credentials (reconnecting lazily). */
  interface Resettable {
    void reset();
  }
}
