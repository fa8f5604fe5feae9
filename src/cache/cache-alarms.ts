import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import {
  type CacheTierParts,
  cacheThrottledCmds,
  hasThrottledCmds,
  invalidationDeadLetterMessages,
  invalidationErrors,
  invalidationIteratorAge,
} from './cache-metrics';
import type { PromptServingAlarmOptions } from '../alarms';
import { validateAlarmOptions } from '../private/serving-alarms';
import type { PromptCacheOptions } from '../prompt-cache-options';
import { InvalidationMetric, READER_METRICS_DIMENSION, READER_METRICS_NAMESPACE, ReaderMetric } from '../schema/metrics';

const DEFAULT_PERIOD = Duration.minutes(5);
/** A change should reach the cache within seconds; a minute behind means readers fall back to their TTL. */
export const DEFAULT_ITERATOR_AGE_THRESHOLD_MS = 60_000;

const { GREATER_THAN_OR_EQUAL_TO_THRESHOLD } = cloudwatch.ComparisonOperator;
const { NOT_BREACHING, IGNORE } = cloudwatch.TreatMissingData;

type CacheAlarmProp = 'invalidationFunctionErrorsAlarm' | 'invalidationIteratorAgeAlarm' | 'invalidationDeadLetterQueueAlarm' | 'throttledCmdsAlarm'
  | 'readerCacheUnavailableAlarm' | 'writeThroughAlarm';

interface CacheAlarmDefault {
  readonly prop: CacheAlarmProp;
  /** Construct id of the alarm under the table. */
  readonly id: string;
  readonly metric: (period: Duration) => cloudwatch.IMetric;
  readonly threshold: number;
  readonly treatMissingData: cloudwatch.TreatMissingData;
  readonly description: string;
}

/** Inputs of the cache alarms: the parts, the cache options, and the table-wide alarm settings. */
export interface CacheAlarmSettings {
  readonly parts: CacheTierParts;
  readonly options: PromptCacheOptions;
  readonly createAlarms: boolean;
  readonly alarmActions: cloudwatch.IAlarmAction[];
  /** The serving table's name: the dimension of the readers' `ReaderCacheUnavailable` metric. */
  readonly tableName: string;
}

/**
 * Readers that run without the cache (`ReaderCacheUnavailable`, emitted by the Node and Python clients in Embedded
 * Metric Format, src/schema/metrics.ts): Sum over 5 minutes.
 */
export function readerCacheUnavailable(tableName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: READER_METRICS_NAMESPACE,
    metricName: ReaderMetric.cacheUnavailable,
    dimensionsMap: { [READER_METRICS_DIMENSION]: tableName },
    statistic: cloudwatch.Stats.SUM,
    period: DEFAULT_PERIOD,
    ...props,
  });
}

/**
 * Write-throughs that did not land (`WriteThroughDrops` + `WriteThroughFailures`, emitted by the invalidation function
 * in Embedded Metric Format, src/schema/metrics.ts): the Sum of both over 5 minutes, missing data as 0.
 */
export function writeThroughProblems(tableName: string, props?: cloudwatch.MathExpressionOptions): cloudwatch.MathExpression {
  const metric = (metricName: string) => new cloudwatch.Metric({
    namespace: READER_METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { [READER_METRICS_DIMENSION]: tableName },
    statistic: cloudwatch.Stats.SUM,
    period: props?.period ?? DEFAULT_PERIOD,
  });
  return new cloudwatch.MathExpression({
    expression: 'FILL(drops, 0) + FILL(failures, 0)',
    usingMetrics: { drops: metric(InvalidationMetric.writeThroughDrops), failures: metric(InvalidationMetric.writeThroughFailures) },
    label: 'Write-throughs that did not land',
    period: DEFAULT_PERIOD,
    ...props,
  });
}

