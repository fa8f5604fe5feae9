/**
 * The L2 hook: a shared tier between memory and the table. A test double stands in for Valkey (the hook is an
 * interface; the client is what is under test), the table is real DynamoDB Local.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fakeDate, logGetItemKeys, publish, textContent } from './fixtures';
import { PromptCacheL2, PromptClient } from '../../src/runtime';
import { l2FillKey } from '../../src/schema/l2';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}!'));
});

afterAll(async () => {
  await deleteTable(admin, table);
  admin.destroy();
});

afterEach(() => {
  jest.useRealTimers();
  for (const client of opened.splice(0)) client.destroy();
});

function newClient(l2: PromptCacheL2, maxAgeSeconds = 60) {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  opened.push(dynamoDBClient);
  const keys = logGetItemKeys(dynamoDBClient);
  return { prompts: new PromptClient({ tableName: table, dynamoDBClient, l2, maxAgeSeconds, l2TimeoutMs: 50 }), keys };
}

/** An in-memory L2 with TTLs, like Valkey's `SET key value EX ttl`. */
function memoryL2() {
  const data = new Map<string, { value: string; ttlSeconds: number }>();
  const l2: PromptCacheL2 = {
    get: async (key) => data.get(key)?.value,
    set: async (key, value, ttlSeconds) => { data.set(key, { value, ttlSeconds }); },
    delete: async (key) => { data.delete(key); },
  };
  return { l2, data };
}

test('a prompt read from the table by one client is served to another from the L2', async () => {
  // GIVEN
  const { l2, data } = memoryL2();
  const first = newClient(l2);
  const second = newClient(l2);
  // WHEN
  const a = await first.prompts.getPrompt('greeting');
  await new Promise((resolve) => setImmediate(resolve)); // the L2 write runs in the background
  const b = await second.prompts.getPrompt('greeting');
  // THEN
  expect(b).toMatchObject({ id: 'greeting', version: 1, checksum: a.checksum });
  expect(second.keys).toEqual(['#catalog/CURRENT']);
  expect(second.prompts.stats()).toMatchObject({ l2Hits: 1, l2Errors: 0 });
  // AND the fill lives for the reader's L1 bound (maxAgeSeconds + staleWhileRevalidateSeconds), not longer
  expect(data.get(l2FillKey(table, 'greeting', 'CURRENT'))?.ttlSeconds).toBe(60 + 60);
});

test('an L2 value older than maxAgeSeconds is not used', async () => {
  // GIVEN an L2 entry written 61 s ago by another client
  const { l2 } = memoryL2();
  const clock = fakeDate();
  await newClient(l2).prompts.getPrompt('greeting');
  await new Promise((resolve) => setImmediate(resolve));
  clock.advanceSeconds(61);
  const late = newClient(l2);
  // WHEN
  await late.prompts.getPrompt('greeting');
  // THEN
  expect(late.keys).toEqual(['#catalog/CURRENT', 'greeting/CURRENT']);
  expect(late.prompts.stats()).toMatchObject({ l2Hits: 0, l2Misses: 2 }); // the catalog's key and the prompt's
});

test('an L2 that throws never fails a read', async () => {
  // GIVEN
  const broken: PromptCacheL2 = {
    get: () => { throw new Error('connection refused'); },
    set: async () => { throw new Error('connection refused'); },
    delete: async () => { throw new Error('connection refused'); },
  };
  const { prompts } = newClient(broken);
  // WHEN
  const prompt = await prompts.getPrompt('greeting');
  await new Promise((resolve) => setImmediate(resolve));
  // THEN
  expect(prompt.id).toBe('greeting');
  expect(prompts.stats().l2Errors).toBe(3); // the catalog's get, the prompt's get and its background fill
});

test('an L2 that never answers costs at most l2TimeoutMs, then the table is read', async () => {
  // GIVEN
  const hanging: PromptCacheL2 = { get: () => new Promise(() => undefined), set: () => new Promise(() => undefined) };
  const { prompts } = newClient(hanging);
  // WHEN
  const started = performance.now();
  const prompt = await prompts.getPrompt('greeting');
  // THEN
  expect(prompt.id).toBe('greeting');
  expect(performance.now() - started).toBeLessThan(1000);
  expect(prompts.stats().l2Errors).toBeGreaterThanOrEqual(1);
});

test('an unreadable L2 value is ignored and replaced by the next fill', async () => {
  // GIVEN
  const { l2, data } = memoryL2();
  data.set(l2FillKey(table, 'greeting', 'CURRENT'), { value: 'not json', ttlSeconds: 60 });
  const { prompts } = newClient(l2);
  // WHEN
  const prompt = await prompts.getPrompt('greeting');
  await new Promise((resolve) => setImmediate(resolve));
  // THEN the table was read and its copy replaced the bad value
  expect(prompt.id).toBe('greeting');
  expect(JSON.parse(data.get(l2FillKey(table, 'greeting', 'CURRENT'))!.value).item.prompt_id).toEqual({ S: 'greeting' });
});
