import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { PromptServingTable } from '../prompt-serving-table';

const WIDTH = 8;
const HEIGHT = 6;

/** A dashboard of the same metrics the alarms use, in three rows: table, sync results, sync function. */
export function createServingDashboard(servingTable: PromptServingTable, dashboardName?: string): cloudwatch.Dashboard {
  const graph = (title: string, left: cloudwatch.IMetric[], stacked = false) =>
    new cloudwatch.GraphWidget({ title, left, stacked, width: WIDTH, height: HEIGHT });
  const { GET_ITEM, BATCH_GET_ITEM, QUERY, TRANSACT_WRITE_ITEMS } = dynamodb.Operation;

  const dashboard = new cloudwatch.Dashboard(servingTable, 'Dashboard', { dashboardName });
  dashboard.addWidgets(
    graph('Table throttle events', [servingTable.metricReadThrottleEvents(), servingTable.metricWriteThrottleEvents()]),
    graph('Throttled requests by operation', [GET_ITEM, BATCH_GET_ITEM, QUERY, TRANSACT_WRITE_ITEMS].map(
      (operation) => servingTable.metricThrottledRequestsForOperation(operation, { label: operation }))),
    graph('Table system errors', [servingTable.metricSystemErrorsForOperations()]),
  );
  dashboard.addWidgets(
    graph('Prompts per sync', [
      servingTable.metricPromptsWritten(),
      servingTable.metricPromptsUnchanged(),
      servingTable.metricPromptsDeleted(),
      servingTable.metricPromptsFailed(),
    ], true),
    graph('Full syncs succeeded and source throttles', [
      servingTable.metricFullSyncSucceeded(),
      servingTable.metricSourceThrottles(),
    ]),
    graph('Sync duration (ms)', [servingTable.metricSyncDuration()]),
  );
  dashboard.addWidgets(
    graph('Sync function errors and throttles', [
      servingTable.metricSyncFunctionErrors(),
      servingTable.metricSyncFunctionThrottles(),
    ]),
    graph('Sync function duration (ms)', [servingTable.metricSyncFunctionDuration()]),
    graph('Dead-letter queue messages', [servingTable.metricDeadLetterQueueApproximateNumberOfMessagesVisible()]),
  );
  if (servingTable.alarms.length > 0) {
    dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({
      title: 'Alarms',
      alarms: servingTable.alarms,
      width: WIDTH * 3,
    }));
  }
  return dashboard;
}
