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
