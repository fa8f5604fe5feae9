/**
 * The cache tier end to end with real parts: DynamoDB Local with its stream, the BUNDLED invalidation handler
 * fed by a stand-in of the event source mapping, a TLS cluster-mode redis-server with the library's ACL users,
 * and PromptClients using the built-in Valkey adapter as readers (IAM token per connection).
 */
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { publish, textContent, writeCatalog } from './fixtures';
import { cacheTier, preload, PromptClient } from '../../src/runtime';
import { ValkeyL2 } from '../../src/runtime/valkey';
import { CURRENT, decodeStreamValue, Env, l2ItemKey, l2ReaderAccessRules } from '../../src/schema';
import { cacheClient, createStreamTable, poller, startCache, startHandler } from '../invalidation/cache-fixture';
import { CallCounter } from '../support/call-counter';
import { LambdaProcess } from '../support/lambda-runner';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { StreamPoller } from '../support/stream-poller';
import { deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
let streamArn: string;
let cache: RedisServer;
let fn: LambdaProcess;
let stream: StreamPoller;
const closers: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  ({ table, streamArn } = await createStreamTable(admin));
  cache = await startCache(table);
  fn = await startHandler(table, cache);
  stream = poller(streamArn, fn.invoke, { batchSize: 25, maxRetries: 3 });
  await publish(admin, table, 'greeting', 1, textContent('Hello v1 {{name}}'));
  await writeCatalog(admin, table, ['greeting', ...Array.from({ length: 8 }, (_, i) => `race-${i}`)]);
  await stream.drain();
}, 60_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  stream?.close();
  await fn?.stop();
  await cache?.stop();
  await deleteTable(admin, table);
  admin.destroy();
});

/** A reader process: its own SDK client (requests counted), its own adapter connection. */
async function reader(options: { maxAgeSeconds?: number; epochPollIntervalMs?: number; staleWhileRevalidateSeconds?: number } = {}) {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  const l2 = cacheClient(cache);
  const prompts = new PromptClient({ tableName: table, dynamoDBClient, l2: cacheTier(l2), epochPollIntervalMs: 100, l2TimeoutMs: 200, ...options });
  closers.push(() => prompts.close(), () => l2.close(), () => dynamoDBClient.destroy());
  await preload(prompts);
  const tableReads = () => counter.count('GetItem') + counter.count('BatchGetItem');
  return { prompts, counter, l2, tableReads };
}

test('a change reaches every reader through the epoch within about one poll interval, with no table read', async () => {
  // GIVEN 5 readers holding v1 in memory for a minute
  const readers = await Promise.all(Array.from({ length: 5 }, () => reader({ maxAgeSeconds: 60 })));
  for (const r of readers) expect((await r.prompts.getPrompt('greeting')).version).toBe(1);
  const before = readers.map((r) => r.tableReads());

  // WHEN the pointer changes and the stream is delivered to the invalidation function
  await publish(admin, table, 'greeting', 2, textContent('Hello v2 {{name}}'));
  const written = performance.now();
  await stream.drain();
  const seen = await Promise.all(readers.map(async (r) => {
    while ((await r.prompts.getPrompt('greeting')).version !== 2) {
      if (performance.now() - written > 5000) throw new Error('not served within 5 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return performance.now() - written;
  }));

  // THEN every reader serves v2 well within 5 s of the table write, and none read the table for it
  expect(Math.max(...seen)).toBeLessThan(5000);
  expect(readers.map((r) => r.tableReads())).toEqual(before);
  for (const r of readers) expect(r.prompts.stats()).toMatchObject({ epochMoves: expect.any(Number), revalidations: 1 });
});

test('redis-server killed and restarted under load: 0 failed reads of a cached prompt, and the L2 resumes by itself', async () => {
  // GIVEN 4 readers whose memory copies expire every second, so they keep going to the L2
  const readers = await Promise.all(Array.from({ length: 4 }, () => reader({ maxAgeSeconds: 1, staleWhileRevalidateSeconds: 0 })));
  let failures = 0;
  let reads = 0;
  let running = true;
  const load = Promise.all(readers.map(async (r) => {
    while (running) {
      await r.prompts.getPrompt('greeting').then(() => reads++, () => failures++);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const hitsBefore = readers.map((r) => r.prompts.stats().l2Hits);

  // WHEN the server is killed, stays down a second, and comes back on the same port
  cache.process.kill('SIGKILL');
  await cache.stop();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  cache = await startCache(table, cache);
  // the restarted cache is empty: the next write-through (and the readers' own fills) repopulate it
  await publish(admin, table, 'greeting', 1, textContent('Hello v1 {{name}}'));
  await stream.drain();
  const hitsAfter = readers.map((r) => r.prompts.stats().l2Hits);
  // the readers reconnect by their backoff (1 s, doubling, jittered): wait for every one, at most 10 s
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && !readers.every((r, i) => r.prompts.stats().l2Hits > hitsAfter[i])) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  running = false;
  await load;

  // THEN no read failed, and every reader was served by the L2 again after the restart
  expect(failures).toBe(0);
  expect(reads).toBeGreaterThan(100);
  for (let i = 0; i < readers.length; i++) expect(readers[i].prompts.stats().l2Hits).toBeGreaterThan(hitsAfter[i]);
  expect(hitsAfter.every((h, i) => h >= hitsBefore[i])).toBe(true);
  expect(readers.every((r) => r.l2.isConnected)).toBe(true);
});

test('randomized race of syncs, rollbacks, reader fills and duplicated, reordered stream deliveries: once drained, the L2 never holds an older pointer than the table', async () => {
  // GIVEN 8 prompts and 3 readers filling the L2 from the table as they miss (memory copies expire at once)
  const ids = Array.from({ length: 8 }, (_, i) => `race-${i}`);
  for (const id of ids) await publish(admin, table, id, 1, textContent(`${id} v1`));
  await stream.drain();
  const readers = await Promise.all(Array.from({ length: 3 }, () => reader({ maxAgeSeconds: 0, staleWhileRevalidateSeconds: 0 })));
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);

  // WHEN 120 writes (new versions and rollbacks to older ones) race with reads and with deliveries that are
  // duplicated and delivered out of order
  const version = new Map(ids.map((id) => [id, 1]));
  let running = true;
  const fills = Promise.all(readers.map(async (r) => {
    while (running) {
      await r.prompts.getPrompt(ids[Math.floor(random() * ids.length)]).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 1)); // a served-stale read settles at once: let I/O run
    }
  }));
  for (let i = 0; i < 120; i++) {
    const id = ids[Math.floor(random() * ids.length)];
    const rollback = random() < 0.3 && version.get(id)! > 1;
    const next = rollback ? Math.max(1, version.get(id)! - 1 - Math.floor(random() * 2)) : version.get(id)! + 1;
    version.set(id, next);
    await publish(admin, table, id, next, textContent(`${id} v${next}`));
    if (random() < 0.25) {
      const records = (await stream.read()).filter((r) => r.dynamodb.Keys.version?.S === CURRENT);
      const shuffled = [...records, ...records.filter(() => random() < 0.5)].sort(() => random() - 0.5);
      if (shuffled.length > 0) await fn.invoke({ Records: shuffled });
    }
  }
  running = false;
  await fills;
  // a final redelivery of everything, oldest last
  await stream.drain();

  // THEN each L2 pointer has the table's revision and version
  for (const id of ids) {
    const key = { prompt_id: { S: id }, version: { S: CURRENT } };
    const { Item } = await admin.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }));
    const raw = await readers[0].l2.get(l2ItemKey(table, id, CURRENT));
    const value = decodeStreamValue(raw!, id, CURRENT)!;
    expect({ id, item: value.item }).toEqual({ id, item: Item });
  }
});

