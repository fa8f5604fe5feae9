import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CONTROLLER, OPERATOR, PIPELINE, auditRows, labelRow, useGovernance } from './fixture';
import { ReleaseError } from '../../src/governance/errors';
import { ReleaseEngine } from '../../src/governance/release';
import { parseReleaseRequest } from '../../src/governance/requests';
import { checksum, contentOf } from '../../src/schema';
import { OPEN_GATE } from '../../src/write/gate';
import { beforeSending, readCurrent, syncVersions, versionItems } from '../admin/fixture';

const fx = useGovernance();
const { table } = fx;

const setLabel = (label: string, version: number, reason?: string) =>
  parseReleaseRequest({ action: 'set-label', promptId: 'greeting', label, version, reason }) as any;

describe('label moves', () => {
  test('set-label writes a full copy of the version as LABEL#<name>, its audit record and one event, in one transaction', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['Hello v1', 'Hello v2']);
    const v1 = (await versionItems(table, 'greeting')).get('v000001')!;
    table.counter.reset();
    // WHEN
    const result = await fx.engine.setLabel(setLabel('production', 1, 'first release'), PIPELINE);
    // THEN
    expect(result).toMatchObject({ promptId: 'greeting', target: 'production', action: 'label', toVersion: 1, changed: true });
    // One move: 3 strongly consistent reads (pointer, version, label), 1 transaction, 1 gate call, 1 event.
    expect(table.counter.snapshot()).toEqual({ GetItem: 3, TransactWriteItems: 1 });
    expect(fx.awsCounter.snapshot()).toEqual({ Invoke: 1, PutEvents: 1 });
    const label = await labelRow(table, 'greeting', 'production');
    expect(label).toMatchObject({
      version: 'LABEL#production',
      label: 'production',
      version_number: 1,
      checksum: v1.checksum,
      text: 'Hello v1',
      status: 'ACTIVE',
      moved_by: PIPELINE,
      moved_at: '2026-12-01T18:00:00.000Z',
      revision: 1,
    });
    expect(checksum(contentOf(label!))).not.toBe(undefined);
    const audit = await auditRows(table, 'greeting');
    expect(audit).toEqual([expect.objectContaining({
      action: 'label', target: 'production', to_version: 1, actor: PIPELINE, reason: 'first release', at: '2026-12-01T18:00:00.000Z',
    })]);
    expect(audit[0].version).toMatch(/^AUDIT#2026-12-01T18:00:00\.000Z#[0-9a-f]{8}$/);
    expect(audit[0].from_version).toBeUndefined();
    expect(audit[0].expires_at).toBeUndefined();
    expect(fx.aws.putEventsCalls).toHaveLength(1);
    expect(fx.aws.events[0]).toMatchObject({
      Source: 'cdk-prompt-serving',
      DetailType: 'Prompt Pointer Moved',
      detail: { prompt_id: 'greeting', action: 'label', target: 'production', to_version: 1, actor: PIPELINE, table_name: table.tableName },
    });
    // The gate saw the candidate's content and identity.
    expect(fx.aws.gateCalls).toEqual([expect.objectContaining({
      promptId: 'greeting', target: 'production', action: 'label', toVersion: 1, checksum: v1.checksum, content: expect.objectContaining({ text: 'Hello v1' }), actor: PIPELINE,
    })]);
  });

  test('moving a label audits from → to; moving it to what it serves writes nothing', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    fx.clock.ms += 60_000;
    // WHEN
    const moved = await fx.engine.setLabel(setLabel('production', 2), OPERATOR);
    table.counter.reset();
    const again = await fx.engine.setLabel(setLabel('production', 2), OPERATOR);
    // THEN
    expect(moved).toMatchObject({ fromVersion: 1, toVersion: 2, changed: true });
    expect(again).toMatchObject({ changed: false });
    expect(table.counter.writes()).toBe(0);
    expect(await labelRow(table, 'greeting', 'production')).toMatchObject({ version_number: 2, text: 'two', revision: 2, moved_by: OPERATOR });
    expect((await auditRows(table, 'greeting')).map((r) => [r.from_version, r.to_version, r.actor])).toEqual([[undefined, 1, PIPELINE], [1, 2, OPERATOR]]);
  });

  test('audit retention sets expires_at from the writer\'s clock', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one']);
    const engine = fx.makeEngine({ retentionSeconds: 86_400 });
    // WHEN
    await engine.setLabel(setLabel('staging', 1), PIPELINE);
    // THEN
    expect((await auditRows(table, 'greeting'))[0].expires_at).toBe(Math.floor(fx.clock.ms / 1000) + 86_400);
  });

  test('activate moves CURRENT through the release path with the sync\'s guard, gated and audited', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two', 'three']);
    // WHEN
    const result = await fx.engine.activate(parseReleaseRequest({ action: 'activate', promptId: 'greeting', version: 1, reason: 'bad v3' }) as any, OPERATOR);
    // THEN
    expect(result).toMatchObject({ target: 'CURRENT', fromVersion: 3, toVersion: 1, changed: true });
    expect(await readCurrent(table, 'greeting')).toMatchObject({ version_number: 1, text: 'one', latest_version_number: 3, activated_by: OPERATOR, revision: 4 });
    expect(await auditRows(table, 'greeting')).toEqual([expect.objectContaining({ action: 'activate', target: 'CURRENT', from_version: 3, to_version: 1, reason: 'bad v3' })]);
  });

  test.each([
    ['a version that does not exist', () => setLabel('production', 9), 'VersionNotFound', /version 9 of prompt 'greeting' not found/],
    ['an unknown prompt', () => ({ ...setLabel('production', 1), promptId: 'nope' }), 'PromptNotFound', /prompt 'nope' not found/],
  ])('%s is refused and nothing is written', async (_name, request, code, message) => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one']);
    table.counter.reset();
    // WHEN
    const error = await fx.engine.setLabel(request(), PIPELINE).catch((e: unknown) => e);
    // THEN
    expect(error).toBeInstanceOf(ReleaseError);
    expect(error).toMatchObject({ code, message: expect.stringMatching(message) });
    expect(table.counter.writes()).toBe(0);
    expect(fx.aws.putEventsCalls).toHaveLength(0);
  });

  test('a concurrent move that wins the guarded write is never overwritten: the loser re-reads, re-decides and lands on top', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two', 'three']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    const other = new ReleaseEngine({ dynamoDBClient: fx.table.adminClient, tableName: table.tableName, gate: OPEN_GATE, allowedAlarms: [] });
    let raced = false;
    beforeSending(table.client, 'TransactWriteItems', async () => {
      if (raced) return;
      raced = true;
      await other.setLabel(setLabel('production', 2), OPERATOR);
    });
    // WHEN
    const result = await fx.engine.setLabel(setLabel('production', 3), PIPELINE);
    // THEN: the other move landed (revision 2), ours on top of it (revision 3), both audited.
    expect(result).toMatchObject({ fromVersion: 2, toVersion: 3, changed: true });
    expect(await labelRow(table, 'greeting', 'production')).toMatchObject({ version_number: 3, revision: 3 });
    expect((await auditRows(table, 'greeting')).map((r) => [r.from_version, r.to_version])).toEqual(
      expect.arrayContaining([[undefined, 1], [1, 2], [2, 3]]));
    expect(await auditRows(table, 'greeting')).toHaveLength(3);
  });

  test('a move that loses every attempt answers Conflict; what the winners wrote stays', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two', 'three']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    const other = new ReleaseEngine({ dynamoDBClient: fx.table.adminClient, tableName: table.tableName, gate: OPEN_GATE, allowedAlarms: [] });
    let flip = 1;
    beforeSending(table.client, 'TransactWriteItems', async () => {
      flip = flip === 1 ? 2 : 1;
      await other.setLabel(setLabel('production', flip), OPERATOR);
    });
    // WHEN
    const error = await fx.engine.setLabel(setLabel('production', 3), PIPELINE).catch((e: unknown) => e);
    // THEN
    expect(error).toMatchObject({ code: 'Conflict', message: expect.stringContaining('changed under each of 3 attempts') });
    const label = await labelRow(table, 'greeting', 'production');
    expect(label).toMatchObject({ moved_by: OPERATOR, revision: 4 });
    expect((await auditRows(table, 'greeting')).filter((r) => r.actor === PIPELINE)).toHaveLength(1); // only the first set
  });
});

