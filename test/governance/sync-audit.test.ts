import { unlinkSync } from 'node:fs';
import * as path from 'node:path';
import { GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { PIPELINE, auditRows, labelRow, useGovernance } from './fixture';
import { parseReleaseRequest } from '../../src/governance/requests';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { AuditEvents } from '../../src/write/audit';
import { LambdaActivationGate } from '../../src/write/gate';
import { readCurrent, versionItems, writePrompt } from '../admin/fixture';

const fx = useGovernance();
const { table } = fx;
const SYNC_ROLE = 'arn:aws:iam::111122223333:role/Stack-PromptsSyncFunctionRole-ABC';

function syncEngine(options: { gate?: boolean } = {}): SyncEngine {
  const events = new AuditEvents(fx.awsCounter.attach(new EventBridgeClient({ endpoint: fx.aws.endpoint })), table.tableName);
  const gate = options.gate ? new LambdaActivationGate(new LambdaClient({ endpoint: fx.aws.endpoint, maxAttempts: 1 }), 'gate', 2_000) : undefined;
  return new SyncEngine({
    dynamoDBClient: table.client,
    tableName: table.tableName,
    source: new DirectoryPromptSource(table.dir),
    governance: { actor: SYNC_ROLE, events, gate, auditRetentionSeconds: 3600 },
  });
}

describe('the sync audits its moves of CURRENT', () => {
  test('new, changed and deleted prompts each get a record in the move\'s own transaction; events go in batches of 10', async () => {
    // GIVEN
    for (let i = 0; i < 12; i++) writePrompt(table, `p${String(i).padStart(2, '0')}`, `text ${i}`);
    table.counter.reset();
    // WHEN
    const first = await syncEngine().fullSync();
    // THEN: 12 transactions (version + pointer + audit each), 2 PutEvents calls carrying 12 events.
    expect(first.written).toBe(12);
    expect(table.counter.count('TransactWriteItems')).toBe(12);
    expect(fx.awsCounter.count('PutEvents')).toBe(2);
    expect(fx.aws.putEventsCalls.map((c) => c.length)).toEqual([10, 2]);
    expect(await auditRows(table, 'p00')).toEqual([expect.objectContaining({
      action: 'sync', target: 'CURRENT', to_version: 1, actor: SYNC_ROLE, reason: expect.stringMatching(/^new prompt \(source version /),
    })]);
    expect((await auditRows(table, 'p00'))[0].expires_at).toBeGreaterThan(Date.now() / 1000);

    // WHEN: a change, then a deletion
    writePrompt(table, 'p00', 'text 0, edited');
    await syncEngine().fullSync();
    unlinkSync(path.join(table.dir, 'p01.md'));
    const third = await syncEngine().fullSync();
    // THEN
    expect(third.deletedIds).toEqual(['p01']);
    expect((await auditRows(table, 'p00')).map((r) => [r.from_version, r.to_version])).toEqual([[undefined, 1], [1, 2]]);
    expect((await auditRows(table, 'p01')).at(-1)).toMatchObject({ action: 'sync', from_version: 1, reason: 'deleted at the source' });
    expect((await auditRows(table, 'p01')).at(-1)!.to_version).toBeUndefined();
  });

  test('moves already committed get their events when the sync then fails (the catalog write throws)', async () => {
    // GIVEN: the catalog's write fails after the three moves commit
    for (const id of ['a1', 'a2', 'a3']) writePrompt(table, id, `text ${id}`);
    const name = 'testCatalogWriteFails';
    table.client.middlewareStack.add((next: any, context: any) => async (args: any) => {
      if (context.commandName === 'PutItemCommand') throw new Error('catalog write refused');
      return next(args);
    }, { step: 'initialize', name });
    // WHEN
    try {
      await expect(syncEngine().fullSync()).rejects.toThrow('catalog write refused');
    } finally {
      table.client.middlewareStack.remove(name);
    }
    // THEN: each committed move has its record and its event
    expect((await Promise.all(['a1', 'a2', 'a3'].map((id) => auditRows(table, id)))).map((r) => r.length)).toEqual([1, 1, 1]);
    expect(fx.aws.events.map((e) => e.detail.prompt_id).sort()).toEqual(['a1', 'a2', 'a3']);
  });

  test('a source delete marks the prompt\'s labels source_deleted_at (revision bumped); the prompt\'s return clears it', async () => {
    // GIVEN
    writePrompt(table, 'greeting', 'Hello');
    await syncEngine().fullSync();
    await fx.engine.setLabel(parseReleaseRequest({ action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }) as any, PIPELINE);
    // WHEN
    unlinkSync(path.join(table.dir, 'greeting.md'));
    await syncEngine().fullSync();
    const deleted = await labelRow(table, 'greeting', 'production');
    writePrompt(table, 'greeting', 'Hello again');
    await syncEngine().fullSync();
    const back = await labelRow(table, 'greeting', 'production');
    // THEN: the label kept serving its copy, visibly marked, and was written anew (revision) each time.
    expect(deleted).toMatchObject({ version_number: 1, text: 'Hello', revision: 2, source_deleted_at: expect.stringMatching(/^\d{4}-/) });
    expect(back).toMatchObject({ version_number: 1, text: 'Hello', revision: 3 });
    expect(back!.source_deleted_at).toBeUndefined();
    expect(await readCurrent(table, 'greeting')).toMatchObject({ version_number: 2, status: 'ACTIVE' });
  });

  test('every label is flagged however many Query pages they fill; a DELETED prompt\'s unflagged label is flagged at its next sync', async () => {
    // GIVEN: six labels of about 300 KB each (a Query page holds at most 1 MB)
    writePrompt(table, 'greeting', 'Hello');
    await syncEngine().fullSync();
    await fx.engine.setLabel(parseReleaseRequest({ action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }) as any, PIPELINE);
    const key = (label: string) => ({ prompt_id: { S: 'greeting' }, version: { S: `LABEL#${label}` } });
    const model = (await table.client.send(new GetItemCommand({ TableName: table.tableName, Key: key('production'), ConsistentRead: true }))).Item!;
    const names = ['l1', 'l2', 'l3', 'l4', 'l5', 'l6'];
    for (const name of names) {
      await table.client.send(new PutItemCommand({
        TableName: table.tableName,
        Item: { ...model, ...key(name), label: { S: name }, padding: { S: 'x'.repeat(300_000) } },
      }));
    }
    // WHEN
    unlinkSync(path.join(table.dir, 'greeting.md'));
    await syncEngine().fullSync();
    // THEN
    for (const name of ['production', ...names]) expect([name, (await labelRow(table, 'greeting', name))!.source_deleted_at]).toEqual([name, expect.stringMatching(/^\d{4}-/)]);

    // GIVEN: one label left without the flag (a sync cut short after the pointer's write)
    await table.client.send(new UpdateItemCommand({ TableName: table.tableName, Key: key('l3'), UpdateExpression: 'REMOVE source_deleted_at' }));
    // WHEN
    const again = await syncEngine().syncPrompt('greeting');
    // THEN
    expect(again.skipped).toEqual([{ id: 'greeting', reason: expect.any(String) }]);
    expect((await labelRow(table, 'greeting', 'l3'))!.source_deleted_at).toMatch(/^\d{4}-/);
    expect(await readCurrent(table, 'greeting')).toMatchObject({ status: 'DELETED' });
  });
});

describe('gateSync', () => {
  test('denied: the version item is written, CURRENT stays, the denial is audited once; asked again each sync; allowed later: CURRENT moves to it', async () => {
    // GIVEN
    writePrompt(table, 'greeting', 'v1');
    await syncEngine({ gate: true }).fullSync();
    fx.aws.gate = () => ({ payload: { allow: false, reason: 'eval failed' } });
    writePrompt(table, 'greeting', 'v2');
    // WHEN
    const denied = await syncEngine({ gate: true }).fullSync();
    table.counter.reset();
    const again = await syncEngine({ gate: true }).fullSync();
    const writesWhileDenied = table.counter.writes();
    fx.aws.gate = () => ({ payload: { allow: true, reason: 'eval passed' } });
    const allowed = await syncEngine({ gate: true }).fullSync();
    // THEN
    expect(denied.skipped).toEqual([{ id: 'greeting', reason: 'the activation gate denied version 2 (eval failed); CURRENT stays on version 1, and the next sync asks again' }]);
    expect(again.skipped).toHaveLength(1);
    expect(writesWhileDenied).toBe(0);
    expect(allowed.writtenIds).toEqual(['greeting']);
    expect([...(await versionItems(table, 'greeting')).keys()]).toEqual(['v000001', 'v000002']);
    expect(await readCurrent(table, 'greeting')).toMatchObject({ version_number: 2, text: 'v2', latest_version_number: 2 });
    expect((await auditRows(table, 'greeting')).map((r) => [r.action, r.from_version, r.to_version])).toEqual([
      ['sync', undefined, 1], ['gate-deny', 1, 2], ['sync', 1, 2],
    ]);
    // Asked for the first move of an existing prompt and at each later sync (a new prompt has nothing to stay on).
    expect(fx.aws.gateCalls.map((c) => [c.action, c.fromVersion, c.toVersion])).toEqual([['sync', 1, 2], ['sync', 1, 2], ['sync', 1, 2]]);
  });

  test('a prompt deleted and created again at the source is gated: denied, it stays DELETED (version written, audited once); allowed, it comes back', async () => {
    // GIVEN: a labeled prompt, deleted at the source
    writePrompt(table, 'greeting', 'v1');
    await syncEngine({ gate: true }).fullSync();
    await fx.engine.setLabel(parseReleaseRequest({ action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }) as any, PIPELINE);
    unlinkSync(path.join(table.dir, 'greeting.md'));
    await syncEngine({ gate: true }).fullSync();
    fx.aws.gate = () => ({ payload: { allow: false, reason: 'eval failed' } });
    writePrompt(table, 'greeting', 'v2');
    // WHEN
    const denied = await syncEngine({ gate: true }).fullSync();
    const afterDenial = await readCurrent(table, 'greeting');
    table.counter.reset();
    const again = await syncEngine({ gate: true }).fullSync();
    const writesWhileDenied = table.counter.writes();
    fx.aws.gate = () => ({ payload: { allow: true, reason: 'eval passed' } });
    const allowed = await syncEngine({ gate: true }).fullSync();
    // THEN
    expect(denied.skipped).toEqual([{ id: 'greeting', reason: 'the activation gate denied version 2 (eval failed); CURRENT stays DELETED, and the next sync asks again' }]);
    expect(afterDenial).toMatchObject({ status: 'DELETED', version_number: 1, text: 'v1', latest_version_number: 2 });
    expect(again.skipped).toHaveLength(1);
    expect(writesWhileDenied).toBe(0);
    expect(allowed.writtenIds).toEqual(['greeting']);
    expect([...(await versionItems(table, 'greeting')).keys()]).toEqual(['v000001', 'v000002']);
    expect(await readCurrent(table, 'greeting')).toMatchObject({ status: 'ACTIVE', version_number: 2, text: 'v2', latest_version_number: 2 });
    expect((await labelRow(table, 'greeting', 'production'))!.source_deleted_at).toBeUndefined();
    expect((await auditRows(table, 'greeting')).filter((r) => r.target === 'CURRENT').map((r) => [r.action, r.from_version, r.to_version, r.reason])).toEqual([
      ['sync', undefined, 1, expect.stringMatching(/^new prompt/)],
      ['sync', 1, undefined, 'deleted at the source'],
      ['gate-deny', 1, 2, 'sync denied (back at the source): eval failed'],
      ['sync', 1, 2, expect.stringMatching(/^back at the source \(source version .*\); activation gate: eval passed$/)],
    ]);
    expect(fx.aws.gateCalls.filter((c) => c.action === 'sync').map((c) => c.toVersion)).toEqual([2, 2, 2]);
  });

  test('a denial of a version written before is audited once per move: CURRENT moved since, the new move\'s denial gets its record; the next sync writes nothing', async () => {
    // GIVEN: versions 1 and 2 synced, version 3 denied (written, CURRENT stays on 2), then CURRENT activated back to 1
    writePrompt(table, 'greeting', 'v1');
    await syncEngine({ gate: true }).fullSync();
    writePrompt(table, 'greeting', 'v2');
    await syncEngine({ gate: true }).fullSync();
    fx.aws.gate = (candidate) => ({ payload: candidate.action === 'sync' ? { allow: false, reason: 'eval failed' } : { allow: true, reason: 'ok' } });
    writePrompt(table, 'greeting', 'v3');
    await syncEngine({ gate: true }).fullSync();
    fx.clock.ms = Date.now();
    await fx.engine.activate(parseReleaseRequest({ action: 'activate', promptId: 'greeting', version: 1 }) as any, PIPELINE);
    fx.aws.putEventsCalls.length = 0;
    // WHEN: the sync is denied the move 1 → 3 of the version already written, twice
    const denied = await syncEngine({ gate: true }).fullSync();
    table.counter.reset();
    const again = await syncEngine({ gate: true }).fullSync();
    const writesAgain = table.counter.writes();
    // THEN: one record of the new move's denial, one event, and nothing written by the repeat
    expect(denied.skipped).toEqual([{ id: 'greeting', reason: 'the activation gate denied version 3 (eval failed); CURRENT stays on version 1, and the next sync asks again' }]);
    expect(again.skipped).toHaveLength(1);
    expect(writesAgain).toBe(0);
    expect(await readCurrent(table, 'greeting')).toMatchObject({ version_number: 1, latest_version_number: 3 });
    expect((await auditRows(table, 'greeting')).filter((r) => r.action === 'gate-deny').map((r) => [r.from_version, r.to_version, r.reason])).toEqual([
      [2, 3, 'sync denied (changed at the source): eval failed'],
      [1, 3, 'sync denied (changed at the source): eval failed'],
    ]);
    expect(fx.aws.events.map((e) => [e.detail.action, e.detail.from_version, e.detail.to_version])).toEqual([['gate-deny', 1, 3]]);
  });

  test('the repair of a broken pointer is gated: denied, the pointer is left as it was (version written, audited once); allowed, it is repaired', async () => {
    // GIVEN: a pointer broken by hand (version_number a string), and new content at the source
    writePrompt(table, 'greeting', 'v1');
    await syncEngine({ gate: true }).fullSync();
    await table.client.send(new UpdateItemCommand({
      TableName: table.tableName,
      Key: { prompt_id: { S: 'greeting' }, version: { S: 'CURRENT' } },
      UpdateExpression: 'SET version_number = :bad',
      ExpressionAttributeValues: { ':bad': { S: 'one' } },
    }));
    const broken = await readCurrent(table, 'greeting');
    fx.aws.gate = () => ({ payload: { allow: false, reason: 'eval failed' } });
    writePrompt(table, 'greeting', 'v2');
    // WHEN
    const denied = await syncEngine({ gate: true }).fullSync();
    const { revision: _r, latest_version_number: _l, ...afterDenial } = (await readCurrent(table, 'greeting'))!;
    table.counter.reset();
    await syncEngine({ gate: true }).fullSync();
    const writesWhileDenied = table.counter.writes();
    fx.aws.gate = () => ({ payload: { allow: true, reason: 'eval passed' } });
    const allowed = await syncEngine({ gate: true }).fullSync();
    // THEN: served content untouched while denied (only the version counter and revision moved)
    expect(denied.skipped).toEqual([{ id: 'greeting', reason: expect.stringMatching(/^the activation gate denied version 2 \(eval failed\); CURRENT stays as it is \(broken: `version_number` must be a whole number/) }]);
    const { revision: _r0, latest_version_number: _l0, ...brokenBefore } = broken!;
    expect(afterDenial).toEqual(brokenBefore);
    expect(writesWhileDenied).toBe(0);
    expect(allowed.writtenIds).toEqual(['greeting']);
    expect([...(await versionItems(table, 'greeting')).keys()]).toEqual(['v000001', 'v000002']);
    expect(await readCurrent(table, 'greeting')).toMatchObject({ status: 'ACTIVE', version_number: 2, text: 'v2', latest_version_number: 2 });
    expect((await auditRows(table, 'greeting')).map((r) => [r.action, r.to_version, r.reason.split(' (')[0]])).toEqual([
      ['sync', 1, 'new prompt'], ['gate-deny', 2, 'sync denied'], ['sync', 2, 'repaired'],
    ]);
  });
});
