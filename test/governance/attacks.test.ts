/**
 * Attacks on the release path no earlier review named: duplicated schedule events racing one rollout, and the
 * caller verification against principal forms a label-scoped grant must never widen.
 */
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CONTROLLER, OPERATOR, PIPELINE, auditRows, labelRow, useGovernance } from './fixture';
import { CloudWatchAlarmStates, RolloutController } from '../../src/governance/controller';
import { authorizationProblem, ReleaseScope } from '../../src/governance/principal';
import { serve } from '../../src/governance/release.lambda';
import { ActivationGate } from '../../src/write/gate';
import { registryKey } from '../../src/write/label-item';
import { syncVersions } from '../admin/fixture';

const fx = useGovernance();

/** A gate that holds every caller until `count` callers are waiting, then allows them all. */
function barrierGate(count: number): ActivationGate {
  let waiting = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => { release = resolve; });
  return {
    check: async () => {
      waiting += 1;
      if (waiting >= count) release();
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 3_000))]);
      return { allow: true, reason: 'test barrier' };
    },
  };
}

/** A rollout of v2 on `production` at 10 % with steps 25 and 50 every minute, its next step due. */
async function startDueRollout(alarms: string[] = []): Promise<void> {
  await syncVersions(fx.table, 'greeting', ['one', 'two']);
  await fx.engine.setLabel({ action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }, PIPELINE);
  await fx.engine.startRollout({
    action: 'rollout-start',
    promptId: 'greeting',
    label: 'production',
    version: 2,
    percentBp: 1000,
    stepsBp: [2500, 5000],
    stepIntervalSeconds: 60,
    alarms,
  }, OPERATOR);
  fx.clock.ms += 61_000;
}

describe('duplicated schedule events', () => {
  test('two scheduled passes racing one due step move the rollout one step, not two', async () => {
    // GIVEN a rollout at 10 % with steps 25 and 50 every minute, its step due
    await startDueRollout();
    // and a gate both passes reach before either writes (a slow gate widens the window; a duplicated event fills it)
    const engine = fx.makeEngine({ gate: barrierGate(2) });
    const alarms = new CloudWatchAlarmStates(new CloudWatchClient({ endpoint: fx.aws.endpoint, region: 'us-east-1' }));
    const first = new RolloutController(engine, alarms, CONTROLLER, () => fx.clock.ms);
    const second = new RolloutController(engine, alarms, CONTROLLER, () => fx.clock.ms);
    // WHEN the two passes run at once
    const [a, b] = await Promise.all([first.tick(), second.tick()]);
    // THEN the rollout took one step (to 25 %), and one step is audited
    expect((await labelRow(fx.table, 'greeting', 'production'))?.rollout?.percent_bp).toBe(2500);
    expect((await auditRows(fx.table, 'greeting')).filter((r) => r.action === 'rollout-step')).toHaveLength(1);
    expect([...a, ...b].filter((x) => x.outcome === 'stepped')).toHaveLength(2);
    expect([...a, ...b].filter((x) => x.result?.replayed === true)).toHaveLength(1);
  });

  test('a manual step winning the race with a scheduled step is not followed by a second step', async () => {
    // GIVEN a rollout at 10 % with steps 25 and 50 every minute, its step due
    await startDueRollout();
    // and an operator stepping to 25 % while the scheduled pass waits for its gate
    let raced = false;
    const gate: ActivationGate = {
      check: async () => {
        if (!raced) {
          raced = true;
          await fx.engine.stepRollout({ action: 'rollout-step', promptId: 'greeting', label: 'production' }, OPERATOR);
        }
        return { allow: true, reason: 'test' };
      },
    };
    const alarms = new CloudWatchAlarmStates(new CloudWatchClient({ endpoint: fx.aws.endpoint, region: 'us-east-1' }));
    const controller = new RolloutController(fx.makeEngine({ gate }), alarms, CONTROLLER, () => fx.clock.ms);
    // WHEN the pass runs
    const actions = await controller.tick();
    // THEN the rollout is at the operator's 25 %, not stepped on to 50 %
    expect((await labelRow(fx.table, 'greeting', 'production'))?.rollout?.percent_bp).toBe(2500);
    expect(actions).toEqual([expect.objectContaining({ outcome: 'not-due' })]);
    expect((await auditRows(fx.table, 'greeting')).filter((r) => r.action === 'rollout-step')).toHaveLength(1);
  });

  test('a duplicated alarm event aborts once, and a finished rollout\'s registry item put back by hand moves nothing', async () => {
    // GIVEN a rollout naming an alarm, and a copy of its registry item
    await startDueRollout(['checkout-errors']);
    const entry = await fx.table.client.send(new GetItemCommand({ TableName: fx.table.tableName, Key: registryKey('greeting', 'production'), ConsistentRead: true }));
    fx.aws.alarmStates.set('checkout-errors', 'ALARM');
    // WHEN the alarm's event arrives twice at once, then the old registry item is put back and a pass runs
    const [a, b] = await Promise.all([fx.controller.onAlarm('checkout-errors'), fx.controller.onAlarm('checkout-errors')]);
    const before = await labelRow(fx.table, 'greeting', 'production');
    await fx.table.client.send(new PutItemCommand({ TableName: fx.table.tableName, Item: entry.Item! }));
    const tick = await fx.controller.tick();
    // THEN one abort is recorded, the put-back entry is dropped, and the label is as the abort left it
    expect((await auditRows(fx.table, 'greeting')).filter((r) => r.action === 'rollout-abort')).toHaveLength(1);
    expect([...a, ...b].map((x) => x.outcome).sort()).toEqual(['aborted', 'stale-entry-dropped']);
    expect(tick).toEqual([expect.objectContaining({ outcome: 'stale-entry-dropped' })]);
    expect(await labelRow(fx.table, 'greeting', 'production')).toEqual(before);
  });
});

