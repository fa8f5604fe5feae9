import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import type { PromptServingAlarmOptions } from '../alarms';
import type { PromptServingTableProps } from '../prompt-serving-table-props';
import { invalidProp, isUnresolved } from './errors';

/** Period of every alarm except sync lag. */
export const DEFAULT_ALARM_PERIOD = Duration.minutes(5);
/** CloudWatch: an alarm evaluates at most one day when its period is under an hour... */
const MAX_RANGE_FOR_SHORT_PERIODS = Duration.days(1);
const SHORT_PERIOD = Duration.hours(1);
/** ...and at most seven days otherwise. */
const MAX_RANGE = Duration.days(7);

const ONE_MINUTE_MS = Duration.minutes(1).toMilliseconds();

const { GREATER_THAN_OR_EQUAL_TO_THRESHOLD, LESS_THAN_THRESHOLD } = cloudwatch.ComparisonOperator;
const { NOT_BREACHING, BREACHING, IGNORE } = cloudwatch.TreatMissingData;

/** One alarm the construct makes by default, before the user's options. */
interface AlarmDefault {
  /** The prop holding the user's options; its PascalCase is the alarm's construct id. */
  readonly prop: keyof PromptServingTableProps;
  readonly metric: (period: Duration) => cloudwatch.IMetric;
  readonly threshold: number;
  readonly evaluationPeriods: number;
  readonly period: Duration;
  readonly comparisonOperator: cloudwatch.ComparisonOperator;
  readonly treatMissingData: cloudwatch.TreatMissingData;
  /** What it means and what to do, shown in every notification. */
  readonly description: string;
}

/**
 * The construct's metric methods the alarms are built from, passed in (not the construct itself, which
 * would make this helper import the construct back).
 */
export interface ServingAlarmMetrics {
  metricReadThrottleEvents(props: cloudwatch.MetricOptions): cloudwatch.IMetric;
  metricWriteThrottleEvents(props: cloudwatch.MetricOptions): cloudwatch.IMetric;
  metricSystemErrorsForOperations(props: cloudwatch.MetricOptions): cloudwatch.IMetric;
  metricSyncFunctionErrors(props: cloudwatch.MetricOptions): cloudwatch.IMetric;
  metricPromptsFailed(props: cloudwatch.MetricOptions): cloudwatch.IMetric;
  metricDeadLetterQueueApproximateNumberOfMessagesVisible(props: cloudwatch.MetricOptions): cloudwatch.IMetric;
  metricFullSyncSucceeded(props: cloudwatch.MetricOptions): cloudwatch.IMetric;
}

/** The alarms documented on `PromptServingTableProps`, built from the construct's own metric methods. */
export function createServingAlarms(
  scope: Construct,
  metrics: ServingAlarmMetrics,
  props: PromptServingTableProps,
  syncSchedule: Duration,
): cloudwatch.Alarm[] {
  if (props.createAlarms === false) {
    return [];
  }
  const servingTable = metrics;
  const where = `the prompt serving table ${scope.node.path}`;
  const defaults: AlarmDefault[] = [
    {
      prop: 'readThrottleEventsAlarm',
      metric: (period) => servingTable.metricReadThrottleEvents({ period }),
      threshold: 1,
      evaluationPeriods: 1,
      period: DEFAULT_ALARM_PERIOD,
      comparisonOperator: GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: NOT_BREACHING,
      description: `Reads of ${where} were throttled: prompt reads are slowed or failing. `
        + 'Look for one hot prompt id or a traffic spike beyond twice the previous peak; raise the runtime client cache age or provisioned read capacity.',
    },
    {
      prop: 'writeThrottleEventsAlarm',
      metric: (period) => servingTable.metricWriteThrottleEvents({ period }),
      threshold: 1,
      evaluationPeriods: 1,
      period: DEFAULT_ALARM_PERIOD,
      comparisonOperator: GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: NOT_BREACHING,
      description: `Writes to ${where} were throttled: the sync or an activation is slowed and retrying. `
        + 'Check for overlapping syncs and, with provisioned billing, raise write capacity.',
    },
    {
      prop: 'systemErrorsAlarm',
      metric: (period) => servingTable.metricSystemErrorsForOperations({ period }),
      threshold: 1,
      evaluationPeriods: 3,
      period: DEFAULT_ALARM_PERIOD,
      comparisonOperator: GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: NOT_BREACHING,
      description: `DynamoDB kept returning internal errors (HTTP 500) for ${where}. `
        + 'Check the AWS Health Dashboard for DynamoDB in this Region; clients retry, so act if latency or errors reach users.',
    },
    {
      prop: 'syncFunctionErrorsAlarm',
      metric: (period) => servingTable.metricSyncFunctionErrors({ period }),
      threshold: 1,
      evaluationPeriods: 1,
      period: DEFAULT_ALARM_PERIOD,
      comparisonOperator: GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: NOT_BREACHING,
      description: `A sync of ${where} failed as a whole (Lambda Errors). `
        + 'Read the sync function\'s log for the error; check its permissions on the source and the table.',
    },
    {
      prop: 'promptsFailedAlarm',
      metric: (period) => servingTable.metricPromptsFailed({ period }),
      threshold: 1,
      evaluationPeriods: 1,
      period: DEFAULT_ALARM_PERIOD,
      comparisonOperator: GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: IGNORE,
      description: `Some prompts could not be synced into ${where}; readers keep getting their previous version. `
        + 'The sync report in the function\'s log names each prompt and the reason (too large, malformed, unreadable). '
        + 'Stays in alarm until a sync reports no failures.',
    },
    {
      prop: 'deadLetterQueueAlarm',
      metric: (period) => servingTable.metricDeadLetterQueueApproximateNumberOfMessagesVisible({ period }),
      threshold: 1,
      evaluationPeriods: 1,
      period: DEFAULT_ALARM_PERIOD,
      comparisonOperator: GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: IGNORE,
      description: `Sync invocations of ${where} failed after every retry and were parked in the dead-letter queue. `
        + 'Read the messages for the events, fix the cause from the function\'s log, then purge the queue; the next scheduled sync reconciles.',
    },
    {
      prop: 'syncLagAlarm',
      metric: (period) => servingTable.metricFullSyncSucceeded({ period }),
      threshold: 1,
      evaluationPeriods: 1,
      period: syncLagPeriod(syncSchedule, props),
      comparisonOperator: LESS_THAN_THRESHOLD,
      treatMissingData: BREACHING,
      description: `No full sync of ${where} succeeded within the alarm period (twice the sync schedule unless changed): `
        + 'the serving copy may be drifting from the source. '
        + 'Check the sync function\'s errors, throttles and log, and that its schedule rule is enabled.',
    },
  ];

  return defaults.flatMap((alarm) => {
    const options: PromptServingAlarmOptions = (props[alarm.prop] as PromptServingAlarmOptions | undefined) ?? {};
    if (options.enabled === false) {
      return [];
    }
    const period = options.period ?? alarm.period;
    const evaluationPeriods = options.evaluationPeriods ?? alarm.evaluationPeriods;
    const threshold = options.threshold ?? alarm.threshold;
    validateAlarmOptions(alarm.prop, { threshold, evaluationPeriods, period });

    const created = new cloudwatch.Alarm(scope, pascalCase(alarm.prop), {
      metric: alarm.metric(period),
      threshold,
      evaluationPeriods,
      datapointsToAlarm: evaluationPeriods,
      comparisonOperator: alarm.comparisonOperator,
      treatMissingData: alarm.treatMissingData,
      alarmDescription: alarm.description,
    });
    created.addAlarmAction(...props.alarmActions ?? []);
    return [created];
  });
}

