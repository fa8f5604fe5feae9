/**
 * The readers' read-provenance metrics on the construct's dashboard and its alarm. The runtime clients emit them
 * through their EMF helper (`emfReadMetrics` / `emf_read_metrics`, src/schema/metrics.ts `ReaderReadMetric`), in the
 * fixed reader namespace with the table's name as dimension, so the construct can graph and alarm on them without
 * knowing the readers.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { validateAlarmOptions } from './serving-alarms';
import type { PromptServingAlarmOptions } from '../alarms';
import { READER_METRICS_DIMENSION, READER_METRICS_NAMESPACE, ReaderReadMetric } from '../schema/metrics';

const DEFAULT_PERIOD = Duration.minutes(5);

/** One reader metric of the table (`ReaderServedFallback`, …): Sum over 5 minutes. */
export function readerReadMetric(tableName: string, metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: READER_METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { [READER_METRICS_DIMENSION]: tableName },
    statistic: cloudwatch.Stats.SUM,
    period: DEFAULT_PERIOD,
    ...props,
  });
}

/** One dashboard row: reads by tier, stale and fallback serves, the readers' table reads and L2 errors. */
export function readerDashboardRow(tableName: string, width: number, height: number): cloudwatch.IWidget[] {
  const m = (name: string, label: string) => readerReadMetric(tableName, name, { label });
  const graph = (title: string, left: cloudwatch.IMetric[], stacked = false) => new cloudwatch.GraphWidget({ title, left, stacked, width, height });
  return [
    graph('Prompt reads by tier (readers with emfReadMetrics)', [
      m(ReaderReadMetric.servedL1, 'memory (L1)'),
      m(ReaderReadMetric.servedL2, 'cache (L2)'),
      m(ReaderReadMetric.servedTable, 'table'),
      m(ReaderReadMetric.servedFallback, 'fallback'),
    ], true),
    graph('Stale copies and fallbacks served', [
      m(ReaderReadMetric.servedStale, 'stale'),
      m(ReaderReadMetric.servedFallback, 'fallback'),
    ]),
    graph('Reader table reads and L2 errors', [
      m(ReaderReadMetric.tableReads, 'GetItem calls'),
      m(ReaderReadMetric.l2Errors, 'L2 errors'),
    ]),
  ];
}

/**
 * `ReaderFallbackAlarm`: readers served their coded fallback (`ReaderServedFallback` Sum ≥ 1 in one 5-minute period;
 * missing data is not breaching) — nothing could be read for them: table, cache and memory all failed. Created only
 * when `options` is given (readers emit the metric only with the EMF helper).
 */
export function createReaderAlarms(
  scope: Construct, tableName: string, options: PromptServingAlarmOptions | undefined, createAlarms: boolean, actions: cloudwatch.IAlarmAction[],
): cloudwatch.Alarm[] {
  if (options === undefined || options.enabled === false || !createAlarms) return [];
  const period = options.period ?? DEFAULT_PERIOD;
  const evaluationPeriods = options.evaluationPeriods ?? 1;
  const threshold = options.threshold ?? 1;
  validateAlarmOptions('readerFallbackAlarm', { threshold, evaluationPeriods, period });
  const alarm = new cloudwatch.Alarm(scope, 'ReaderFallbackAlarm', {
    metric: readerReadMetric(tableName, ReaderReadMetric.servedFallback, { period }),
    threshold,
    evaluationPeriods,
    datapointsToAlarm: evaluationPeriods,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    alarmDescription: `Readers of the prompt serving table ${scope.node.path} served their coded fallback prompt: the table, the cache `
      + 'and their memory all failed for those reads. Check the readers\' logs (PromptStoreError causes), the table\'s throttles and errors, '
      + 'and the readers\' network path to DynamoDB.',
  });
  alarm.addAlarmAction(...actions);
  return [alarm];
}
