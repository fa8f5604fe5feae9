import { BatchGetItemCommandOutput } from '@aws-sdk/client-dynamodb';
import { contentOf } from '../../src/schema';
import { SyncEngine } from '../../src/sync/engine';
import { ServingTableStore } from '../../src/write/store';
import { CallCounter } from '../support/call-counter';
import { MemorySource, textPrompt } from '../support/memory-source';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

/**
 * DynamoDB Local answers every BatchGetItem in full; the real service may return part of a batch as
 * UnprocessedKeys under load. This middleware moves part of the first real answers into UnprocessedKeys, so
 * the store's retry loop runs against real responses.
 */
function withUnprocessedKeys(client: ReturnType<typeof localDynamoDBClient>, tableName: string, times: number) {
  let left = times;
  client.middlewareStack.add(
    (next: any, context: any) => async (args: any) => {
      const result = await next(args);
      if (context.commandName !== 'BatchGetItemCommand' || left <= 0) return result;
      left--;
      const output = result.output as BatchGetItemCommandOutput;
      const items = output.Responses?.[tableName] ?? [];
      const withheld = items.splice(0, Math.ceil(items.length / 2));
      output.UnprocessedKeys = {
        [tableName]: { Keys: withheld.map((i) => ({ prompt_id: i.prompt_id, version: { S: 'CURRENT' } })) },
      };
      return result;
    },
    { step: 'initialize', name: 'withholdHalfOfTheBatch' },
  );
}

test('pointer reads retry UnprocessedKeys until every pointer is read', async () => {
  // GIVEN 250 prompts in the table (three BatchGetItem calls of at most 100 keys)
  const counter = new CallCounter();
  const client = counter.attach(localDynamoDBClient());
  const tableName = await createServingTable(client, 'store');
  const source = new MemorySource();
  const ids = Array.from({ length: 250 }, (_, i) => `p-${i}`);
  for (const id of ids) source.set(id, textPrompt(id));
  await new SyncEngine({ dynamoDBClient: client, tableName, source }).fullSync();
  withUnprocessedKeys(client, tableName, 4);
  counter.reset();
  // WHEN
  const pointers = await new ServingTableStore(client, tableName).getPointers([...ids, 'missing', ids[0]]);
  // THEN every pointer is there, after extra calls for the withheld keys
  expect(pointers.size).toBe(250);
  expect([...pointers.keys()].sort()).toEqual([...ids].sort());
  expect(counter.count('BatchGetItem')).toBeGreaterThan(3);
  await deleteTable(client, tableName);
  client.destroy();
});

test('every pointer write increments `revision` (the L2 ordering rule compares it); a stale revision loses', async () => {
  // GIVEN a prompt synced once
  const client = localDynamoDBClient();
  const tableName = await createServingTable(client, 'revision');
  const source = new MemorySource();
  source.set('greeting', textPrompt('v1'));
  const engine = new SyncEngine({ dynamoDBClient: client, tableName, source });
  await engine.fullSync();
  const store = new ServingTableStore(client, tableName);
  const first = await store.getPointer('greeting');
  expect(first?.revision).toBe(1);
  // WHEN the source changes (a new version) and then the prompt is deleted
  source.set('greeting', textPrompt('v2'));
  await engine.fullSync();
  const second = await store.getPointer('greeting');
  source.delete('greeting');
  await engine.fullSync();
  const third = await store.getPointer('greeting');
  // THEN each write moved the revision on by one
  expect(second?.revision).toBe(2);
  expect(third).toMatchObject({ status: 'DELETED', revision: 3 });
  // AND a writer holding the first state (revision 1) loses its guarded write
  expect(await store.markDeleted(second!, new Date().toISOString(), new Date().toISOString())).toBe('conflict');
  // AND the revision is bookkeeping, not prompt content (it never feeds the checksum)
  const item = await store.getItem('greeting', 'CURRENT');
  expect(item?.revision).toBe(3);
  expect(contentOf(item!)).not.toHaveProperty('revision');
  await deleteTable(client, tableName);
  client.destroy();
});
