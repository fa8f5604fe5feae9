/**
 * Metric names the sync handler emits (Embedded Metric Format) and the construct alarms on.
 */

/** Default CloudWatch namespace of the sync metrics. */
export const DEFAULT_METRICS_NAMESPACE = 'CdkPromptServing';

/** The metric names the sync handler emits (Embedded Metric Format) and the construct alarms on. */
export const SyncMetric = {
  scanned: 'PromptsScanned',
  unchanged: 'PromptsUnchanged',
  written: 'PromptsWritten',
  deleted: 'PromptsDeleted',
  failed: 'PromptsFailed',
  sourceThrottles: 'SourceThrottles',
  duration: 'SyncDuration',
  fullSyncSucceeded: 'FullSyncSucceeded',
} as const;

/**
 * The metric a cache-enabled reader (Node and Python clients) emits, in Embedded Metric Format on one ERROR log line,
 * when it runs without the L2: its client library cannot be loaded, or the cache cannot be reached at start-up.
 * Namespace {@link READER_METRICS_NAMESPACE}, dimension `TableName`, unit Count; the cache tier's
 * `readerCacheUnavailableAlarm` watches it. Readers may live in other apps than the table, which cannot know a
 * custom `metricsNamespace`, so the namespace is fixed.
 */
export const ReaderMetric = {
  cacheUnavailable: 'ReaderCacheUnavailable',
} as const;

/** Namespace of the readers' metrics (fixed; see {@link ReaderMetric}). */
export const READER_METRICS_NAMESPACE = DEFAULT_METRICS_NAMESPACE;

/** Dimension of the readers' metrics: the serving table's name. */
export const READER_METRICS_DIMENSION = 'TableName';

/**
 * The metrics the invalidation function emits (Embedded Metric Format, one line per batch that dropped or failed
 * anything), namespace {@link READER_METRICS_NAMESPACE}, dimension `TableName`, unit Count; the cache tier's
 * `writeThroughAlarm` watches their sum.
 * - `WriteThroughDrops`: values that could not be written through (cache full, wrong type) and were deleted
 *   instead, so readers read the table for those keys until the next change.
 * - `WriteThroughFailures`: records reported back to Lambda as failed (partial batch response): retried, bisected,
 *   then parked in the dead-letter queue. Lambda's `Errors` metric does not count them.
 */
export const InvalidationMetric = {
  writeThroughDrops: 'WriteThroughDrops',
  writeThroughFailures: 'WriteThroughFailures',
} as const;

/**
 * The read-provenance metrics of the runtime clients' EMF helper (`emfReadMetrics` / `emf_read_metrics`): one EMF line
 * per flush interval, namespace {@link READER_METRICS_NAMESPACE}, dimension `TableName`, unit Count. The construct's
 * dashboard graphs them and its `readerFallbackAlarm` watches `ReaderServedFallback`.
 * - `ReaderServedL1` / `ReaderServedL2` / `ReaderServedTable`: reads answered by each tier.
 * - `ReaderServedFallback`: reads answered with the caller's fallback (nothing could be read).
 * - `ReaderServedStale`: reads answered with a copy past `maxAgeSeconds` (any tier).
 * - `ReaderTableReads`: `GetItem` calls the client made (prompts and catalog; the client's `storeReads`).
 * - `ReaderL2Errors`: L2 calls that failed or timed out (the client's `l2Errors`).
 */
export const ReaderReadMetric = {
  servedL1: 'ReaderServedL1',
  servedL2: 'ReaderServedL2',
  servedTable: 'ReaderServedTable',
  servedFallback: 'ReaderServedFallback',
  servedStale: 'ReaderServedStale',
  tableReads: 'ReaderTableReads',
  l2Errors: 'ReaderL2Errors',
} as const;