describe('caller verification', () => {
  const scoped: ReleaseScope[] = [{ principal: 'arn:aws:iam::111122223333:role/team/Deployer', labels: ['prod'] }];
  test.each([
    ['a session of the scoped role may move its label', 'arn:aws:sts::111122223333:assumed-role/Deployer/s1', 'prod', undefined],
    ['a session of the scoped role may not move a label that only starts like it', 'arn:aws:sts::111122223333:assumed-role/Deployer/s1', 'prod-eu', 'may move only'],
    ['the same role name in another account is another principal', 'arn:aws:sts::444455556666:assumed-role/Deployer/s1', 'prod', 'protected'],
    ['a federated user is refused', 'arn:aws:sts::111122223333:federated-user/Deployer', 'staging', 'neither'],
    ['the account root is refused', 'arn:aws:iam::111122223333:root', 'staging', 'neither'],
    ['an IAM user named like the scoped role is not the role', 'arn:aws:iam::111122223333:user/Deployer', 'prod', 'protected'],
    ['a session name cannot smuggle a role name', 'arn:aws:sts::111122223333:assumed-role/Other/Deployer', 'prod', 'protected'],
    ['a role ARN passed as caller with a path naming the scoped role is the last segment', 'arn:aws:iam::111122223333:role/Deployer/Other', 'prod', 'protected'],
  ])('%s', (_name, caller, label, problem) => {
    const answer = authorizationProblem(caller, scoped, { label });
    if (problem === undefined) expect(answer).toBeUndefined();
    else expect(answer).toContain(problem);
  });
});

describe('client tokens across principals and requests', () => {
  test('another principal sending the same token and request moves on its own account, never replays the first one\'s answer', async () => {
    // GIVEN the pipeline committed an activation of v2 with token t-1
    await syncVersions(fx.table, 'greeting', ['one', 'two', 'three']);
    await fx.engine.activate({ action: 'activate', promptId: 'greeting', version: 1, clientToken: 'setup' }, PIPELINE);
    const first = await fx.engine.activate({ action: 'activate', promptId: 'greeting', version: 2, clientToken: 't-1' }, PIPELINE);
    // WHEN the operator sends the very same body
    const second = await fx.engine.activate({ action: 'activate', promptId: 'greeting', version: 2, clientToken: 't-1' }, OPERATOR);
    // THEN it is answered on its own (nothing to move), not as a replay of the pipeline's move
    expect(first).toMatchObject({ changed: true });
    expect(second.replayed).toBeUndefined();
    expect(second).toMatchObject({ changed: false });
  });

  test('one token for a move of another prompt is refused, not replayed', async () => {
    // GIVEN
    await syncVersions(fx.table, 'greeting', ['one', 'two']);
    await syncVersions(fx.table, 'farewell', ['one', 'two']);
    await fx.engine.activate({ action: 'activate', promptId: 'greeting', version: 1, clientToken: 't-2' }, PIPELINE);
    // WHEN / THEN
    await expect(fx.engine.activate({ action: 'activate', promptId: 'farewell', version: 1, clientToken: 't-2' }, PIPELINE))
      .rejects.toMatchObject({ code: 'ClientTokenReused' });
  });
});

describe('hostile bodies', () => {
  const event = (body: string) => ({ body, requestContext: { http: { method: 'POST' }, authorizer: { iam: { userArn: OPERATOR } } } });
  test.each([
    ['a label hidden in __proto__', '{"__proto__":{"label":"production"},"action":"set-label","promptId":"greeting","version":1}', /`label`/],
    ['a label named __proto__', '{"action":"set-label","promptId":"greeting","label":"__proto__","version":1}', /label name/],
    ['a label named constructor with a capital', '{"action":"set-label","promptId":"greeting","label":"Constructor","version":1}', /label name/],
    ['a label with a Cyrillic o', '{"action":"set-label","promptId":"greeting","label":"pr\\u043ed","version":1}', /label name/],
    ['a version of -0', '{"action":"set-label","promptId":"greeting","label":"production","version":-0}', /`version`/],
    ['a version of 1e309', '{"action":"set-label","promptId":"greeting","label":"production","version":1e309}', /`version`/],
    ['a percent as a string', '{"action":"rollout-start","promptId":"greeting","label":"production","version":2,"percent":"50"}', /`percent`/],
    ['a prompt id named constructor', '{"action":"activate","promptId":"constructor","version":1}', /not found|no prompt|constructor/],
  ])('%s is refused, nothing written', async (_name, body, message) => {
    // GIVEN
    await syncVersions(fx.table, 'greeting', ['one', 'two']);
    // WHEN
    const answer = await serve(event(body), fx.engine, []);
    // THEN
    expect(answer.statusCode).toBeGreaterThanOrEqual(400);
    expect(JSON.parse(answer.body).error.message).toMatch(message);
    expect(await labelRow(fx.table, 'greeting', 'production')).toBeUndefined();
  });
});
