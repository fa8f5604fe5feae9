/** The readers' provenance metrics on the construct: dashboard row and `readerFallbackAlarm`. */
import { Match, Template } from 'aws-cdk-lib/assertions';
import { newServingTable, newStack, onlyResource } from './util';

const READER_METRICS = [
  'ReaderServedL1', 'ReaderServedL2', 'ReaderServedTable', 'ReaderServedFallback', 'ReaderServedStale', 'ReaderTableReads', 'ReaderL2Errors',
];

test('the dashboard graphs every reader metric in the reader namespace, by table name', () => {
  // GIVEN
  const stack = newStack();
  // WHEN
  newServingTable(stack, { createDashboard: true });
  // THEN
  const body = JSON.stringify(onlyResource(Template.fromStack(stack), 'AWS::CloudWatch::Dashboard').Properties.DashboardBody);
  for (const metric of READER_METRICS) expect(body).toContain(`[\\"CdkPromptServing\\",\\"${metric}\\",\\"TableName\\",\\"`);
  expect(body).toContain('Prompt reads by tier');
});

test('no reader alarm by default', () => {
  // GIVEN
  const stack = newStack();
  // WHEN
  const prompts = newServingTable(stack);
  // THEN
  Template.fromStack(stack).resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { MetricName: 'ReaderServedFallback' }, 0);
  expect(prompts.alarms.map((a) => a.node.id)).not.toContain('ReaderFallbackAlarm');
});

test('readerFallbackAlarm: {} alarms on one fallback served in 5 minutes, missing data not breaching', () => {
  // GIVEN
  const stack = newStack();
  // WHEN
  const prompts = newServingTable(stack, { readerFallbackAlarm: {} });
  // THEN
  Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Alarm', {
    Namespace: 'CdkPromptServing',
    MetricName: 'ReaderServedFallback',
    Dimensions: [{ Name: 'TableName', Value: { Ref: Match.anyValue() } }],
    Statistic: 'Sum',
    Period: 300,
    Threshold: 1,
    EvaluationPeriods: 1,
    DatapointsToAlarm: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
  });
  expect(prompts.alarms.map((a) => a.node.id)).toContain('ReaderFallbackAlarm');
});

test('readerFallbackAlarm takes the alarm options; createAlarms: false and enabled: false leave it out', () => {
  // GIVEN
  const [tuned, off, disabled] = [newStack(), newStack(), newStack()];
  // WHEN
  newServingTable(tuned, { readerFallbackAlarm: { threshold: 5, evaluationPeriods: 2 } });
  newServingTable(off, { readerFallbackAlarm: {}, createAlarms: false });
  newServingTable(disabled, { readerFallbackAlarm: { enabled: false } });
  // THEN
  Template.fromStack(tuned).hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'ReaderServedFallback', Threshold: 5, EvaluationPeriods: 2 });
  for (const stack of [off, disabled]) {
    Template.fromStack(stack).resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { MetricName: 'ReaderServedFallback' }, 0);
  }
});

test('throws if readerFallbackAlarm.threshold is negative', () => {
  // GIVEN
  const stack = newStack();
  // THEN
  expect(() => newServingTable(stack, { readerFallbackAlarm: { threshold: -1 } })).toThrow(/readerFallbackAlarm\.threshold/);
});
