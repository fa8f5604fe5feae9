import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { newServingTable, newStack } from './util';
import { PromptServingTable } from '../../src';

type MetricMethod = (props?: cloudwatch.MetricOptions) => cloudwatch.IMetric;

let stack: Stack;
let prompts: PromptServingTable;
beforeAll(() => {
  // GIVEN
  stack = newStack();
  prompts = newServingTable(stack, { metricsNamespace: 'Team/Prompts' });
});

function describeMetric(metric: cloudwatch.IMetric) {
  const m = metric as cloudwatch.Metric;
  return {
    namespace: m.namespace,
    metricName: m.metricName,
    statistic: m.statistic,
    period: m.period.toSeconds(),
    dimensions: Object.keys(m.dimensions ?? {}),
  };
}

describe('metric methods: official names, default statistic and period', () => {
  test.each<[string, string, string, string]>([
    ['metricReadThrottleEvents', 'AWS/DynamoDB', 'ReadThrottleEvents', 'Sum'],
    ['metricWriteThrottleEvents', 'AWS/DynamoDB', 'WriteThrottleEvents', 'Sum'],
    ['metricPromptsScanned', 'Team/Prompts', 'PromptsScanned', 'Sum'],
    ['metricPromptsUnchanged', 'Team/Prompts', 'PromptsUnchanged', 'Sum'],
    ['metricPromptsWritten', 'Team/Prompts', 'PromptsWritten', 'Sum'],
    ['metricPromptsDeleted', 'Team/Prompts', 'PromptsDeleted', 'Sum'],
    ['metricPromptsFailed', 'Team/Prompts', 'PromptsFailed', 'Sum'],
    ['metricSourceThrottles', 'Team/Prompts', 'SourceThrottles', 'Sum'],
    ['metricSyncDuration', 'Team/Prompts', 'SyncDuration', 'Average'],
    ['metricFullSyncSucceeded', 'Team/Prompts', 'FullSyncSucceeded', 'Sum'],
  ])('%s is %s %s, %s over 5 minutes, by TableName', (method, namespace, metricName, statistic) => {
    // WHEN
    const metric = ((prompts as any)[method] as MetricMethod).call(prompts);
    // THEN
    expect(describeMetric(metric)).toEqual({ namespace, metricName, statistic, period: 300, dimensions: ['TableName'] });
  });

  test.each<[string, string, string, string, string]>([
    ['metricSyncFunctionErrors', 'AWS/Lambda', 'Errors', 'Sum', 'FunctionName'],
    ['metricSyncFunctionThrottles', 'AWS/Lambda', 'Throttles', 'Sum', 'FunctionName'],
    ['metricSyncFunctionDuration', 'AWS/Lambda', 'Duration', 'Average', 'FunctionName'],
    ['metricDeadLetterQueueApproximateNumberOfMessagesVisible', 'AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'Maximum', 'QueueName'],
  ])('%s is %s %s, %s over 5 minutes, by %s', (method, namespace, metricName, statistic, dimension) => {
    // WHEN
    const metric = ((prompts as any)[method] as MetricMethod).call(prompts);
    // THEN
    expect(describeMetric(metric)).toEqual({ namespace, metricName, statistic, period: 300, dimensions: [dimension] });
  });

  test('sync metrics carry the table name as TableName, as the handler writes it', () => {
    // WHEN
    const metric = prompts.metricPromptsWritten();
    // THEN
    expect(stack.resolve(metric.dimensions)).toEqual({ TableName: stack.resolve(prompts.table.tableName) });
  });

  test('metricThrottledRequestsForOperation is ThrottledRequests of that operation', () => {
    // WHEN
    const metric = prompts.metricThrottledRequestsForOperation(dynamodb.Operation.GET_ITEM);
    // THEN
    expect(describeMetric(metric)).toEqual({
      namespace: 'AWS/DynamoDB', metricName: 'ThrottledRequests', statistic: 'Sum', period: 300, dimensions: ['Operation', 'TableName'],
    });
  });

  test('metricThrottledRequestsForOperations sums GetItem, BatchGetItem, Query and TransactWriteItems', () => {
    // WHEN
    const expression = prompts.metricThrottledRequestsForOperations() as cloudwatch.MathExpression;
    // THEN
    expect(expression.expression).toEqual('getitem + batchgetitem + query + transactwriteitems');
    expect(Object.values(expression.usingMetrics).map((m) => (m as cloudwatch.Metric).dimensions?.Operation))
      .toEqual(['GetItem', 'BatchGetItem', 'Query', 'TransactWriteItems']);
    expect(Object.values(expression.usingMetrics).map((m) => (m as cloudwatch.Metric).metricName))
      .toEqual(Array(4).fill('ThrottledRequests'));
    expect(expression.period.toSeconds()).toEqual(300);
  });

  test('metricSystemErrorsForOperations sums SystemErrors of all 7 operations the library calls', () => {
    // WHEN
    const expression = prompts.metricSystemErrorsForOperations() as cloudwatch.MathExpression;
    // THEN
    expect(Object.values(expression.usingMetrics).map((m) => (m as cloudwatch.Metric).dimensions?.Operation))
      .toEqual(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'PutItem', 'UpdateItem', 'TransactWriteItems']);
    expect(expression.label).toEqual('SystemErrors (GetItem, BatchGetItem, Query, Scan, PutItem, UpdateItem, TransactWriteItems)');
  });

  test('options override the defaults', () => {
    // WHEN
    const metric = prompts.metricPromptsFailed({ period: Duration.minutes(1), statistic: 'Maximum' });
    const expression = prompts.metricSystemErrorsForOperations({ period: Duration.minutes(1) }) as cloudwatch.MathExpression;
    // THEN
    expect(describeMetric(metric)).toMatchObject({ statistic: 'Maximum', period: 60 });
    expect(expression.period.toSeconds()).toEqual(60);
    expect(Object.values(expression.usingMetrics).map((m) => (m as cloudwatch.Metric).period.toSeconds())).toEqual(Array(7).fill(60));
  });
});