test('new PromptClient() turns the L2 on by itself from the environment contract (IAM auth, cluster, no TLS here)', async () => {
  // GIVEN a plain (non-TLS) cluster-mode redis-server with the reader user, and the variables addReader sets
  const plain = await startRedisServer({
    cluster: true, users: [{ name: 'auto-reader', password: 'unused', rules: `nopass ${l2ReaderAccessRules(table)}` }],
  });
  closers.push(() => plain.stop());
  const env = {
    [Env.tableName]: table,
    [Env.cacheEndpoint]: `127.0.0.1:${plain.port}`,
    [Env.cacheTls]: 'false',
    [Env.cacheAuth]: 'iam',
    [Env.cacheUser]: 'auto-reader',
    [Env.cacheName]: 'prompts-cache',
    [Env.cacheCluster]: 'true',
  };
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const first = new PromptClient({ dynamoDBClient: localDynamoDBClient() });
    const second = new PromptClient({ dynamoDBClient: localDynamoDBClient() });
    closers.push(() => first.close(), () => second.close());
    // WHEN the first reads from the table (and fills the L2), then the second reads
    await preload(first);
    await first.getPrompt('greeting');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await preload(second);
    const shared = await second.getPrompt('greeting');
    // THEN the second was served by the L2 the first filled
    expect(shared.id).toBe('greeting');
    expect(second.stats()).toMatchObject({ l2Hits: 2, l2Errors: 0 }); // the catalog and the prompt
  } finally {
    for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
  }
});

test('a client given another table than the environment\'s never uses the environment\'s cache: it belongs to that table', async () => {
  // GIVEN the variables addReader sets for ANOTHER table: its cache, whose reader user may read only that table's keys
  const other = 'another-table';
  const foreign = await startRedisServer({
    cluster: true, users: [{ name: 'other-reader', password: 'unused', rules: `nopass ${l2ReaderAccessRules(other)}` }],
  });
  closers.push(() => foreign.stop());
  const env = {
    [Env.tableName]: other,
    [Env.cacheEndpoint]: `127.0.0.1:${foreign.port}`,
    [Env.cacheTls]: 'false',
    [Env.cacheAuth]: 'iam',
    [Env.cacheUser]: 'other-reader',
    [Env.cacheName]: 'prompts-cache',
    [Env.cacheCluster]: 'true',
  };
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    // WHEN a client is given this table explicitly and reads
    const prompts = new PromptClient({ tableName: table, dynamoDBClient: localDynamoDBClient() });
    closers.push(() => prompts.close());
    await preload(prompts);
    const prompt = await prompts.getPrompt('greeting');
    // THEN it read its own table and never touched the other table's cache (no refusal, no L2 call at all)
    expect(prompt.id).toBe('greeting');
    expect(prompts.stats()).toMatchObject({ l2Hits: 0, l2Misses: 0, l2Errors: 0, l2Unavailable: 0 });
  } finally {
    for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
  }
});

test('a misconfigured cache environment fails at construction, naming the variable', () => {
  const saved = { ...process.env };
  process.env[Env.tableName] = table;
  process.env[Env.cacheEndpoint] = 'no-port';
  try {
    expect(() => new PromptClient({ tableName: table })).toThrow(`${Env.cacheEndpoint}="no-port" must be host:port`);
    process.env[Env.cacheEndpoint] = 'h:6379';
    delete process.env[Env.cacheUser];
    expect(() => new PromptClient({ tableName: table })).toThrow(`${Env.cacheUser} must be set when ${Env.cacheAuth} is iam`);
  } finally {
    process.env = saved;
  }
});

void ValkeyL2;