/** Checks one alarm's options (threshold, evaluation periods, period and CloudWatch's range); shared by the cache alarms. */
export function validateAlarmOptions(prop: string, options: Required<Omit<PromptServingAlarmOptions, 'enabled'>>): void {
  const { threshold, evaluationPeriods, period } = options;
  if (!isUnresolved(threshold) && !(Number.isFinite(threshold) && threshold >= 0)) {
    throw invalidProp(`${prop}.threshold`, 'be a number of 0 or more', threshold);
  }
  if (!isUnresolved(evaluationPeriods) && !(Number.isInteger(evaluationPeriods) && evaluationPeriods >= 1)) {
    throw invalidProp(`${prop}.evaluationPeriods`, 'be a whole number of 1 or more', evaluationPeriods);
  }
  if (isUnresolved(period) || isUnresolved(evaluationPeriods)) {
    return;
  }
  if (period.toMilliseconds() < ONE_MINUTE_MS || period.toMilliseconds() % ONE_MINUTE_MS !== 0) {
    throw invalidProp(`${prop}.period`, 'be a whole number of minutes', period);
  }
  const range = Duration.seconds(period.toSeconds() * evaluationPeriods);
  const shortPeriod = period.toSeconds() < SHORT_PERIOD.toSeconds();
  const maxRange = shortPeriod ? MAX_RANGE_FOR_SHORT_PERIODS : MAX_RANGE;
  if (range.toSeconds() > maxRange.toSeconds()) {
    throw invalidProp(`${prop}.period\` × \`${prop}.evaluationPeriods`, `be at most ${maxRange.toHumanString()}`, range,
      `CloudWatch evaluates at most ${maxRange.toHumanString()} for periods ${shortPeriod ? 'under' : 'of at least'} an hour`);
  }
}

/**
 * Twice the sync schedule. A schedule given as a token (e.g. a CloudFormation parameter) cannot be doubled at
 * synth time: then the alarm needs its period written out, unless it is off.
 */
function syncLagPeriod(syncSchedule: Duration, props: PromptServingTableProps): Duration {
  if (!isUnresolved(syncSchedule)) {
    return syncSchedule.plus(syncSchedule);
  }
  if (props.syncLagAlarm?.period === undefined && props.syncLagAlarm?.enabled !== false) {
    throw invalidProp('syncSchedule', 'be a duration written in the app while the sync lag alarm derives its period from it', syncSchedule,
      'Set `syncLagAlarm: { period }` (about twice the schedule), or turn the alarm off with `syncLagAlarm: { enabled: false }`');
  }
  // Replaced by `syncLagAlarm.period` (or unused: the alarm is off).
  return DEFAULT_ALARM_PERIOD;
}

function pascalCase(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}