/** The alarms documented on `PromptCacheOptions`, built from the cache tier's metric functions. */
export function createCacheAlarms(scope: Construct, settings: CacheAlarmSettings): cloudwatch.Alarm[] {
  if (!settings.createAlarms) {
    return [];
  }
  const { parts } = settings;
  const where = `the prompt cache of ${scope.node.path}`;
  const defaults: CacheAlarmDefault[] = [
    {
      prop: 'invalidationFunctionErrorsAlarm',
      id: 'InvalidationFunctionErrorsAlarm',
      metric: (period) => invalidationErrors(parts, { period }),
      threshold: 1,
      treatMissingData: NOT_BREACHING,
      description: `The invalidation function of ${where} failed (Lambda Errors); the batch is retried, bisected, then parked. `
        + 'Until it succeeds, readers serve changed prompts only when their in-process copy expires. Read the function\'s log.',
    },
    {
      prop: 'invalidationIteratorAgeAlarm',
      id: 'InvalidationIteratorAgeAlarm',
      metric: (period) => invalidationIteratorAge(parts, { period }),
      threshold: DEFAULT_ITERATOR_AGE_THRESHOLD_MS,
      treatMissingData: NOT_BREACHING,
      description: `The invalidation of ${where} is more than a minute behind the table (IteratorAge): changes reach readers late. `
        + 'Look for invalidation errors or throttles, and for cache connection failures in the function\'s log.',
    },
    {
      prop: 'invalidationDeadLetterQueueAlarm',
      id: 'InvalidationDeadLetterQueueAlarm',
      metric: (period) => invalidationDeadLetterMessages(parts, { period }),
      threshold: 1,
      treatMissingData: IGNORE,
      description: `Stream batches of ${where} failed every retry and were parked in the invalidation dead-letter queue: `
        + 'the cache may hold an older pointer until its value expires or the prompt changes again. '
        + 'The messages name the shard and sequence numbers (replayable for 24 hours); fix the cause, then purge the queue.',
    },
    {
      prop: 'readerCacheUnavailableAlarm',
      id: 'ReaderCacheUnavailableAlarm',
      metric: (period) => readerCacheUnavailable(settings.tableName, { period }),
      threshold: 1,
      treatMissingData: NOT_BREACHING,
      description: `Readers of ${where} run without the cache (ReaderCacheUnavailable): their cache client could not be `
        + 'loaded or the cache could not be reached. They serve from the table, so a fleet cold start reads every key '
        + 'from the table. Each such reader logged one ERROR line naming the fix; search the readers\' logs for it.',
    },
    {
      prop: 'writeThroughAlarm',
      id: 'WriteThroughAlarm',
      metric: (period) => writeThroughProblems(settings.tableName, { period }),
      threshold: 1,
      treatMissingData: NOT_BREACHING,
      description: `The invalidation function of ${where} could not write changes through (WriteThroughDrops: values `
        + 'deleted because the cache was full or held another type; WriteThroughFailures: records reported failed, '
        + 'retried, then parked in the dead-letter queue). Readers stay correct but read the table for those keys. '
        + 'Check the cache\'s memory and the function\'s log.',
    },
    ...(hasThrottledCmds(parts.cache) ? [{
      prop: 'throttledCmdsAlarm' as const,
      id: 'CacheThrottledCmdsAlarm',
      metric: (period: Duration) => cacheThrottledCmds(parts, { period }),
      threshold: 1,
      treatMissingData: NOT_BREACHING,
      description: `${where} throttled commands (ThrottledCmds): it is scaling slower than the load grows, or is at `
        + '`maxEcpuPerSecond`. Readers fall back to the table; raise or remove the cap if it persists.',
    }] : []),
  ];

  return defaults.flatMap((alarm) => {
    const options: PromptServingAlarmOptions = settings.options[alarm.prop] ?? {};
    if (options.enabled === false) {
      return [];
    }
    const period = options.period ?? DEFAULT_PERIOD;
    const evaluationPeriods = options.evaluationPeriods ?? 1;
    const threshold = options.threshold ?? alarm.threshold;
    validateAlarmOptions(alarm.prop, { threshold, evaluationPeriods, period });
    const created = new cloudwatch.Alarm(scope, alarm.id, {
      metric: alarm.metric(period),
      threshold,
      evaluationPeriods,
      datapointsToAlarm: evaluationPeriods,
      comparisonOperator: GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: alarm.treatMissingData,
      alarmDescription: alarm.description,
    });
    created.addAlarmAction(...settings.alarmActions);
    return [created];
  });
}
