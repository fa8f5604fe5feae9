import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch_actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { newServingTable, newStack, synth } from './util';
import { PromptServingTableProps } from '../../src';

/** CloudWatch rejects a metric math expression over more than 10 metrics. */
const MAX_METRICS_PER_EXPRESSION = 10;

const TABLE_NAME = { Name: 'TableName', Value: { Ref: Match.stringLikeRegexp('^PromptsTable') } };

/** Every alarm: the metric it watches and its documented defaults. */
const ALARMS = [
  {
    prop: 'readThrottleEventsAlarm',
    metric: { Namespace: 'AWS/DynamoDB', MetricName: 'ReadThrottleEvents', Statistic: 'Sum', Period: 300, Dimensions: [TABLE_NAME] },
    threshold: 1,
    evaluationPeriods: 1,
    comparison: 'GreaterThanOrEqualToThreshold',
    missingData: 'notBreaching',
  },
  {
    prop: 'writeThrottleEventsAlarm',
    metric: { Namespace: 'AWS/DynamoDB', MetricName: 'WriteThrottleEvents', Statistic: 'Sum', Period: 300, Dimensions: [TABLE_NAME] },
    threshold: 1,
    evaluationPeriods: 1,
    comparison: 'GreaterThanOrEqualToThreshold',
    missingData: 'notBreaching',
  },
  {
    prop: 'systemErrorsAlarm',
    metric: {
      Metrics: Match.arrayWith([Match.objectLike({
        Expression: 'getitem + batchgetitem + query + scan + putitem + updateitem + transactwriteitems',
      })]),
    },
    threshold: 1,
    evaluationPeriods: 3,
    comparison: 'GreaterThanOrEqualToThreshold',
    missingData: 'notBreaching',
  },
  {
    prop: 'syncFunctionErrorsAlarm',
    metric: {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Statistic: 'Sum',
      Period: 300,
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('^PromptsSyncFunction') } }],
    },
    threshold: 1,
    evaluationPeriods: 1,
    comparison: 'GreaterThanOrEqualToThreshold',
    missingData: 'notBreaching',
  },
  {
    prop: 'promptsFailedAlarm',
    metric: { Namespace: 'CdkPromptServing', MetricName: 'PromptsFailed', Statistic: 'Sum', Period: 300, Dimensions: [TABLE_NAME] },
    threshold: 1,
    evaluationPeriods: 1,
    comparison: 'GreaterThanOrEqualToThreshold',
    missingData: 'ignore',
  },
  {
    prop: 'deadLetterQueueAlarm',
    metric: {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Statistic: 'Maximum',
      Period: 300,
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsDeadLetterQueue'), 'QueueName'] } }],
    },
    threshold: 1,
    evaluationPeriods: 1,
    comparison: 'GreaterThanOrEqualToThreshold',
    missingData: 'ignore',
  },
  {
    prop: 'syncLagAlarm',
    metric: { Namespace: 'CdkPromptServing', MetricName: 'FullSyncSucceeded', Statistic: 'Sum', Period: 1800, Dimensions: [TABLE_NAME] },
    threshold: 1,
    evaluationPeriods: 1,
    comparison: 'LessThanThreshold',
    missingData: 'breaching',
  },
] as const;

describe('default alarms', () => {
  let template: Template;
  beforeAll(() => {
    // GIVEN / WHEN
    template = synth();
  });

  test.each(ALARMS)('$prop: metric, threshold, evaluation periods and missing data', (alarm) => {
    // THEN
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...alarm.metric,
      Threshold: alarm.threshold,
      EvaluationPeriods: alarm.evaluationPeriods,
      DatapointsToAlarm: alarm.evaluationPeriods,
      ComparisonOperator: alarm.comparison,
      TreatMissingData: alarm.missingData,
      AlarmDescription: Match.stringLikeRegexp('Stack/Prompts'),
      AlarmActions: Match.absent(),
    });
  });

  test('the system errors alarm sums SystemErrors of the 7 operations the library calls, 5 minutes each', () => {
    // THEN
    const operations = ['GetItem', 'BatchGetItem', 'Query', 'Scan', 'PutItem', 'UpdateItem', 'TransactWriteItems'];
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: [
        Match.objectLike({ Id: 'expr_1', ReturnData: true }),
        ...operations.map((operation) => ({
          Id: operation.toLowerCase(),
          ReturnData: false,
          MetricStat: {
            Metric: {
              Namespace: 'AWS/DynamoDB',
              MetricName: 'SystemErrors',
              Dimensions: [{ Name: 'Operation', Value: operation }, TABLE_NAME],
            },
            Period: 300,
            Stat: 'Sum',
          },
        })),
      ],
    });
  });
});

