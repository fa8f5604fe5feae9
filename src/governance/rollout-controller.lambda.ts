/**
 * The rollout controller function: invoked by an EventBridge schedule (rate 1 minute) to check alarms and take
 * due steps, and by an EventBridge rule on CloudWatch "Alarm State Change" events (to ALARM) of the alarms the
 * construct watches, to abort at once. See ./controller.ts.
 */
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { CloudWatchAlarmStates, ControllerAction, RolloutController } from './controller';
import { Deadline, TABLE_CALL_LIMIT_MS, runWithDeadline, withCallDeadlines } from './deadline';
import { SDK_CLIENT_OPTIONS, engineFromEnv, governanceDynamoDBClient } from './engine-from-env';
import type { LambdaContext } from './release.lambda';
import { requireEnv } from '../schema';
import { GovernanceEnv } from '../write/governance-env';

/** The EventBridge events this function receives (scheduled, alarm state change). */
export interface ControllerEvent {
  readonly 'source'?: string;
  readonly 'detail-type'?: string;
  readonly 'detail'?: { readonly alarmName?: unknown; readonly state?: { readonly value?: unknown } };
}

export const ALARM_STATE_CHANGE = 'CloudWatch Alarm State Change';

const client = governanceDynamoDBClient();
let controller: RolloutController | undefined;
/** The function's timeout (the construct's), when Lambda's context gives no remaining time. */
const FALLBACK_REMAINING_MS = 60_000;

/** Every call of a pass is bounded by the invocation's remaining time (see ./deadline.ts). */
export async function handler(event: ControllerEvent, context?: LambdaContext): Promise<{ actions: ControllerAction[] }> {
  return runWithDeadline(Deadline.fromContext(context, FALLBACK_REMAINING_MS), () => run(event));
}

async function run(event: ControllerEvent): Promise<{ actions: ControllerAction[] }> {
  controller ??= new RolloutController(
    engineFromEnv(client, 'rollout controller'),
    new CloudWatchAlarmStates(withCallDeadlines(new CloudWatchClient(SDK_CLIENT_OPTIONS), TABLE_CALL_LIMIT_MS)),
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