describe('activation gate', () => {
  test('deny: nothing moves, a gate-deny record says why, and the caller gets GateDenied', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    fx.aws.gate = (c) => ({ payload: { allow: c.toVersion !== 2, reason: 'eval score 0.61 < 0.8' } });
    // WHEN
    const error = await fx.engine.setLabel(setLabel('production', 2), PIPELINE).catch((e: unknown) => e);
    // THEN
    expect(error).toMatchObject({ code: 'GateDenied', status: 403, message: expect.stringContaining('eval score 0.61 < 0.8') });
    expect(await labelRow(table, 'greeting', 'production')).toMatchObject({ version_number: 1, revision: 1 });
    const audit = await auditRows(table, 'greeting');
    expect(audit[1]).toMatchObject({ action: 'gate-deny', target: 'production', from_version: 1, to_version: 2, reason: 'label denied: eval score 0.61 < 0.8' });
    expect(fx.aws.events.map((e) => e.detail.action)).toEqual(['label', 'gate-deny']);
  });

  test.each([
    ['raises an error', { functionError: 'Unhandled', payload: { errorType: 'Error', errorMessage: 'eval service down' } }, /failed \(Unhandled, fail closed\): eval service down/],
    ['times out', { delayMs: 1_500, payload: { allow: true, reason: 'too late' } }, /did not answer within 300 ms \(fail closed\)/],
    ['answers something else', { payload: { allow: 'yes' } }, /not \{ "allow": boolean, "reason": string \} \(fail closed\)/],
    ['answers no JSON', { payload: 'OK' }, /not JSON \(fail closed\)/],
  ])('a gate that %s denies (fail closed), audited with the reason', async (_name, answer, reason) => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one']);
    fx.aws.gate = () => answer;
    const engine = fx.makeEngine({ gateTimeoutMs: 300 });
    // WHEN
    const error = await engine.setLabel(setLabel('production', 1), PIPELINE).catch((e: unknown) => e);
    // THEN
    expect(error).toMatchObject({ code: 'GateDenied', message: expect.stringMatching(reason) });
    expect(await labelRow(table, 'greeting', 'production')).toBeUndefined();
    expect(await auditRows(table, 'greeting')).toEqual([expect.objectContaining({ action: 'gate-deny', reason: expect.stringMatching(reason) })]);
  });
});

