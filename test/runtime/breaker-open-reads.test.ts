/**
 * While the L2's breaker is open (calls fail at once), nothing on a read's path waits: not for the epoch's first read
 * (its incarnation is asked for only once the L2 answered with a value), not for the adapter's first connection. A
 * silent cache costs a reader one L2 timeout, then reads cost what they cost with the L2 off. Real parts: DynamoDB
 * Local, redis-server behind a loopback proxy that can hold its answers (a silent host).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BlackholeProxy, startBlackholeProxy } from './blackhole-proxy';
import { publish, textContent } from './fixtures';
import { cacheTier, PromptCacheL2, PromptClient } from '../../src/runtime';
import { withTimeout } from '../../src/runtime/l2';
import { createValkeyL2 } from '../../src/runtime/valkey';
import { l2EpochKey } from '../../src/schema';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
let server: RedisServer;
const closers: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'kept', 1, textContent('served from the table'));
  server = await startRedisServer();
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await server?.stop();
  await deleteTable(admin, table);
  admin.destroy();
});

async function proxy(): Promise<BlackholeProxy> {
  const p = await startBlackholeProxy(server.port);
  closers.push(() => p.close());
  return p;
}

async function timed<T>(call: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = Date.now();
  const value = await call();
  return { ms: Date.now() - start, value };
}

test('a read while the breaker is open does not wait for the epoch\'s first read (the incarnation still unknown)', async () => {
  // GIVEN a written-through L2 whose epoch read went out before the cache went silent (it is never answered), and
  // whose every other call now fails at once (the breaker open); a long connect timeout bounds the epoch's first read
  const epochKey = l2EpochKey(table);
  let epochReads = 0;
  const l2: PromptCacheL2 = {
    writeThrough: true,
    ready: () => Promise.resolve(),
    get: (key) => {
      if (key === epochKey) {
        epochReads++;
        return new Promise(() => undefined);
      }
      return Promise.reject(new Error('L2 skipped after a failure (a background probe is looking for it)'));
    },
    set: () => Promise.reject(new Error('L2 skipped after a failure (a background probe is looking for it)')),
  };
  const dynamoDB = localDynamoDBClient();
  closers.push(() => dynamoDB.destroy());
  const prompts = new PromptClient({ tableName: table, dynamoDBClient: dynamoDB, l2: cacheTier(l2), l2ConnectTimeoutMs: 4000 });
  closers.push(() => prompts.close());
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(epochReads).toBe(1);
  // WHEN a prompt is read
  const { ms, value } = await timed(() => prompts.getPrompt('kept'));
  // THEN it comes from the table without waiting for the epoch's read (bounded by 4 s + the start-up's L2 call bound:
  // the read used to wait that long), and the L2's failures are counted
  expect(value.provenance.source).toBe('table');
  expect(ms).toBeLessThan(1500);
  expect(prompts.stats().l2Errors).toBeGreaterThan(0);
});

test('a cache silent at start-up: once the breaker is open, reads no longer wait for the first connection', async () => {
  // GIVEN a reader's adapter whose first connection is held (a silent host answers none of its handshake: the AUTH
  // that opens it here, a TLS handshake and an IAM AUTH in a deployment), with a long connect timeout
  const p = await proxy();
  p.slowStart(60_000);
  const l2 = createValkeyL2({
    host: '127.0.0.1', port: p.port, tls: false, cluster: false, connectTimeoutMs: 4000, username: 'default', password: 'unused',
  }, table);
  closers.push(() => l2.close());
  // WHEN a call's caller stops waiting for it (as the client does at its L2 timeout), the breaker opens
  await expect(withTimeout(() => l2.get('k'), 100)).rejects.toThrow(/did not answer within/);
  expect(l2.isTripped).toBe(true);
  expect(l2.isConnected).toBe(false);
  // THEN a read waiting for the first connection (as every read does, bounded) goes on at once, not when the held
  // connection's 4 s end, and its call fails at once: the breaker's error, not its caller's timeout
  const ready = await timed(() => l2.ready());
  expect(ready.ms).toBeLessThan(1000);
  const call = await withTimeout(() => l2.get('k'), 100).then(() => 'answered', (err: Error) => err.message);
  expect(call).toMatch(/L2 skipped after a failure/);
});

test('a read while the store says its breaker is open makes no L2 call (no deadline, no fill encoded) and counts each call it skipped', async () => {
  // GIVEN a written-through store that reports its breaker open, and counts every call made to it
  const calls: string[] = [];
  let tripped = true;
  const l2: PromptCacheL2 = {
    writeThrough: true,
    get isTripped() { return tripped; },
    get: (key) => { calls.push(`get ${key}`); return Promise.resolve(null); },
    set: (key) => { calls.push(`set ${key}`); return Promise.resolve('OK'); },
  };
  const dynamoDB = localDynamoDBClient();
  closers.push(() => dynamoDB.destroy());
  const prompts = new PromptClient({
    tableName: table, dynamoDBClient: dynamoDB, l2: cacheTier(l2), maxAgeSeconds: 0, staleWhileRevalidateSeconds: 0,
  });
  closers.push(() => prompts.close());
  await new Promise((resolve) => setTimeout(resolve, 20));
  const before = calls.filter((c) => !c.includes('#epoch')).length;
  // WHEN a prompt is read twice (each read a miss)
  const first = await prompts.getPrompt('kept');
  await prompts.getPrompt('kept');
  await new Promise((resolve) => setTimeout(resolve, 20));
  // THEN both came from the table, the store was not called for them (the epoch watch aside), and each skipped call
  // is counted as a failed one: per read the stream value's get, the fill's get and the fill's set
  expect(first.provenance.source).toBe('table');
  expect(calls.filter((c) => !c.includes('#epoch')).length).toBe(before);
  expect(prompts.stats().l2Errors).toBeGreaterThanOrEqual(6);
  // WHEN the breaker closes, THEN the next read asks the store again
  tripped = false;
  await prompts.getPrompt('kept');
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(calls.filter((c) => !c.includes('#epoch')).length).toBeGreaterThan(before);
});
