/**
 * The rollout controller function: invoked by an EventBridge schedule (rate 1 minute) to check alarms and take
 * due steps, and by an EventBridge rule on CloudWatch "Alarm State Change" events (to ALARM) of the alarms the
 * construct watches, to abort at once. See ./controller.ts.
 */
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CloudWatchAlarmStates, ControllerAction, RolloutController } from './controller';
import { engineFromEnv } from './engine-from-env';
import { requireEnv } from '../schema';
import { GovernanceEnv } from '../sync/governance-env';

/** The EventBridge events this function receives (scheduled, alarm state change). */
export interface ControllerEvent {
  readonly 'source'?: string;
  readonly 'detail-type'?: string;
  readonly 'detail'?: { readonly alarmName?: unknown; readonly state?: { readonly value?: unknown } };
}

export const ALARM_STATE_CHANGE = 'CloudWatch Alarm State Change';

const client = new DynamoDBClient({});
let controller: RolloutController | undefined;

export async function handler(event: ControllerEvent): Promise<{ actions: ControllerAction[] }> {
  controller ??= new RolloutController(
    engineFromEnv(client, 'rollout controller'),
    new CloudWatchAlarmStates(new CloudWatchClient({})),
    requireEnv(GovernanceEnv.actorArn, 'rollout controller'),
  );
  if (event['detail-type'] === ALARM_STATE_CHANGE) {
    const name = event.detail?.alarmName;
    if (typeof name !== 'string' || event.detail?.state?.value !== 'ALARM') return { actions: [] };
    const actions = await controller.onAlarm(name);
    log(actions);
    // An abort that failed must be retried (Lambda retries asynchronous invocations); the schedule also retries it.
    if (actions.some((a) => a.outcome === 'failed')) throw new Error(`aborting the rollouts watching alarm '${name}' failed; see the log`);
    return { actions };
  }
  const actions = await controller.tick();
  log(actions);
  return { actions };
}

function log(actions: readonly ControllerAction[]): void {
  for (const a of actions) {
    if (a.outcome !== 'not-due') console.log(JSON.stringify({ level: 'INFO', message: 'rollout controller', promptId: a.promptId, label: a.label, outcome: a.outcome, detail: a.detail }));
  }
}
