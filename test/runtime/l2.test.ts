/**
 * The L2 hook: a shared tier between memory and the table. A test double stands in for Valkey (the hook is an
 * interface; the client is what is under test), the table is real DynamoDB Local.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fakeDate, logGetItemKeys, publish, tableRequestTimes, textContent } from './fixtures';
import { cacheTier, PromptCacheL2, PromptClient } from '../../src/runtime';
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
  // A start-up budget no longer than one call's: these tests time single calls (the start-up has tests of its own).
  const prompts = new PromptClient({ tableName: table, dynamoDBClient, l2: cacheTier(l2), maxAgeSeconds, l2TimeoutMs: 50, l2ConnectTimeoutMs: 50 });
  return { prompts, keys };
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

describe('the start-up budget: the first connection and the first round trips share l2ConnectTimeoutMs', () => {
  /** An L2 whose every answer takes `delayMs`; counts calls. */
  function slowL2(delayMs: number): { l2: PromptCacheL2; data: Map<string, { value: string; ttlSeconds: number }>; calls: () => number } {
    const { l2: memory, data } = memoryL2();
    let calls = 0;
    const later = <T>(value: () => Promise<T>) => new Promise<T>((resolve, reject) => {
      calls++;
      setTimeout(() => value().then(resolve, reject), delayMs);
    });
    return { l2: { get: (key) => later(() => memory.get(key)), set: (k, v, t) => later(() => memory.set(k, v, t)) }, data, calls: () => calls };
  }

  function client(l2: PromptCacheL2, l2ConnectTimeoutMs: number) {
    const counter = new CallCounter();
    const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
    opened.push(dynamoDBClient);
    const keys = logGetItemKeys(dynamoDBClient);
    const tableAt = tableRequestTimes(dynamoDBClient);
    return { prompts: new PromptClient({ tableName: table, dynamoDBClient, l2: cacheTier(l2), l2TimeoutMs: 50, l2ConnectTimeoutMs }), keys, tableAt };
  }

  test('during the start-up, an answer slower than l2TimeoutMs is waited for: served from the L2, no table read', async () => {
    // GIVEN a fill of "greeting" in an L2 that answers in 250 ms, five times l2TimeoutMs
    const seed = memoryL2();
    const { prompts: seeding } = newClient(seed.l2);
    await seeding.getPrompt('greeting');
    await new Promise((resolve) => setImmediate(resolve));
    const slow = slowL2(250);
    for (const [k, v] of seed.data) slow.data.set(k, v);
    // WHEN a reader starts (start-up budget 1 s) and reads it
    const { prompts, keys } = client(slow.l2, 1000);
    const started = performance.now();
    const prompt = await prompts.getPrompt('greeting');
    // THEN the L2 served it after its 250 ms, and the table was not asked for the prompt
    expect(prompt.provenance.source).toBe('l2');
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);
    expect(keys).not.toContain('greeting/CURRENT');
    expect(prompts.stats()).toMatchObject({ l2Errors: 0 });
    expect(prompts.stats().l2Hits).toBeGreaterThanOrEqual(1);
  });

  test('the start-up begins at the first read, not at construction; after it, the same slow L2 costs at most l2TimeoutMs', async () => {
    // GIVEN a fill of "greeting" in an L2 that answers in 150 ms, and a reader constructed 300 ms before its first read
    const seed = memoryL2();
    await newClient(seed.l2).prompts.getPrompt('greeting');
    await new Promise((resolve) => setImmediate(resolve));
    const slow = slowL2(150);
    for (const [k, v] of seed.data) slow.data.set(k, v);
    const { prompts, keys, tableAt } = client(slow.l2, 400);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // WHEN it reads for the first time
    const first = await prompts.getPrompt('greeting');
    // THEN its start-up budget (400 ms) covered the 150 ms answers: served from the L2
    expect(first.provenance.source).toBe('l2');
    expect(keys).not.toContain('greeting/CURRENT');
    // AND once the start-up is over, a read gives up on the L2 after l2TimeoutMs (50 ms) and reads the table
    await new Promise((resolve) => setTimeout(resolve, 450));
    prompts.invalidate('greeting');
    const asked = tableAt.length;
    const started = performance.now();
    const later = await prompts.getPrompt('greeting');
    expect(later.provenance.source).toBe('table');
    expect(tableAt).toHaveLength(asked + 1);
    expect(tableAt[asked] - started).toBeLessThan(50 + 150);
    expect(keys).toContain('greeting/CURRENT');
  });

  test('an L2 that never answers costs a starting reader at most what is left of its start-up budget', async () => {
    // GIVEN
    const hanging: PromptCacheL2 = { get: () => new Promise(() => undefined), set: () => new Promise(() => undefined) };
    const { prompts, tableAt } = client(hanging, 300);
    // WHEN
    const started = performance.now();
    const prompt = await prompts.getPrompt('greeting');
    // THEN the start-up budget bounded the wait (timed until the table was asked), then the table answered; later
    // reads get l2TimeoutMs
    expect(prompt.provenance.source).toBe('table');
    expect(tableAt[0] - started).toBeGreaterThanOrEqual(250);
    expect(tableAt[0] - started).toBeLessThan(300 + 150);
    prompts.invalidate('greeting');
    const asked = tableAt.length;
    const again = performance.now();
    expect((await prompts.getPrompt('greeting')).provenance.source).toBe('table');
    expect(tableAt).toHaveLength(asked + 1);
    expect(tableAt[asked] - again).toBeLessThan(50 + 150);
  });
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