describe('rollouts', () => {
  const start = (extra: Record<string, unknown> = {}) => parseReleaseRequest({
    action: 'rollout-start', promptId: 'greeting', label: 'production', version: 2, percent: 10, ...extra,
  }) as any;

  test('the gate\'s event carries a rollout\'s share in basis points, and the deprecated percent beside it', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    // WHEN
    await fx.engine.startRollout(parseReleaseRequest({
      action: 'rollout-start', promptId: 'greeting', label: 'production', version: 2, percentBp: 250,
    }) as any, PIPELINE);
    // THEN: a label move has no share; the rollout's is 250 bp (2.5 %)
    expect(fx.aws.gateCalls.map((c) => [c.action, c.percentBp, c.percent])).toEqual([
      ['label', undefined, undefined],
      ['rollout-start', 250, 2.5],
    ]);
  });

  test('a controller pass with no rollout costs one registry Query and nothing else', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A']);
    table.counter.reset();
    fx.awsCounter.reset();
    // WHEN
    const actions = await fx.controller.tick();
    // THEN
    expect(actions).toEqual([]);
    expect(table.counter.snapshot()).toEqual({ Query: 1 });
    expect(fx.awsCounter.snapshot()).toEqual({});
  });

  test('a rollout on a label that does not exist is LabelNotFound', async () => {
    await syncVersions(table, 'greeting', ['A', 'B']);
    await expect(fx.engine.startRollout(start({ label: 'canary' }), PIPELINE)).rejects.toMatchObject({
      code: 'LabelNotFound', message: "prompt 'greeting' has no label 'canary': set it first (label set)",
    });
  });

  test('10 → 50 → 100 on a schedule driven by the controller, then promote; every step audited', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    // WHEN
    const started = await fx.engine.startRollout(start({ steps: [50, 100], stepIntervalSeconds: 600, alarms: ['checkout-errors'] }), PIPELINE);
    const observed: (number | undefined)[] = [];
    const outcomes: string[] = [];
    for (let minute = 1; minute <= 40; minute++) {
      fx.clock.ms += 60_000;
      for (const a of await fx.controller.tick()) if (a.outcome !== 'not-due') outcomes.push(a.outcome);
      observed.push((await labelRow(table, 'greeting', 'production'))!.rollout?.percent_bp);
    }
    // THEN
    expect(started).toMatchObject({ percent: 10, nextStepAt: '2026-12-01T18:10:01.000Z' });
    expect(outcomes).toEqual(['stepped', 'stepped', 'promoted']);
    expect(observed.slice(0, 9).every((p) => p === 1000)).toBe(true);
    expect(observed[9]).toBe(5000);
    expect(observed[19]).toBe(10_000);
    expect(observed[29]).toBeUndefined();
    const label = await labelRow(table, 'greeting', 'production');
    expect(label).toMatchObject({ version_number: 2, text: 'B', moved_by: CONTROLLER });
    expect(label!.rollout).toBeUndefined();
    const audit = await auditRows(table, 'greeting');
    expect(audit.map((r) => [r.action, r.percent_bp, r.actor])).toEqual([
      ['label', undefined, PIPELINE],
      ['rollout-start', 1000, PIPELINE],
      ['rollout-step', 5000, CONTROLLER],
      ['rollout-step', 10_000, CONTROLLER],
      ['rollout-promote', 10_000, CONTROLLER],
    ]);
    expect(new Set(audit.slice(1).map((r) => r.rollout_id)).size).toBe(1);
    expect(await fx.engine.listRollouts()).toEqual([]);
  });

  test('an alarm state change to ALARM aborts at once: the label serves A, the rollout and its registry entry are gone, audited', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    await fx.engine.startRollout(start({ steps: [50], stepIntervalSeconds: 600, alarms: ['checkout-errors'] }), PIPELINE);
    fx.clock.ms += 600_000;
    await fx.controller.tick();
    expect((await labelRow(table, 'greeting', 'production'))!.rollout.percent_bp).toBe(5000);
    fx.clock.ms += 1_000;
    // WHEN
    const actions = await fx.controller.onAlarm('checkout-errors');
    // THEN
    expect(actions).toEqual([expect.objectContaining({ outcome: 'aborted', detail: 'checkout-errors' })]);
    const label = await labelRow(table, 'greeting', 'production');
    expect(label).toMatchObject({ version_number: 1, text: 'A' });
    expect(label!.rollout).toBeUndefined();
    expect(await fx.engine.listRollouts()).toEqual([]);
    expect((await auditRows(table, 'greeting')).at(-1)).toMatchObject({
      action: 'rollout-abort', from_version: 2, to_version: 1, actor: CONTROLLER, reason: "alarm 'checkout-errors' is in ALARM",
    });
  });

  test('the scheduled pass aborts a rollout whose alarm DescribeAlarms reports in ALARM, before any due step', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    await fx.engine.startRollout(start({ steps: [50], stepIntervalSeconds: 600, alarms: ['eval-score-low'] }), PIPELINE);
    fx.aws.alarmStates.set('eval-score-low', 'ALARM');
    fx.clock.ms += 600_000;
    // WHEN
    const actions = await fx.controller.tick();
    // THEN
    expect(actions).toEqual([expect.objectContaining({ outcome: 'aborted', detail: 'eval-score-low' })]);
    expect(fx.aws.describeAlarmsCalls).toBe(1);
    expect((await auditRows(table, 'greeting')).map((r) => r.action)).toEqual(['label', 'rollout-start', 'rollout-abort']);
  });

  test.each([
    ['its content rewritten (checksum attribute kept)', 'SET #t = :x', { '#t': 'text' }, { ':x': { S: 'not B' } }, /that version item now holds sha256:[0-9a-f]{64} \(its content hashes to sha256:/],
    ['its content and checksum rewritten', 'SET #t = :x, #c = :c', { '#t': 'text', '#c': 'checksum' }, { ':x': { S: 'not B' }, ':c': { S: checksum({ template_type: 'TEXT', text: 'not B' } as any) } }, /that version item now holds sha256:/],
  ])('a candidate version item that is not what the rollout started with (%s): step and promote are refused, nothing moves', async (_name, update, names, values, message) => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    await fx.engine.startRollout(start({ steps: [50] }), PIPELINE);
    const before = await labelRow(table, 'greeting', 'production');
    await table.client.send(new UpdateItemCommand({
      TableName: table.tableName,
      Key: { prompt_id: { S: 'greeting' }, version: { S: 'v000002' } },
      UpdateExpression: update,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values as any,
    }));
    // WHEN
    const step = fx.engine.stepRollout(parseReleaseRequest({ action: 'rollout-step', promptId: 'greeting', label: 'production' }) as any, OPERATOR);
    const promote = fx.engine.promoteRollout(parseReleaseRequest({ action: 'rollout-promote', promptId: 'greeting', label: 'production' }) as any, OPERATOR);
    // THEN
    for (const refused of [step, promote]) {
      await expect(refused).rejects.toMatchObject({ code: 'Conflict', message: expect.stringMatching(message) });
      await expect(refused).rejects.toThrow(/^the rollout of 'production' of prompt 'greeting' was started with version 2 at sha256:/);
    }
    expect(await labelRow(table, 'greeting', 'production')).toEqual(before);
    expect((await auditRows(table, 'greeting')).map((r) => r.action).sort()).toEqual(['label', 'rollout-start']);
  });

  test('a rollout whose candidate_checksum breaks the readers\' rules is broken for the release path too: refused, abort removes it', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    await fx.engine.startRollout(start({ steps: [50] }), PIPELINE);
    await table.client.send(new UpdateItemCommand({
      TableName: table.tableName,
      Key: { prompt_id: { S: 'greeting' }, version: { S: 'LABEL#production' } },
      UpdateExpression: 'SET #r.#c = :c',
      ExpressionAttributeNames: { '#r': 'rollout', '#c': 'candidate_checksum' },
      ExpressionAttributeValues: { ':c': { S: 'SHA256:whatever' } },
    }));
    // WHEN / THEN
    await expect(fx.engine.stepRollout(parseReleaseRequest({ action: 'rollout-step', promptId: 'greeting', label: 'production' }) as any, OPERATOR))
      .rejects.toMatchObject({ code: 'Conflict', message: expect.stringMatching(/is broken \(the rollout is broken: candidate_checksum "SHA256:whatever" is not sha256: and 64 lowercase hex digits\): abort it/) });
    await fx.engine.abortRollout(parseReleaseRequest({ action: 'rollout-abort', promptId: 'greeting', label: 'production' }) as any, OPERATOR);
    expect((await labelRow(table, 'greeting', 'production'))!.rollout).toBeUndefined();
  });

  test.each(['set-label', 'rollout-step', 'rollout-promote'])('%s loses to a sync that marks the prompt DELETED between its read and its write: PromptDeleted, the label untouched', async (action) => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    if (action !== 'set-label') await fx.engine.startRollout(start({ steps: [50] }), PIPELINE);
    const before = await labelRow(table, 'greeting', 'production');
    const engine = fx.engine;
    let deletes = 0;
    beforeSending(table.client, 'TransactWriteItems', async () => {
      if (deletes++ > 0) return;
      await fx.table.adminClient.send(new UpdateItemCommand({
        TableName: table.tableName,
        Key: { prompt_id: { S: 'greeting' }, version: { S: 'CURRENT' } },
        UpdateExpression: 'SET #s = :d, #r = #r + :one',
        ExpressionAttributeNames: { '#s': 'status', '#r': 'revision' },
        ExpressionAttributeValues: { ':d': { S: 'DELETED' }, ':one': { N: '1' } },
      }));
    });
    // WHEN
    const move = action === 'set-label'
      ? engine.setLabel(setLabel('production', 2), OPERATOR)
      : action === 'rollout-step'
        ? engine.stepRollout(parseReleaseRequest({ action, promptId: 'greeting', label: 'production' }) as any, OPERATOR)
        : engine.promoteRollout(parseReleaseRequest({ action, promptId: 'greeting', label: 'production' }) as any, OPERATOR);
    // THEN
    await expect(move).rejects.toMatchObject({ code: 'PromptDeleted' });
    expect(await labelRow(table, 'greeting', 'production')).toEqual(before);
    expect((await auditRows(table, 'greeting')).map((r) => r.action).sort()).toEqual(action === 'set-label' ? ['label'] : ['label', 'rollout-start']);
  });

  test('an alarm that cannot be described holds only the rollouts naming it; the others step', async () => {
    // GIVEN: two due rollouts, each watching its own alarm; the controller may not describe one of them
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    await fx.engine.setLabel(setLabel('staging', 1), PIPELINE);
    fx.clock.ms += 1_000;
    await fx.engine.startRollout(start({ steps: [50], stepIntervalSeconds: 600, alarms: ['eval-score-low'] }), PIPELINE);
    await fx.engine.startRollout(start({ label: 'staging', steps: [50], stepIntervalSeconds: 600, alarms: ['checkout-errors'] }), PIPELINE);
    fx.aws.deniedAlarms.add('eval-score-low');
    fx.clock.ms += 600_000;
    const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    // WHEN
    let actions;
    let lines: string[];
    try {
      actions = await fx.controller.tick();
    } finally {
      lines = logged.mock.calls.map((c) => String(c[0]));
      logged.mockRestore();
    }
    // THEN: one call for both names (refused), then one per name
    expect(fx.aws.describeAlarmsCalls).toBe(3);
    expect(new Map(actions.map((a) => [a.label, a.outcome]))).toEqual(new Map([['production', 'alarms-unreadable'], ['staging', 'stepped']]));
    expect(actions.find((a) => a.label === 'production')!.detail).toMatch(/^the rollout waits: alarm 'eval-score-low' could not be read \(AccessDenied: not authorized/);
    expect(lines.filter((l) => l.includes('"message":"rollout controller: alarms unreadable"'))).toHaveLength(1);
    expect((await labelRow(table, 'greeting', 'production'))!.rollout.percent_bp).toBe(1000);
    expect((await labelRow(table, 'greeting', 'staging'))!.rollout.percent_bp).toBe(5000);
  });

  test('manual steps and promote; a gate denial of a scheduled step postpones it by the interval', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    await fx.engine.startRollout(start({ steps: [30, 60], stepIntervalSeconds: 300 }), PIPELINE);
    // WHEN: a manual step to 25 %, then the gate starts denying
    const stepped = await fx.engine.stepRollout(parseReleaseRequest({ action: 'rollout-step', promptId: 'greeting', label: 'production', percent: 25 }) as any, OPERATOR);
    fx.aws.gate = () => ({ payload: { allow: false, reason: 'freeze window' } });
    fx.clock.ms += 300_000;
    const denied = await fx.controller.tick();
    const afterDeny = (await labelRow(table, 'greeting', 'production'))!.rollout;
    // THEN
    expect(stepped).toMatchObject({ percent: 25 });
    expect(denied).toEqual([expect.objectContaining({ outcome: 'gate-denied' })]);
    expect(afterDeny).toMatchObject({ percent_bp: 2500, steps_bp: [3000, 6000], next_step_at: new Date(fx.clock.ms + 300_000).toISOString() });
    fx.clock.ms += 60_000;
    expect((await fx.controller.tick())[0].outcome).toBe('not-due'); // postponed: the gate is not asked every minute
    expect(fx.aws.gateCalls).toHaveLength(4); // label, start, manual step, the one denied step
  });

  test.each([
    ['an alarm the construct does not watch', { alarms: ['someone-elses-alarm'] }, /unknown alarm 'someone-elses-alarm'/],
    ['a candidate the label already serves', { version: 1 }, /already serves version 1/],
    ['a candidate version that does not exist', { version: 7 }, /version 7 of prompt 'greeting' not found/],
  ])('start is refused for %s, nothing written', async (_name, extra, message) => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    table.counter.reset();
    // WHEN
    const error = await fx.engine.startRollout(start(extra), PIPELINE).catch((e: unknown) => e);
    // THEN
    expect(error).toMatchObject({ message: expect.stringMatching(message) });
    expect(table.counter.writes()).toBe(0);
  });

  test('a label with a rollout cannot be set or get a second rollout until promoted or aborted', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    await fx.engine.startRollout(start(), PIPELINE);
    // WHEN / THEN
    await expect(fx.engine.setLabel(setLabel('production', 2), PIPELINE)).rejects.toMatchObject({ code: 'RolloutInProgress' });
    await expect(fx.engine.startRollout(start(), PIPELINE)).rejects.toMatchObject({ code: 'RolloutInProgress' });
    await fx.engine.abortRollout(parseReleaseRequest({ action: 'rollout-abort', promptId: 'greeting', label: 'production', reason: 'changed my mind' }) as any, OPERATOR);
    await expect(fx.engine.abortRollout(parseReleaseRequest({ action: 'rollout-abort', promptId: 'greeting', label: 'production' }) as any, OPERATOR))
      .rejects.toMatchObject({ code: 'RolloutNotFound' });
    expect(await fx.engine.setLabel(setLabel('production', 2), PIPELINE)).toMatchObject({ changed: true });
  });

  test('a next_step_at far in the future (a hand edit, a broken clock) does not freeze the rollout', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    await fx.engine.startRollout(start({ steps: [50], stepIntervalSeconds: 600 }), PIPELINE);
    await table.client.send(new UpdateItemCommand({
      TableName: table.tableName,
      Key: { prompt_id: { S: 'greeting' }, version: { S: 'LABEL#production' } },
      UpdateExpression: 'SET #r.#n = :future',
      ExpressionAttributeNames: { '#r': 'rollout', '#n': 'next_step_at' },
      ExpressionAttributeValues: { ':future': { S: '2099-01-01T00:00:00.000Z' } },
    }));
    // WHEN
    fx.clock.ms += 60_000;
    const actions = await fx.controller.tick();
    // THEN
    expect(actions).toEqual([expect.objectContaining({ outcome: 'stepped' })]);
    expect((await auditRows(table, 'greeting')).at(-1)!.reason).toMatch(/implausibly far ahead/);
  });
});

