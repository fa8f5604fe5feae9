/** What `PromptClient.stats()` reports: counters since the client was created. */
export interface PromptClientStats {
  /** Reads answered from memory with a fresh copy. */
  readonly hits: number;
  /** Reads that needed a load (from L2 or the table), joined or started. */
  readonly misses: number;
  /** Reads answered with an expired copy, flagged `stale` (stale-while-revalidate or stale-if-error). */
  readonly staleServes: number;
  /** Reads answered not-found from memory (a recent not-found from the table). */
  readonly negativeHits: number;
  /** Reads answered not-found because the catalog rules the id out (no remote call). */
  readonly catalogRejections: number;
  /** `GetItem` requests sent, catalog reads and retries included. */
  readonly storeReads: number;
  /** Table reads that failed after their retries (served stale when a copy was within the bound). */
  readonly storeErrors: number;
  /** Table read attempts retried after throttling or a transient network error. */
  readonly retries: number;
  /** Catalog reads that completed (found or absent). */
  readonly catalogLoads: number;
  /** Loads answered by the L2. */
  readonly l2Hits: number;
  /** Loads the L2 had no usable value for. */
  readonly l2Misses: number;
  /** L2 calls that threw, rejected or timed out (the read went on to the table). */
  readonly l2Errors: number;
  /**
   * 1 when the L2 is configured (`PROMPT_SERVING_CACHE_ENDPOINT`) but its first connection could not be made:
   * node-redis could not be loaded or the cache could not be reached. Logged once as an ERROR naming the fix,
   * with the `ReaderCacheUnavailable` metric; reads go to the table.
   */
  readonly l2Unavailable: number;
  /** Reads answered with the caller's `fallback` because nothing could be read. */
  readonly fallbackServes: number;
  /** Times the freshness epoch was seen to move (each triggers one re-validation against the L2). */
  readonly epochMoves: number;
  /** In-process copies replaced by a newer one from the L2 during a re-validation. */
  readonly revalidations: number;
  /**
   * Labeled reads served arm A because the label's rollout cannot serve arm B: a malformed rollout map (every read
   * of the label), or, for reads assigned arm B, a candidate version that is absent, has another checksum than the
   * map names, or could not be read yet. Each reason is logged once (WARN).
   */
  readonly rolloutFaults: number;
  /** Prompts dropped by the size bound. */
  readonly evictions: number;
  /** Prompts held in memory now (fresh or expired). */
  readonly entries: number;
}

/** The mutable counters behind `stats()`. */
export type Counters = { -readonly [K in Exclude<keyof PromptClientStats, 'evictions' | 'entries'>]: number };

export function newCounters(): Counters {
  return {
    hits: 0,
    misses: 0,
    staleServes: 0,
    negativeHits: 0,
    catalogRejections: 0,
    storeReads: 0,
    storeErrors: 0,
    retries: 0,
    catalogLoads: 0,
    l2Hits: 0,
    l2Misses: 0,
    l2Errors: 0,
    l2Unavailable: 0,
    fallbackServes: 0,
    epochMoves: 0,
    revalidations: 0,
    rolloutFaults: 0,
  };
}
