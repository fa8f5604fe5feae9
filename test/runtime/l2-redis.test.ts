/**
 * The L2 adapter of docs/CACHE.md (node-redis `get` / `set … { EX }` / `del`) against a real `redis-server`, with the
 * table in DynamoDB Local (jest global setup) and every GetItem counted. Each `PromptClient` stands for one
 * Lambda instance; they share the Redis connection of this process.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createClient } from 'redis';
import { fakeDate, logGetItemKeys, markDeleted, publish, tableRequestTimes, textContent } from './fixtures';
import { cacheTier, preload, Prompt, PromptCacheL2, PromptClient, PromptClientStats, PromptNotFoundError } from '../../src/runtime';
import { CURRENT, versionKey } from '../../src/schema';
import { l2FillKey } from '../../src/schema/l2';
import { CallCounter } from '../support/call-counter';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const MAX_AGE_SECONDS = 60;
/** The default stale-while-revalidate window: with maxAgeSeconds, the L1 bound a fill lives for. */
const SWR_SECONDS = 60;
const L2_TIMEOUT_MS = 100;
/** Reconnection attempts (50 ms apart) node-redis makes before it gives up on a stopped server. */
const MAX_RECONNECTS = 10;

type Redis = ReturnType<typeof createClient>;

let admin: DynamoDBClient;
/** No catalog item: nothing is ruled out, so not-found answers come from the table. */
let table: string;
let server: RedisServer;
let redis: Redis;
const servers: RedisServer[] = [];
const connections: Redis[] = [];
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}!'));
  await publish(admin, table, 'faq', 1, textContent('v1 {{q}}'));
  await publish(admin, table, 'faq', 2, textContent('v2 {{q}}'));
  await publish(admin, table, 'old', 1, textContent('soon gone'));
  server = await startRedisServer();
  servers.push(server);
  redis = (await connect(server)).redis;
});

beforeEach(async () => {
  await redis.flushAll();
});

afterEach(() => {
  jest.useRealTimers();
  for (const client of opened.splice(0)) client.destroy();
});

afterAll(async () => {
  for (const connection of connections) {
    if (connection.isReady) await connection.close();
    else if (connection.isOpen) connection.destroy();
  }
  await Promise.all(servers.map((s) => s.stop()));
  await deleteTable(admin, table);
  admin.destroy();
});

/** A node-redis client that gives up reconnecting after `MAX_RECONNECTS` tries; errors are collected, not thrown. */
async function connect(to: RedisServer): Promise<{ redis: Redis; errors: unknown[] }> {
  const errors: unknown[] = [];
  const client = createClient({
    url: to.url,
    socket: { connectTimeout: 1000, reconnectStrategy: (retries) => (retries < MAX_RECONNECTS ? 50 : false) },
  });
  client.on('error', (err) => errors.push(err));
  connections.push(client);
  await client.connect();
  return { redis: client, errors };
}

/** The adapter exactly as docs/CACHE.md ("Your own shared cache") shows it. */
function readmeAdapter(client: Redis): PromptCacheL2 {
  return {
    get: (key) => client.get(key),
    set: (key, value, ttlSeconds) => client.set(key, value, { EX: ttlSeconds }),
    delete: (key) => client.del(key),
  };
}

/** A fresh PromptClient (a new Lambda instance) with its own SDK client, GetItem counted and its keys logged. */
function newInstance(l2: PromptCacheL2 = readmeAdapter(redis)) {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  opened.push(dynamoDBClient);
  const keys = logGetItemKeys(dynamoDBClient);
  const prompts = new PromptClient({
    tableName: table,
    dynamoDBClient,
    l2: cacheTier(l2),
    maxAgeSeconds: MAX_AGE_SECONDS,
    l2TimeoutMs: L2_TIMEOUT_MS,
    // Fresh instances time single calls: a start-up budget no longer than one call's (test/runtime/l2.test.ts has the start-up's).
    l2ConnectTimeoutMs: L2_TIMEOUT_MS,
  });
  return { prompts, counter, keys, dynamoDBClient };
}

