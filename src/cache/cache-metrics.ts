import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { type IPromptServingCache, PromptCacheResourceType } from '../prompt-cache-options';

/** Namespace and dimension of ElastiCache Serverless metrics (the dimension is `clusterId`, the cache name). */
export const ELASTICACHE_NAMESPACE = 'AWS/ElastiCache';
export const SERVERLESS_CACHE_DIMENSION = 'clusterId';
const DEFAULT_PERIOD = Duration.minutes(5);

/** The parts of the cache tier its metrics come from, or `undefined` without a cache. */
export interface CacheTierParts {
  readonly cache: IPromptServingCache;
  readonly invalidationFunction: lambda.IFunction;
  readonly invalidationDeadLetterQueue: sqs.IQueue;
}

/** `what` needs the cache tier: a clear error instead of a metric of nothing. */
export function requireCacheTier(parts: CacheTierParts | undefined, what: string): CacheTierParts {
  if (!parts) {
    throw new Error(`${what} needs the cache tier: set \`cache\` (e.g. \`PromptCache.serverless({ vpc })\`) on the PromptServingTable`);
  }
  return parts;
}

/** Lambda `Errors` of the invalidation function: Sum over 5 minutes. */
export function invalidationErrors(parts: CacheTierParts, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
  return parts.invalidationFunction.metricErrors(props);
}

/** Lambda `IteratorAge` of the invalidation function (ms from a stream record's write to its delivery): Maximum over 5 minutes. */
export function invalidationIteratorAge(parts: CacheTierParts, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
  return parts.invalidationFunction.metric('IteratorAge', { statistic: cloudwatch.Stats.MAXIMUM, period: DEFAULT_PERIOD, ...props });
}

/** SQS `ApproximateNumberOfMessagesVisible` of the invalidation dead-letter queue: Maximum over 5 minutes. */
export function invalidationDeadLetterMessages(parts: CacheTierParts, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
  return parts.invalidationDeadLetterQueue.metricApproximateNumberOfMessagesVisible(props);
}

/** Whether the cache publishes `ThrottledCmds` (serverless caches do; node-based ones do not). */
export function hasThrottledCmds(cache: IPromptServingCache): boolean {
  return cache.resourceType === PromptCacheResourceType.SERVERLESS_CACHE;
}

/** ElastiCache Serverless `ThrottledCmds` of the cache (dimension `clusterId`): Sum over 5 minutes. */
export function cacheThrottledCmds(parts: CacheTierParts, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
  if (!hasThrottledCmds(parts.cache)) {
    throw new Error('`ThrottledCmds` is published for serverless caches only; this cache is a replication group '
      + '(watch its `EngineCPUUtilization` per node instead)');
  }
  return new cloudwatch.Metric({
    namespace: ELASTICACHE_NAMESPACE,
    metricName: 'ThrottledCmds',
    dimensionsMap: { [SERVERLESS_CACHE_DIMENSION]: parts.cache.cacheName },
    statistic: cloudwatch.Stats.SUM,
    period: DEFAULT_PERIOD,
    ...props,
  });
}
