/**
 * The loud failure of a cache-enabled reader that runs without its L2 (issue "As deployed"): one ERROR line naming the
 * fix, which is also the Embedded Metric Format record of `ReaderCacheUnavailable` (src/schema/metrics.ts) that the
 * cache tier's `readerCacheUnavailableAlarm` watches. Its own module, so the adapter (./valkey.ts, shipped in the
 * reader layer) and the environment set-up (./l2-env.ts) both use it without importing each other.
 */
import { ENV_CACHE_ENDPOINT } from '../schema/env';
import { READER_METRICS_DIMENSION, READER_METRICS_NAMESPACE, ReaderMetric } from '../schema/metrics';

/** One JSON line on stdout: level ERROR, the reason with its fix, and the EMF record of the metric. */
export function logUnavailable(reason: string, tableName: string, now = Date.now()): void {
  const metric = ReaderMetric.cacheUnavailable;
  // process.stdout, not console: Lambda prefixes console lines, and CloudWatch then no longer reads them as EMF.
  process.stdout.write(JSON.stringify({
    level: 'ERROR',
    message: `cdk-prompt-serving: ${ENV_CACHE_ENDPOINT} is set but ${reason}`,
    _aws: { Timestamp: now, CloudWatchMetrics: [{ Namespace: READER_METRICS_NAMESPACE, Dimensions: [[READER_METRICS_DIMENSION]], Metrics: [{ Name: metric, Unit: 'Count' }] }] },
    [READER_METRICS_DIMENSION]: tableName,
    [metric]: 1,
  }) + '\n');
}
