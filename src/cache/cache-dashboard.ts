import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as metrics from './cache-metrics';

/** One dashboard row of the cache tier: invalidation errors, iterator age, dead-letter queue, cache throttles. */
export function cacheDashboardRow(parts: metrics.CacheTierParts, width: number, height: number): cloudwatch.IWidget[] {
  const graph = (title: string, left: cloudwatch.IMetric[]) => new cloudwatch.GraphWidget({ title, left, width, height });
  return [
    graph('Invalidation function errors', [metrics.invalidationErrors(parts)]),
    graph('Invalidation iterator age (ms)', [metrics.invalidationIteratorAge(parts)]),
    graph('Invalidation dead-letter queue messages', [metrics.invalidationDeadLetterMessages(parts)]),
    ...(metrics.hasThrottledCmds(parts.cache) ? [graph('Cache throttled commands', [metrics.cacheThrottledCmds(parts)])] : []),
  ];
}
