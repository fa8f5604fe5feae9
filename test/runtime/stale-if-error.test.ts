/**
 * Stale if error: an invalidation (the epoch moving) marks memory copies for re-validation and never discards the
 * last good copy before a newer one is in hand. Real parts: DynamoDB Local, redis-server, the contract's scripts
 * (run as the invalidation function runs them). The table's failure is injected in the SDK's middleware stack.
 * python/tests/test_l2.py holds the same case for the Python client.
 */
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { failNextGetItems, logGetItemKeys, publish, textContent } from './fixtures';
import { ValkeyWriter } from '../../src/invalidation/valkey-writer';
import { cacheTier, PromptClient } from '../../src/runtime';
import {
  CURRENT, encodeStreamValue, incarnationAt, l2EpochKey, l2FillKey, l2ItemKey, PARTITION_KEY, SORT_KEY, toDynamoJson,
} from '../../src/schema';
import { CallCounter } from '../support/call-counter';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const INC = '2026-01-02T03:04:05.678';
let admin: DynamoDBClient;
let table: string;
let server: RedisServer;
let writer: ValkeyWriter;
const closers: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'kept', 1, textContent('the last good copy'));
  server = await startRedisServer();
  writer = adapter();
  // The invalidation function wrote the pointer through and moved the epoch.
  const { Item } = await admin.send(new GetItemCommand({ TableName: table, Key: { [PARTITION_KEY]: { S: 'kept' }, [SORT_KEY]: { S: CURRENT } } }));
  const value = encodeStreamValue({ inc: INC, seq: '10', writtenAt: Date.now(), item: toDynamoJson(Item!) });
  await writer.writeThroughValue(l2ItemKey(table, 'kept', CURRENT), INC, '10', value, 86400);
  await writer.bumpEpoch(l2EpochKey(table), INC, incarnationAt(Date.now()));
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await writer?.close();
  await server?.stop();
  await deleteTable(admin, table);
  admin.destroy();
});

function adapter(): ValkeyWriter {
  return new ValkeyWriter({ host: '127.0.0.1', port: server.port, tls: false, cluster: false, connectTimeoutMs: 2000 });
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('the epoch moves while the L2 no longer holds the value and the table throttles: the last good copy is served (stale), then replaced', async () => {
  // GIVEN a reader holding the prompt, read from the L2's stream value (no table read)
  const counter = new CallCounter();
  const ddb = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  const keys = logGetItemKeys(ddb);
  const l2 = adapter();
  const prompts = new PromptClient({
    tableName: table, dynamoDBClient: ddb, l2: cacheTier(l2), maxAgeSeconds: 60, staleIfErrorSeconds: 3600, epochPollIntervalMs: 20, maxAttempts: 1,
  });
  closers.push(() => prompts.close(), () => l2.close(), () => ddb.destroy());
  expect(await prompts.getPrompt('kept')).toMatchObject({ version: 1, stale: false });
  expect(keys).not.toContain('kept/CURRENT'); // (this table has no catalog: that one is read from the table)

  // WHEN the value leaves the L2 (its 24 h TTL), another batch moves the epoch, and the table throttles
  await writer.delete(l2ItemKey(table, 'kept', CURRENT));
  await writer.delete(l2FillKey(table, 'kept', CURRENT));
  const moves = prompts.stats().epochMoves;
  await writer.bumpEpoch(l2EpochKey(table), INC, incarnationAt(Date.now()));
  await until(() => prompts.stats().epochMoves > moves, 'the epoch move');
  failNextGetItems(ddb, 5, 'ProvisionedThroughputExceededException');
  const served = await prompts.getPrompt('kept');

  // THEN the last good copy is served, flagged stale, instead of a failure
  expect(served).toMatchObject({ version: 1, stale: true, text: 'the last good copy' });
  expect(prompts.stats().staleServes).toBe(1);
  expect(prompts.stats().storeErrors).toBeGreaterThanOrEqual(1);

  // AND once the table answers again, a fresh copy replaces it
  counter.reset();
  let fresh = served;
  for (let i = 0; i < 50 && fresh.stale; i++) {
    fresh = await prompts.getPrompt('kept');
    if (fresh.stale) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(fresh).toMatchObject({ version: 1, stale: false });
});

test('a copy the epoch marked is not served as fresh: the next read re-validates it (it is never served past a change)', async () => {
  const counter = new CallCounter();
  const ddb = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  const l2 = adapter();
  const prompts = new PromptClient({ tableName: table, dynamoDBClient: ddb, l2: cacheTier(l2), maxAgeSeconds: 60, epochPollIntervalMs: 20 });
  closers.push(() => prompts.close(), () => l2.close(), () => ddb.destroy());
  await prompts.getPrompt('kept');
  // WHEN the table changes, the stream value is gone and the epoch moves
  await publish(admin, table, 'kept', 2, textContent('the new copy'));
  await writer.delete(l2ItemKey(table, 'kept', CURRENT));
  await writer.delete(l2FillKey(table, 'kept', CURRENT));
  const moves = prompts.stats().epochMoves;
  await writer.bumpEpoch(l2EpochKey(table), INC, incarnationAt(Date.now()));
  await until(() => prompts.stats().epochMoves > moves, 'the epoch move');
  // THEN the next read goes to the table (not stale-while-revalidate) and serves the change
  expect(await prompts.getPrompt('kept')).toMatchObject({ version: 2, stale: false });
});
