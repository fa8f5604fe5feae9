import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatch_actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { logicalId, newCachedTable, newCacheStack, newFunction } from './cache-util';
import { newServingTable, onlyResource } from './util';
import { PromptCache } from '../../src';

const CACHE_ALARMS = ['InvalidationFunctionErrorsAlarm', 'InvalidationIteratorAgeAlarm', 'InvalidationDeadLetterQueueAlarm', 'CacheThrottledCmdsAlarm'];

describe('cache tier metrics', () => {
  test('ThrottledCmds is an AWS/ElastiCache metric with the clusterId dimension, Sum over 5 minutes', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    // WHEN
    const metric = prompts.metricCacheThrottledCmds();
    // THEN
    expect(metric.namespace).toBe('AWS/ElastiCache');
    expect(metric.metricName).toBe('ThrottledCmds');
    expect(metric.statistic).toBe('Sum');
    expect(metric.period.toMinutes()).toBe(5);
    expect(stack.resolve(metric.dimensions)).toEqual({ clusterId: { Ref: logicalId(Template.fromStack(stack), 'AWS::ElastiCache::ServerlessCache', 'PromptsCache') } });
  });

  test('the invalidation metrics: Errors (Sum), IteratorAge (Maximum), the queue depth (Maximum)', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    // WHEN
    const errors = prompts.metricInvalidationFunctionErrors();
    const age = prompts.metricInvalidationFunctionIteratorAge({ period: Duration.minutes(1) });
    const depth = prompts.metricInvalidationDeadLetterQueueApproximateNumberOfMessagesVisible();
    // THEN
    expect([errors.namespace, errors.metricName, errors.statistic]).toEqual(['AWS/Lambda', 'Errors', 'Sum']);
    expect([age.namespace, age.metricName, age.statistic, age.period.toMinutes()]).toEqual(['AWS/Lambda', 'IteratorAge', 'Maximum', 1]);
    expect([depth.namespace, depth.metricName, depth.statistic]).toEqual(['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'Maximum']);
    expect(stack.resolve(errors.dimensions)).toEqual({ FunctionName: { Ref: logicalId(Template.fromStack(stack), 'AWS::Lambda::Function', 'InvalidationFunction') } });
  });

  test('without a cache, the cache metric methods name the missing prop', () => {
    // GIVEN
    const prompts = newServingTable(newCacheStack().stack);
    // WHEN / THEN
    expect(() => prompts.metricInvalidationFunctionErrors()).toThrow(/^metricInvalidationFunctionErrors needs the cache tier: set `cache`/);
    expect(() => prompts.metricCacheThrottledCmds()).toThrow(/^metricCacheThrottledCmds needs the cache tier/);
  });
});

