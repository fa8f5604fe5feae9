import { Template } from 'aws-cdk-lib/assertions';
import { newServingTable, newStack, onlyResource } from './util';

/** The dashboard body as one string (it is a Fn::Join of literals and references). */
function dashboardBody(template: Template): string {
  return JSON.stringify(onlyResource(template, 'AWS::CloudWatch::Dashboard').Properties.DashboardBody);
}

describe('dashboard', () => {
  test('none by default', () => {
    // GIVEN
    const stack = newStack();
    // WHEN
    const prompts = newServingTable(stack);
    // THEN
    expect(prompts.dashboard).toBeUndefined();
    Template.fromStack(stack).resourceCountIs('AWS::CloudWatch::Dashboard', 0);
  });

  test('createDashboard adds one with the table, sync and dead-letter metrics', () => {
    // GIVEN
    const stack = newStack();
    // WHEN
    const prompts = newServingTable(stack, { createDashboard: true });
    // THEN
    expect(prompts.dashboard).toBeDefined();
    const body = dashboardBody(Template.fromStack(stack));
    for (const metric of [
      'ReadThrottleEvents', 'WriteThrottleEvents', 'ThrottledRequests', 'SystemErrors',
      'PromptsWritten', 'PromptsUnchanged', 'PromptsDeleted', 'PromptsFailed', 'SourceThrottles', 'SyncDuration', 'FullSyncSucceeded',
      'Errors', 'Throttles', 'Duration', 'ApproximateNumberOfMessagesVisible',
    ]) {
      expect(body).toContain(`\\"${metric}\\"`);
    }
  });

  test('shows the status of every alarm', () => {
    // GIVEN
    const stack = newStack();
    // WHEN
    newServingTable(stack, { createDashboard: true });
    // THEN
    const body = dashboardBody(Template.fromStack(stack));
    expect(body).toContain('\\"type\\":\\"alarm\\"');
    expect(body.match(/PromptsSyncLagAlarm|PromptsReadThrottleEventsAlarm|PromptsDeadLetterQueueAlarm/g)?.length).toBeGreaterThanOrEqual(3);
  });

  test('has no alarm widget when alarms are off', () => {
    // GIVEN
    const stack = newStack();
    // WHEN
    newServingTable(stack, { createDashboard: true, createAlarms: false });
    // THEN
    expect(dashboardBody(Template.fromStack(stack))).not.toContain('\\"type\\":\\"alarm\\"');
  });

  test('dashboardName names it and implies createDashboard', () => {
    // GIVEN
    const stack = newStack();
    // WHEN
    newServingTable(stack, { dashboardName: 'prompt-serving' });
    // THEN
    Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'prompt-serving' });
  });
});
