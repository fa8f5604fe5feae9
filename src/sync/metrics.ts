/** CloudWatch Embedded Metric Format for sync reports: one structured log line, no PutMetricData calls. */
import { SyncMetric } from '../schema';
import type { SyncReport } from './engine';

export function emfRecord(namespace: string, tableName: string, report: SyncReport, now = Date.now()): Record<string, unknown> {
  const values: Record<string, number> = {
    [SyncMetric.scanned]: report.scanned,
    [SyncMetric.unchanged]: report.unchanged,
    [SyncMetric.written]: report.written,
    [SyncMetric.deleted]: report.deleted,
    [SyncMetric.failed]: report.failed,
    [SyncMetric.sourceThrottles]: report.sourceThrottles,
    [SyncMetric.duration]: report.durationMs,
  };
  if (report.mode === 'full' && report.complete) values[SyncMetric.fullSyncSucceeded] = 1;
  return {
    _aws: {
      Timestamp: now,
      CloudWatchMetrics: [{
        Namespace: namespace,
        Dimensions: [['TableName']],
        Metrics: Object.keys(values).map((Name) => ({
          Name,
          Unit: Name === SyncMetric.duration ? 'Milliseconds' : 'Count',
        })),
      }],
    },
    TableName: tableName,
    ...values,
  };
}
