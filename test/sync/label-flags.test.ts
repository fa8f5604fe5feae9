/**
 * `source_deleted_at` on labels stays in line with the prompt's state at the source: a label write racing the sync
 * that flags the labels (a rollout abort, a move) does not leave a label unflagged, and a governed full sync
 * reconciles any label left out of line (a sync cut short), both ways.
 */
import { unlinkSync } from 'node:fs';
import * as path from 'node:path';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { parseReleaseRequest } from '../../src/governance/requests';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { readCurrent, writePrompt } from '../admin/fixture';
import { PIPELINE, labelRow, useGovernance } from '../governance/fixture';

const fx = useGovernance();
const { table } = fx;
const SYNC_ROLE = 'arn:aws:iam::111122223333:role/Stack-PromptsSyncFunctionRole-ABC';

function syncEngine(): SyncEngine {
  return new SyncEngine({
    dynamoDBClient: table.client, tableName: table.tableName, source: new DirectoryPromptSource(table.dir), governance: { actor: SYNC_ROLE },
  });
}

const labelKey = (label: string) => ({ prompt_id: { S: 'greeting' }, version: { S: `LABEL#${label}` } });

/** A concurrent label write (as an abort or a step makes): bumps the label's revision, keeping what it holds. */
async function concurrentLabelWrite(label: string): Promise<void> {
  await table.adminClient.send(new UpdateItemCommand({
    TableName: table.tableName,
    Key: labelKey(label),
    UpdateExpression: 'SET revision = revision + :one, moved_by = :by',
    ExpressionAttributeValues: { ':one': { N: '1' }, ':by': { S: PIPELINE } },
  }));
}

async function withProductionLabel(): Promise<void> {
  writePrompt(table, 'greeting', 'Hello');
  await syncEngine().fullSync();
  await fx.engine.setLabel(parseReleaseRequest({ action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }) as any, PIPELINE);
}

test('a label write racing the sync that marks the prompt deleted still ends with the label flagged', async () => {
  // GIVEN a label, and a label write that lands between the sync's read of the label and its flag write
  await withProductionLabel();
  let raced = false;
  table.client.middlewareStack.add((next: any, context: any) => async (args: any) => {
    if (!raced && context.commandName === 'UpdateItemCommand' && args.input.Key?.version?.S === 'LABEL#production') {
      raced = true;
      await concurrentLabelWrite('production');
    }
    return next(args);
  }, { step: 'initialize', name: 'raceLabelWrite' });
  // WHEN the prompt is deleted at the source and synced
  unlinkSync(path.join(table.dir, 'greeting.md'));
  const report = await syncEngine().fullSync();
  // THEN
  expect(raced).toBe(true);
  expect(report.deletedIds).toEqual(['greeting']);
  expect(await labelRow(table, 'greeting', 'production')).toMatchObject({ moved_by: PIPELINE, source_deleted_at: expect.stringMatching(/^\d{4}-/) });
});

test('a full sync flags a label left without source_deleted_at for a prompt deleted at the source', async () => {
  // GIVEN a deleted prompt whose label lost its flag (a sync cut short after the pointer's write)
  await withProductionLabel();
  unlinkSync(path.join(table.dir, 'greeting.md'));
  await syncEngine().fullSync();
  await table.client.send(new UpdateItemCommand({ TableName: table.tableName, Key: labelKey('production'), UpdateExpression: 'REMOVE source_deleted_at' }));
  writePrompt(table, 'other', 'Other'); // the source still lists something
  // WHEN
  const report = await syncEngine().fullSync();
  // THEN
  expect((await labelRow(table, 'greeting', 'production'))!.source_deleted_at).toMatch(/^\d{4}-/);
  expect(report.repaired).toEqual([{ id: 'greeting', reason: expect.stringMatching(/flagged$/) }]);
  expect(await readCurrent(table, 'greeting')).toMatchObject({ status: 'DELETED' });
  // AND a second full sync finds nothing to do
  expect((await syncEngine().fullSync()).repaired).toEqual([]);
});

test('a full sync clears source_deleted_at left on a label of a prompt the source holds', async () => {
  // GIVEN an ACTIVE prompt whose label still says the source deleted it (its return's clear was cut short)
  await withProductionLabel();
  await table.client.send(new UpdateItemCommand({
    TableName: table.tableName,
    Key: labelKey('production'),
    UpdateExpression: 'SET source_deleted_at = :at',
    ExpressionAttributeValues: { ':at': { S: '2026-12-01T17:00:00.000Z' } },
  }));
  // WHEN
  const report = await syncEngine().fullSync();
  // THEN
  expect((await labelRow(table, 'greeting', 'production'))!.source_deleted_at).toBeUndefined();
  expect(report.repaired).toEqual([{ id: 'greeting', reason: expect.stringMatching(/cleared$/) }]);
});
