import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';

/** The period of every metric the table's `metricXxx` methods return. */
export const DEFAULT_METRIC_PERIOD = Duration.minutes(5);

const { GET_ITEM, BATCH_GET_ITEM, QUERY, SCAN, PUT_ITEM, UPDATE_ITEM, TRANSACT_WRITE_ITEMS } = dynamodb.Operation;
/** The operations whose throttling readers and the sync feel; summed by `metricThrottledRequestsForOperations`. */
export const THROTTLE_OPERATIONS = [GET_ITEM, BATCH_GET_ITEM, QUERY, TRANSACT_WRITE_ITEMS];
/** Every operation the library calls; summed by `metricSystemErrorsForOperations` (CloudWatch allows 10 per expression). */
export const TABLE_OPERATIONS = [GET_ITEM, BATCH_GET_ITEM, QUERY, SCAN, PUT_ITEM, UPDATE_ITEM, TRANSACT_WRITE_ITEMS];

/** A DynamoDB metric of `table` summed over `operations` (one math expression, Sum over the period). */
export function sumForOperations(table: dynamodb.TableBaseV2, metricName: string, operations: dynamodb.Operation[],
  props?: cloudwatch.MetricOptions): cloudwatch.IMetric {
  const usingMetrics: Record<string, cloudwatch.IMetric> = {};
  for (const operation of operations) {
    usingMetrics[operation.toLowerCase()] = table.metric(metricName, {
      statistic: cloudwatch.Stats.SUM,
      ...props,
      dimensionsMap: { TableName: table.tableName, Operation: operation },
    });
  }
  return new cloudwatch.MathExpression({
    expression: Object.keys(usingMetrics).join(' + '),
    usingMetrics,
    label: `${metricName} (${operations.join(', ')})`,
    period: props?.period ?? DEFAULT_METRIC_PERIOD,
  });
}

/** A metric the sync emits in `namespace` with the `TableName` dimension. */
export function syncMetric(namespace: string, tableName: string, metricName: string, statistic: string,
  props?: cloudwatch.MetricOptions): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace,
    metricName,
    dimensionsMap: { TableName: tableName },
    statistic,
    period: DEFAULT_METRIC_PERIOD,
    ...props,
  });
}
