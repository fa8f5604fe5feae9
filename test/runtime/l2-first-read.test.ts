/**
 * A cold reader's first read from a written-through L2 (the construct's cache tier): it must not wait for the epoch's
 * first answer before it asks for the item (two round trips, each under `l2TimeoutMs`, where a busy host sent whole
 * readers of a fleet cold start to the table), and it must still use a stream value only once the epoch names its
 * incarnation. The L2 is a test double (the hook is an interface), the table is real DynamoDB Local.
 */
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { logGetItemKeys, publish, textContent } from './fixtures';
import { cacheTier, PromptCacheL2, PromptClient } from '../../src/runtime';
import { CURRENT } from '../../src/schema/keys';
import { encodeStreamValue, l2EpochKey, l2ItemKey, toDynamoJson } from '../../src/schema/l2';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const INC = '2026-12-01T10:00:00.000';
const EPOCH_DELAY_MS = 150;

let admin: DynamoDBClient;
let table: string;
let streamValue: string;
const opened: DynamoDBClient[] = [];
const clients: PromptClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}!'));
  const { Item } = await admin.send(new GetItemCommand({ TableName: table, Key: { prompt_id: { S: 'greeting' }, version: { S: CURRENT } } }));
  streamValue = encodeStreamValue({ inc: INC, seq: '100', writtenAt: Date.now(), item: toDynamoJson(Item!) });
});

afterAll(async () => {
  for (const c of clients) await c.close();
  for (const c of opened) c.destroy();
  await deleteTable(admin, table);
  admin.destroy();
});

/** A written-through L2 whose epoch answers after `EPOCH_DELAY_MS`, every other key at once; logs what happens when. */
function slowEpochL2(epoch: string | null) {
  const log: string[] = [];
  const data = new Map<string, string>([[l2ItemKey(table, 'greeting', CURRENT), streamValue]]);
  const l2: PromptCacheL2 = {
    writeThrough: true,
    get: async (key) => {
      if (key === l2EpochKey(table)) {
        log.push('epoch asked');
        await new Promise((resolve) => setTimeout(resolve, EPOCH_DELAY_MS));
        log.push('epoch answered');
        return epoch;
      }
      if (key === l2ItemKey(table, 'greeting', CURRENT)) log.push('item asked');
      return data.get(key);
    },
    set: async () => undefined,
  };
  return { l2, log };
}

function newClient(l2: PromptCacheL2) {
  const dynamoDBClient = localDynamoDBClient({ maxAttempts: 1 });
  opened.push(dynamoDBClient);
  const keys = logGetItemKeys(dynamoDBClient);
  // l2TimeoutMs above the epoch's delay: what is measured is the order, not a timeout.
  const prompts = new PromptClient({ tableName: table, dynamoDBClient, l2: cacheTier(l2), l2TimeoutMs: 2 * EPOCH_DELAY_MS });
  clients.push(prompts);
  return { prompts, keys };
}

test('a cold read asks for the item beside the epoch\'s first read, and serves the stream value once the epoch names its incarnation', async () => {
  // GIVEN a written-through L2 holding the prompt's stream value, and an epoch that answers slowly
  const { l2, log } = slowEpochL2(`1 ${INC}`);
  const { prompts, keys } = newClient(l2);
  // WHEN
  const prompt = await prompts.getPrompt('greeting');
  // THEN the item was asked for before the epoch answered (one round trip), and the stream value was served
  expect(log.indexOf('item asked')).toBeGreaterThanOrEqual(0);
  expect(log.indexOf('item asked')).toBeLessThan(log.indexOf('epoch answered'));
  expect(prompt.version).toBe(1);
  expect(keys).not.toContain('greeting/CURRENT');
  expect(prompts.stats().l2Hits).toBeGreaterThanOrEqual(1);
});

test('a stream value is not used when the epoch names another incarnation (the table was re-created), even when asked for first', async () => {
  // GIVEN the same stream value, but the epoch of another table incarnation
  const { l2, log } = slowEpochL2('7 2026-12-02T10:00:00.000');
  const { prompts, keys } = newClient(l2);
  // WHEN
  const prompt = await prompts.getPrompt('greeting');
  // THEN the item was asked for early, yet the table answered
  expect(log.indexOf('item asked')).toBeLessThan(log.indexOf('epoch answered'));
  expect(prompt.version).toBe(1);
  expect(keys).toContain('greeting/CURRENT');
});