describe('cache tier alarms', () => {
  test('four alarms with their defaults, paging the table\'s alarm actions', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const topic = new sns.Topic(stack, 'Pager');
    // WHEN
    const prompts = newCachedTable(stack, vpc, {}, { alarmActions: [new cloudwatch_actions.SnsAction(topic)] });
    // THEN
    expect(prompts.alarms.map((a) => a.node.id)).toEqual(expect.arrayContaining(CACHE_ALARMS));
    const template = Template.fromStack(stack);
    const alarm = (id: string) => template.findResources('AWS::CloudWatch::Alarm')[logicalId(template, 'AWS::CloudWatch::Alarm', id)].Properties;
    expect(alarm('InvalidationFunctionErrorsAlarm')).toMatchObject({
      MetricName: 'Errors',
      Namespace: 'AWS/Lambda',
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: logicalId(template, 'AWS::SNS::Topic', 'Pager') }],
    });
    expect(alarm('InvalidationIteratorAgeAlarm')).toMatchObject({
      MetricName: 'IteratorAge', Statistic: 'Maximum', Period: 300, Threshold: 60000, TreatMissingData: 'notBreaching',
    });
    expect(alarm('InvalidationDeadLetterQueueAlarm')).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible', Namespace: 'AWS/SQS', Statistic: 'Maximum', Threshold: 1, TreatMissingData: 'ignore',
    });
    expect(alarm('CacheThrottledCmdsAlarm')).toMatchObject({
      MetricName: 'ThrottledCmds',
      Namespace: 'AWS/ElastiCache',
      Statistic: 'Sum',
      Threshold: 1,
      TreatMissingData: 'notBreaching',
      Dimensions: [{ Name: 'clusterId', Value: { Ref: logicalId(template, 'AWS::ElastiCache::ServerlessCache', 'PromptsCache') } }],
    });
    for (const id of CACHE_ALARMS) {
      expect(alarm(id).AlarmDescription.length).toBeGreaterThan(80);
    }
  });

  test('the write-through alarm: drops plus failures of the invalidation function (EMF, namespace CdkPromptServing), Sum over 5 minutes', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    const prompts = newCachedTable(stack, vpc);
    // THEN
    expect(prompts.alarms.map((a) => a.node.id)).toContain('WriteThroughAlarm');
    const template = Template.fromStack(stack);
    const table = { Ref: logicalId(template, 'AWS::DynamoDB::GlobalTable', 'Table') };
    const metric = (id: string, name: string) => ({
      Id: id,
      MetricStat: {
        Metric: { Namespace: 'CdkPromptServing', MetricName: name, Dimensions: [{ Name: 'TableName', Value: table }] },
        Period: 300,
        Stat: 'Sum',
      },
      ReturnData: false,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'FILL(drops, 0) + FILL(failures, 0)' }),
        metric('drops', 'WriteThroughDrops'),
        metric('failures', 'WriteThroughFailures'),
      ]),
      Threshold: 1,
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmDescription: Match.stringLikeRegexp('could not write changes through'),
    });
  });

  test('the write-through alarm can be turned off like every cache alarm', () => {
    const { stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc, { writeThroughAlarm: { enabled: false } });
    expect(prompts.alarms.map((a) => a.node.id)).not.toContain('WriteThroughAlarm');
  });

  test('options change one alarm or leave it out', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    const prompts = newCachedTable(stack, vpc, {
      invalidationIteratorAgeAlarm: { threshold: 5_000, evaluationPeriods: 3, period: Duration.minutes(1) },
      throttledCmdsAlarm: { enabled: false },
    });
    // THEN
    expect(prompts.alarms.map((a) => a.node.id)).not.toContain('CacheThrottledCmdsAlarm');
    Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'IteratorAge', Threshold: 5000, EvaluationPeriods: 3, DatapointsToAlarm: 3, Period: 60,
    });
  });

  test('createAlarms: false leaves the cache alarms out too', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    const prompts = newCachedTable(stack, vpc, {}, { createAlarms: false });
    // THEN
    expect(prompts.alarms).toEqual([]);
    Template.fromStack(stack).resourceCountIs('AWS::CloudWatch::Alarm', 0);
  });

  test.each<[string, Record<string, unknown>, RegExp]>([
    ['a negative threshold', { invalidationFunctionErrorsAlarm: { threshold: -1 } }, /^`invalidationFunctionErrorsAlarm.threshold` must be a number of 0 or more, got -1$/],
    ['a fractional period', { throttledCmdsAlarm: { period: Duration.seconds(90) } }, /^`throttledCmdsAlarm.period` must be a whole number of minutes, got 1 minute 30 seconds$/],
    ['more than a day of short periods', { invalidationDeadLetterQueueAlarm: { period: Duration.minutes(5), evaluationPeriods: 300 } },
      /^`invalidationDeadLetterQueueAlarm.period` × `invalidationDeadLetterQueueAlarm.evaluationPeriods` must be at most 1 day/],
  ])('throws for %s', (_, options, message) => {
    const { stack, vpc } = newCacheStack();
    expect(() => newCachedTable(stack, vpc, options)).toThrow(message);
  });
});

describe('cache tier dashboard', () => {
  test('adds a row of invalidation and cache metrics', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc, {}, { createDashboard: true });
    // THEN
    const body = JSON.stringify(onlyResource(Template.fromStack(stack), 'AWS::CloudWatch::Dashboard').Properties.DashboardBody);
    for (const title of ['Invalidation function errors', 'Invalidation iterator age (ms)', 'Invalidation dead-letter queue messages', 'Cache throttled commands']) {
      expect(body).toContain(title);
    }
    expect(body).toContain('\\"ThrottledCmds\\"');
    expect(body).toContain('\\"IteratorAge\\"');
    expect(body).toContain('\\"clusterId\\"');
  });
});

describe('cdk-nag AwsSolutionsChecks with a cache', () => {
  function vpcWithFlowLogs(stack: ReturnType<typeof newCacheStack>['stack']): ec2.Vpc {
    // The app's VPC: flow logs on, as AwsSolutions-VPC7 asks of any VPC (not a resource of this library).
    return new ec2.Vpc(stack, 'AppVpc', { maxAzs: 2, natGateways: 0, subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }], flowLogs: { all: {} } });
  }

  test.each<[string, (vpc: ec2.IVpc) => PromptCache]>([
    ['a serverless cache', (vpc) => PromptCache.serverless({ vpc, dynamoDbGatewayEndpoint: true, maxEcpuPerSecond: 10_000 })],
    ['a replication group', (vpc) => PromptCache.replicationGroup({ vpc })],
  ])('finds nothing unacknowledged with %s, a reader and a dashboard', (_, make) => {
    // GIVEN
    const { app, stack } = newCacheStack();
    const vpc = vpcWithFlowLogs(stack);
    const prompts = newServingTable(stack, { cache: make(vpc), createDashboard: true });
    prompts.addReader(newFunction(stack, 'Reader', vpc));
    // WHEN
    const report = new AwsSolutionsChecks(app).validateScope(prompts);
    // THEN
    expect(report.violations).toEqual([]);
  });
});

test('the alarms are real CloudWatch alarms built from the metric methods', () => {
  const { stack, vpc } = newCacheStack();
  const prompts = newCachedTable(stack, vpc);
  const alarm = prompts.alarms.find((a) => a.node.id === 'CacheThrottledCmdsAlarm')!;
  expect(alarm).toBeInstanceOf(cloudwatch.Alarm);
  expect(stack.resolve((alarm.metric as cloudwatch.Metric).dimensions)).toEqual(stack.resolve(prompts.metricCacheThrottledCmds().dimensions));
});