describe('a rollout of a prompt deleted at the source', () => {
  test('holds: no step or promote while the prompt is DELETED (an alarm abort still works), and resumes when it is back', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['A', 'B']);
    await fx.engine.setLabel(setLabel('production', 1), PIPELINE);
    fx.clock.ms += 1_000;
    await fx.engine.startRollout(parseReleaseRequest({
      action: 'rollout-start', promptId: 'greeting', label: 'production', version: 2, percent: 10, steps: [50], stepIntervalSeconds: 600,
    }) as any, PIPELINE);
    await table.client.send(new UpdateItemCommand({
      TableName: table.tableName,
      Key: { prompt_id: { S: 'greeting' }, version: { S: 'CURRENT' } },
      UpdateExpression: 'SET #s = :d',
      ExpressionAttributeNames: { '#s': 'status' },
      ExpressionAttributeValues: { ':d': { S: 'DELETED' } },
    }));
    fx.clock.ms += 600_000;
    // WHEN
    const held = await fx.controller.tick();
    const promote = await fx.engine.promoteRollout(parseReleaseRequest({ action: 'rollout-promote', promptId: 'greeting', label: 'production' }) as any, OPERATOR)
      .catch((e: unknown) => e);
    // THEN
    expect(held).toEqual([expect.objectContaining({ outcome: 'held', detail: expect.stringContaining('deleted at the source') })]);
    expect(promote).toMatchObject({ code: 'PromptDeleted' });
    expect((await labelRow(table, 'greeting', 'production'))!.rollout.percent_bp).toBe(1000);
    fx.clock.ms += 1_000;
    expect(await fx.controller.onAlarm('checkout-errors')).toEqual([]); // this rollout names no alarm
    await expect(fx.engine.abortRollout(parseReleaseRequest({ action: 'rollout-abort', promptId: 'greeting', label: 'production' }) as any, OPERATOR))
      .resolves.toMatchObject({ action: 'rollout-abort', toVersion: 1 });
  });
});
