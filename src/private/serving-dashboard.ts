import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';

export const DASHBOARD_WIDGET_WIDTH = 8;
export const DASHBOARD_WIDGET_HEIGHT = 6;

/**
 * The metric methods the dashboard graphs. `PromptServingTable` has them all; taking them as an argument keeps
 * this helper from importing the construct back.
 */
export interface ServingDashboardMetricSource {
  metricReadThrottleEvents(): cloudwatch.IMetric;
  metricWriteThrottleEvents(): cloudwatch.IMetric;
  metricThrottledRequestsForOperation(operation: dynamodb.Operation, props?: cloudwatch.MetricOptions): cloudwatch.IMetric;
  metricSystemErrorsForOperations(): cloudwatch.IMetric;
  metricPromptsWritten(): cloudwatch.IMetric;
  metricPromptsUnchanged(): cloudwatch.IMetric;
  metricPromptsDeleted(): cloudwatch.IMetric;
  metricPromptsFailed(): cloudwatch.IMetric;
  metricFullSyncSucceeded(): cloudwatch.IMetric;
  metricSourceThrottles(): cloudwatch.IMetric;
  metricSyncDuration(): cloudwatch.IMetric;
  metricSyncFunctionErrors(): cloudwatch.IMetric;
  metricSyncFunctionThrottles(): cloudwatch.IMetric;
  metricSyncFunctionDuration(): cloudwatch.IMetric;
  metricDeadLetterQueueApproximateNumberOfMessagesVisible(): cloudwatch.IMetric;
}

/** What the dashboard shows. */
export interface ServingDashboardInputs {
  readonly dashboardName?: string;
  readonly metrics: ServingDashboardMetricSource;
  /** Shown in an alarm status widget when there are any. */
  readonly alarms: cloudwatch.IAlarm[];
  /** Further rows (the cache tier's), after the sync rows and before the alarms. */
  readonly extraRows?: cloudwatch.IWidget[][];
}

/** A dashboard of the same metrics the alarms use, in three rows (table, sync results, sync function) and any extra. */
export function createServingDashboard(scope: Construct, inputs: ServingDashboardInputs): cloudwatch.Dashboard {
  const m = inputs.metrics;
  const graph = (title: string, left: cloudwatch.IMetric[], stacked = false) =>
    new cloudwatch.GraphWidget({ title, left, stacked, width: DASHBOARD_WIDGET_WIDTH, height: DASHBOARD_WIDGET_HEIGHT });
  const { GET_ITEM, BATCH_GET_ITEM, QUERY, TRANSACT_WRITE_ITEMS } = dynamodb.Operation;

  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', { dashboardName: inputs.dashboardName });
  dashboard.addWidgets(
    graph('Table throttle events', [m.metricReadThrottleEvents(), m.metricWriteThrottleEvents()]),
    graph('Throttled requests by operation', [GET_ITEM, BATCH_GET_ITEM, QUERY, TRANSACT_WRITE_ITEMS].map(
      (operation) => m.metricThrottledRequestsForOperation(operation, { label: operation }))),
    graph('Table system errors', [m.metricSystemErrorsForOperations()]),
  );
  dashboard.addWidgets(
    graph('Prompts per sync', [
      m.metricPromptsWritten(),
      m.metricPromptsUnchanged(),
      m.metricPromptsDeleted(),
      m.metricPromptsFailed(),
    ], true),
    graph('Full syncs succeeded and source throttles', [
      m.metricFullSyncSucceeded(),
      m.metricSourceThrottles(),
    ]),
    graph('Sync duration (ms)', [m.metricSyncDuration()]),
  );
  dashboard.addWidgets(
    graph('Sync function errors and throttles', [
      m.metricSyncFunctionErrors(),
      m.metricSyncFunctionThrottles(),
    ]),
    graph('Sync function duration (ms)', [m.metricSyncFunctionDuration()]),
    graph('Dead-letter queue messages', [m.metricDeadLetterQueueApproximateNumberOfMessagesVisible()]),
  );
  for (const row of inputs.extraRows ?? []) {
    dashboard.addWidgets(...row);
  }
  if (inputs.alarms.length > 0) {
    dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({
      title: 'Alarms',
      alarms: inputs.alarms,
      width: DASHBOARD_WIDGET_WIDTH * 3,
    }));
  }
  return dashboard;
}
