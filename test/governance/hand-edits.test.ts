/**
 * The rollout controller and the release engine against registry and rollout items broken by hand: a live rollout
 * stays under its alarm, an entry nothing can ever act on is dropped once, and numbers out of range are refused
 * with a reason instead of an exception.
 */
import { PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CONTROLLER, OPERATOR, PIPELINE, labelRow, useGovernance } from './fixture';
import { ReleaseError } from '../../src/governance/errors';
import { PARTITION_KEY, SORT_KEY, labelSortKey } from '../../src/schema';
import { ROLLOUTS_ID, registryKey } from '../../src/write/label-item';
import { syncVersions } from '../admin/fixture';

const fx = useGovernance();

async function startRollout(options: { stepIntervalSeconds?: number } = {}): Promise<void> {
  await syncVersions(fx.table, 'greeting', ['one', 'two']);
  await fx.engine.setLabel({ action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }, PIPELINE);
  await fx.engine.startRollout({
    action: 'rollout-start',
    promptId: 'greeting',
    label: 'production',
    version: 2,
    percentBp: 1000,
    stepsBp: [5000],
    stepIntervalSeconds: options.stepIntervalSeconds,
    alarms: ['checkout-errors'],
  }, OPERATOR);
}

async function registryItems(): Promise<number> {
  const out = await fx.table.client.send(new QueryCommand({
    TableName: fx.table.tableName,
    ConsistentRead: true,
    KeyConditionExpression: '#pk = :r',
    ExpressionAttributeNames: { '#pk': PARTITION_KEY },
    ExpressionAttributeValues: { ':r': { S: ROLLOUTS_ID } },
  }));
  return out.Count ?? 0;
}

test('a registry item whose alarms were set to a string by hand still lets its alarm abort the live rollout', async () => {
  // GIVEN
  await startRollout();
  await fx.table.client.send(new UpdateItemCommand({
    TableName: fx.table.tableName,
    Key: registryKey('greeting', 'production'),
    UpdateExpression: 'SET alarms = :s',
    ExpressionAttributeValues: { ':s': { S: 'checkout-errors' } },
  }));
  fx.aws.alarmStates.set('checkout-errors', 'ALARM');
  // WHEN
  const onAlarm = await fx.controller.onAlarm('checkout-errors');
  // THEN
  expect(onAlarm).toEqual([expect.objectContaining({ promptId: 'greeting', label: 'production', outcome: 'aborted' })]);
  expect((await labelRow(fx.table, 'greeting', 'production'))?.rollout).toBeUndefined();
});

test('a registry item whose alarms are broken is aborted by the scheduled pass too', async () => {
  // GIVEN
  await startRollout();
  await fx.table.client.send(new UpdateItemCommand({
    TableName: fx.table.tableName,
    Key: registryKey('greeting', 'production'),
    UpdateExpression: 'SET alarms = :s',
    ExpressionAttributeValues: { ':s': { S: 'checkout-errors' } },
  }));
  fx.aws.alarmStates.set('checkout-errors', 'ALARM');
  // WHEN
  const actions = await fx.controller.tick();
  // THEN
  expect(actions).toEqual([expect.objectContaining({ outcome: 'aborted', detail: 'checkout-errors' })]);
});

test('a registry entry naming a label that can never exist is dropped once, not failed every minute', async () => {
  // GIVEN
  await fx.table.client.send(new PutItemCommand({
    TableName: fx.table.tableName,
    Item: {
      ...registryKey('greeting', 'Not A Label!'),
      target_prompt_id: { S: 'greeting' },
      label: { S: 'Not A Label!' },
      rollout_id: { S: 'abc' },
      alarms: { L: [] },
    },
  }));
  // WHEN
  const first = await fx.controller.tick();
  const second = await fx.controller.tick();
  // THEN
  expect(first).toEqual([expect.objectContaining({ label: 'Not A Label!', outcome: 'stale-entry-dropped', detail: expect.stringMatching(/label can never exist/) })]);
  expect(second).toEqual([]);
  expect(await registryItems()).toBe(0);
});

test('a hand-set step_interval_seconds of 1e15 is refused with a reason by a manual step and the tick, never a RangeError', async () => {
  // GIVEN
  await startRollout({ stepIntervalSeconds: 600 });
  await fx.table.client.send(new UpdateItemCommand({
    TableName: fx.table.tableName,
    Key: { [PARTITION_KEY]: { S: 'greeting' }, [SORT_KEY]: { S: labelSortKey('production') } },
    UpdateExpression: 'SET #r.step_interval_seconds = :big',
    ExpressionAttributeNames: { '#r': 'rollout' },
    ExpressionAttributeValues: { ':big': { N: '1000000000000000' } },
  }));
  fx.clock.ms += 3600_000;
  // WHEN
  const manual = await fx.engine.stepRollout({ action: 'rollout-step', promptId: 'greeting', label: 'production' }, OPERATOR).catch((e: unknown) => e);
  const tick = await fx.controller.tick();
  // THEN
  expect(manual).toBeInstanceOf(ReleaseError);
  expect(manual).toMatchObject({ code: 'Conflict', message: expect.stringMatching(/step_interval_seconds 1000000000000000 is not from 60 to 604800.*abort it/) });
  expect(tick).toEqual([expect.objectContaining({ outcome: 'failed', detail: expect.not.stringMatching(/RangeError/) })]);
  // An abort still ends it.
  const aborted = await fx.engine.abortRollout({ action: 'rollout-abort', promptId: 'greeting', label: 'production' }, CONTROLLER);
  expect(aborted.changed).toBe(true);
  expect((await labelRow(fx.table, 'greeting', 'production'))?.rollout).toBeUndefined();
});