/** Polls until `check` holds (the client writes and deletes L2 keys in the background). */
async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a prompt one instance read from the table is served to a fresh instance from Redis, under its fill key, for the L1 bound', async () => {
  // GIVEN a first instance that reads the prompt from the table (its catalog read done at init)
  const first = newInstance();
  await preload(first.prompts);
  first.counter.reset();
  const read = await first.prompts.getPrompt('greeting');
  const key = l2FillKey(table, 'greeting', CURRENT);
  await waitFor(async () => (await redis.exists(key)) === 1, `${key} in Redis`);
  const second = newInstance();
  await preload(second.prompts);
  second.counter.reset();

  // WHEN a second, fresh instance reads it
  const shared = await second.prompts.getPrompt('greeting');

  // THEN the first read the table once and filled Redis
  expect(first.counter.count('GetItem')).toBe(1);
  expect(first.keys.filter((k) => k === 'greeting/CURRENT')).toHaveLength(1);
  expect(first.prompts.stats()).toMatchObject({ l2Hits: 0, l2Misses: 2, l2Errors: 0 }); // the catalog (none in this table) and the prompt
  // AND the second was served by Redis, without a GetItem of the prompt
  expect(second.counter.count('GetItem')).toBe(0);
  expect(second.keys).not.toContain('greeting/CURRENT');
  expect(second.prompts.stats()).toMatchObject({ l2Hits: 1, l2Misses: 1, l2Errors: 0 }); // the miss: its catalog probe (preload)
  expect(shared).toMatchObject({ id: 'greeting', version: 1, checksum: read.checksum, stale: false });
  expect(shared.content).toEqual(read.content);
  // AND the value sits under l2FillKey(...) alone, expiring within the L1 bound (maxAgeSeconds + staleWhileRevalidateSeconds)
  expect(await redis.keys('*')).toEqual([key]);
  const ttl = await redis.ttl(key);
  expect(ttl).toBeGreaterThan(MAX_AGE_SECONDS + SWR_SECONDS - 5);
  expect(ttl).toBeLessThanOrEqual(MAX_AGE_SECONDS + SWR_SECONDS);
  expect(JSON.parse((await redis.get(key))!)).toEqual({
    inc: null, // a store the invalidation function does not write through: no table incarnation known
    fetchedAt: expect.any(Number),
    item: expect.objectContaining({ prompt_id: { S: 'greeting' }, version: { S: CURRENT }, version_number: { N: '1' }, checksum: { S: read.checksum } }),
  });
});

test('a reader stores an exact version and the CURRENT pointer alike for its L1 bound, never longer', async () => {
  // GIVEN an instance that reads CURRENT (v2) and the exact version 1 from the table
  const first = newInstance();
  const current = await first.prompts.getPrompt('faq');
  const pinned = await first.prompts.getPrompt('faq', { version: 1 });
  const versionL2Key = l2FillKey(table, 'faq', versionKey(1));
  const currentL2Key = l2FillKey(table, 'faq', CURRENT);
  await waitFor(async () => (await redis.exists([versionL2Key, currentL2Key])) === 2, 'both faq keys in Redis');
  const second = newInstance();

  // WHEN a fresh instance reads version 1
  const shared = await second.prompts.getPrompt('faq', { version: 1 });

  // THEN both keys live at most maxAgeSeconds + staleWhileRevalidateSeconds
  for (const k of [versionL2Key, currentL2Key]) {
    const ttl = await redis.ttl(k);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(MAX_AGE_SECONDS + SWR_SECONDS);
  }
  expect(current).toMatchObject({ version: 2 });
  // AND the fresh instance got version 1 from Redis
  expect(shared).toMatchObject({ id: 'faq', version: 1, checksum: pinned.checksum });
  expect(second.keys).not.toContain('faq/v000001');
  expect(second.prompts.stats()).toMatchObject({ l2Hits: 1, l2Errors: 0 });
});