describe('no alarm math expression exceeds CloudWatch\'s 10 metrics', () => {
  test.each<[string, Partial<PromptServingTableProps>]>([
    ['with the defaults', {}],
    ['with every alarm period changed', {
      readThrottleEventsAlarm: { period: Duration.minutes(1) },
      writeThrottleEventsAlarm: { period: Duration.minutes(1) },
      systemErrorsAlarm: { period: Duration.minutes(1) },
      syncFunctionErrorsAlarm: { period: Duration.minutes(1) },
      promptsFailedAlarm: { period: Duration.minutes(1) },
      deadLetterQueueAlarm: { period: Duration.minutes(1) },
      syncLagAlarm: { period: Duration.hours(2) },
    }],
  ])('%s', (_, props) => {
    // WHEN
    const alarms = Object.values(synth(props).findResources('AWS::CloudWatch::Alarm'));
    // THEN
    expect(alarms).toHaveLength(ALARMS.length);
    for (const alarm of alarms) {
      const queries: Array<{ MetricStat?: unknown }> = alarm.Properties.Metrics ?? [];
      expect(queries.filter((query) => query.MetricStat).length).toBeLessThanOrEqual(MAX_METRICS_PER_EXPRESSION);
    }
  });
});

describe('alarm options', () => {
  test('the sync lag alarm looks back twice the sync schedule', () => {
    // WHEN
    const template = synth({ syncSchedule: Duration.hours(1) });
    // THEN
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'FullSyncSucceeded', Period: 7200 });
  });

  test('enabled: false leaves out that alarm only', () => {
    // WHEN
    const template = synth({ readThrottleEventsAlarm: { enabled: false } });
    // THEN
    template.resourceCountIs('AWS::CloudWatch::Alarm', ALARMS.length - 1);
    expect(template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'ReadThrottleEvents' } })).toEqual({});
  });

  test('threshold, evaluationPeriods and period replace the defaults', () => {
    // WHEN
    const template = synth({ promptsFailedAlarm: { threshold: 5, evaluationPeriods: 3, period: Duration.minutes(15) } });
    // THEN
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'PromptsFailed',
      Threshold: 5,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      Period: 900,
      TreatMissingData: 'ignore',
    });
  });

  test('createAlarms: false creates none and exposes none', () => {
    // GIVEN
    const stack = newStack();
    // WHEN
    const prompts = newServingTable(stack, { createAlarms: false, syncLagAlarm: { threshold: 2 } });
    // THEN
    expect(prompts.alarms).toEqual([]);
    Template.fromStack(stack).resourceCountIs('AWS::CloudWatch::Alarm', 0);
  });

  test('alarms exposes every alarm created', () => {
    // GIVEN
    const stack = newStack();
    // WHEN
    const prompts = newServingTable(stack);
    // THEN
    expect(prompts.alarms.map((alarm) => alarm.node.id)).toEqual(ALARMS.map((alarm) => alarm.prop.charAt(0).toUpperCase() + alarm.prop.slice(1)));
  });

  test('alarmActions are added to every alarm', () => {
    // GIVEN
    const stack = newStack();
    const topic = new sns.Topic(stack, 'Pager');
    // WHEN
    newServingTable(stack, { alarmActions: [new cloudwatch_actions.SnsAction(topic)] });
    // THEN
    Template.fromStack(stack).allResourcesProperties('AWS::CloudWatch::Alarm', {
      AlarmActions: [{ Ref: Match.stringLikeRegexp('^Pager') }],
    });
  });

  test('throws if a threshold is negative', () => {
    // WHEN / THEN
    expect(() => synth({ readThrottleEventsAlarm: { threshold: -1 } }))
      .toThrow('`readThrottleEventsAlarm.threshold` must be a number of 0 or more, got -1');
  });

  test.each([0, 1.5])('throws if evaluationPeriods is %d', (evaluationPeriods) => {
    // WHEN / THEN
    expect(() => synth({ systemErrorsAlarm: { evaluationPeriods } }))
      .toThrow(`\`systemErrorsAlarm.evaluationPeriods\` must be a whole number of 1 or more, got ${evaluationPeriods}`);
  });

  test('throws if a period is not whole minutes', () => {
    // WHEN / THEN
    expect(() => synth({ deadLetterQueueAlarm: { period: Duration.seconds(90) } }))
      .toThrow('`deadLetterQueueAlarm.period` must be a whole number of minutes, got 1 minute 30 seconds');
  });

  test('throws if a short-period alarm would evaluate more than a day', () => {
    // WHEN / THEN
    expect(() => synth({ promptsFailedAlarm: { period: Duration.minutes(30), evaluationPeriods: 49 } })).toThrow(
      '`promptsFailedAlarm.period` × `promptsFailedAlarm.evaluationPeriods` must be at most 1 day, got 1 day 30 minutes. '
      + 'CloudWatch evaluates at most 1 day for periods under an hour');
  });

  test('throws if an alarm would evaluate more than seven days', () => {
    // WHEN / THEN
    expect(() => synth({ syncLagAlarm: { period: Duration.days(2), evaluationPeriods: 4 } })).toThrow(
      '`syncLagAlarm.period` × `syncLagAlarm.evaluationPeriods` must be at most 7 days, got 8 days. '
      + 'CloudWatch evaluates at most 7 days for periods of at least an hour');
  });
});