test('redis-server stopped mid-run: reads keep succeeding from the table, L2 errors are counted, none waits for the L2 much past l2TimeoutMs', async () => {
  // GIVEN a redis-server of this test's own, and three workers starting fresh instances that each read one prompt
  const doomed = await startRedisServer();
  servers.push(doomed);
  const { redis: connection, errors } = await connect(doomed);
  const l2 = readmeAdapter(connection);
  // How long each read waited before its table request went out (the L2's share of the read; the table's own time,
  // which a loaded machine stretches, left out).
  const runs: { stats: PromptClientStats; afterStop: boolean; msToTable?: number }[] = [];
  const served: Prompt[] = [];
  const failures: unknown[] = [];
  let stopped = false;
  let running = true;
  const worker = async () => {
    while (running) {
      const afterStop = stopped;
      const instance = newInstance(l2);
      await preload(instance.prompts); // the init phase: the catalog read, not timed
      const tableAt = tableRequestTimes(instance.dynamoDBClient);
      const started = performance.now();
      await instance.prompts.getPrompt('greeting').then((p) => served.push(p), (e: unknown) => failures.push(e));
      runs.push({ stats: instance.prompts.stats(), afterStop, msToTable: tableAt.length === 0 ? undefined : tableAt[0] - started });
    }
  };
  const load = Promise.all([worker(), worker(), worker()]);
  await waitFor(async () => runs.some((r) => r.stats.l2Hits === 1) && runs.length >= 6, 'reads served by Redis');

  // WHEN the server is stopped while reads go on, and node-redis gives up reconnecting
  await doomed.stop();
  stopped = true;
  await waitFor(async () => !connection.isOpen, 'node-redis to give up reconnecting');
  const closedAt = runs.length;
  await waitFor(async () => runs.length >= closedAt + 6, 'reads after node-redis gave up');
  running = false;
  await load;

  // THEN no read failed, each one got the prompt
  expect(failures).toEqual([]);
  expect(served).toHaveLength(runs.length);
  expect(new Set(served.map((p) => `${p.id}@${p.version}:${p.checksum}`)).size).toBe(1);
  // AND every instance started after the stop failed over to the table, its L2 errors counted
  const after = runs.filter((r) => r.afterStop);
  expect(after.length).toBeGreaterThanOrEqual(6);
  for (const run of after) {
    expect(run.stats).toMatchObject({ l2Hits: 0, storeErrors: 0 });
    expect(run.stats.l2Errors).toBeGreaterThanOrEqual(1);
  }
  // AND none waited for the L2 much longer than l2TimeoutMs before asking the table (a stopped server refuses
  // connections, so node-redis fails each command at once; an L2 that never answers is bounded by l2TimeoutMs in
  // test/runtime/l2.test.ts)
  for (const run of after) expect(run.msToTable).toBeLessThan(L2_TIMEOUT_MS + 400);
  // AND node-redis reported the outage and stopped reconnecting
  expect(errors.length).toBeGreaterThan(0);
  expect(connection.isOpen).toBe(false);
});

test('a tombstone read from the table replaces the shared copy, so the next instance is told without a table read', async () => {
  // GIVEN a copy of "old" in Redis, then the prompt deleted in the table, then maxAgeSeconds passing
  const clock = fakeDate();
  const key = l2FillKey(table, 'old', CURRENT);
  await newInstance().prompts.getPrompt('old');
  await waitFor(async () => (await redis.exists(key)) === 1, `${key} in Redis`);
  await markDeleted(admin, table, 'old');
  clock.advanceSeconds(MAX_AGE_SECONDS + 1); // Date only: Redis still holds the key
  expect(await redis.exists(key)).toBe(1);
  const next = newInstance();

  // WHEN a fresh instance reads it
  const error = await next.prompts.getPrompt('old').catch((e: unknown) => e);

  // THEN not found from the table, and the shared copy is gone
  expect(error).toBeInstanceOf(PromptNotFoundError);
  expect((error as Error).message).toBe("prompt 'old' not found: deleted");
  expect(next.keys).toContain('old/CURRENT');
  expect(next.prompts.stats()).toMatchObject({ l2Hits: 0, l2Misses: 2, l2Errors: 0 }); // the catalog's key and the prompt's
  await waitFor(async () => JSON.parse((await redis.get(key)) ?? '{}').item?.status?.S === 'DELETED', `the tombstone of ${key} in Redis`);
  // AND the instance after it is told the same by Redis
  const after = newInstance();
  await expect(after.prompts.getPrompt('old')).rejects.toThrow("prompt 'old' not found: deleted");
  expect(after.keys).not.toContain('old/CURRENT');
  expect(after.prompts.stats()).toMatchObject({ l2Hits: 1 });
});

test('a not-found answer is not shared: a prompt created after it is served to the next instance', async () => {
  // GIVEN an instance told that "later" does not exist
  const first = newInstance();
  await expect(first.prompts.getPrompt('later')).rejects.toBeInstanceOf(PromptNotFoundError);
  await new Promise((resolve) => setTimeout(resolve, 20)); // room for any background L2 write
  const nothingStored = await redis.keys('*');
  await publish(admin, table, 'later', 1, textContent('here now'));
  const next = newInstance();

  // WHEN a fresh instance reads it
  const prompt = await next.prompts.getPrompt('later');

  // THEN Redis held nothing for it, and the fresh instance read the table
  expect(nothingStored).toEqual([]);
  expect(prompt).toMatchObject({ id: 'later', version: 1, stale: false });
  expect(next.keys).toContain('later/CURRENT');
  expect(next.prompts.stats()).toMatchObject({ l2Hits: 0, l2Misses: 2 }); // the catalog (none in this table) and the prompt
});
