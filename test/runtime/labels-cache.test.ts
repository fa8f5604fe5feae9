/**
 * Labels with the cache tier, real parts only: DynamoDB Local with its stream, the BUNDLED invalidation handler fed
 * by a stand-in of the event source mapping (the construct's filter criteria included: `CURRENT` and `LABEL#…`), a
 * TLS cluster-mode redis-server with the library's ACL users, PromptClients over the built-in Valkey adapter — in
 * this process, and in a fleet of 20 reader processes for the rollout.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { build } from 'esbuild';
import { publish, textContent, writeCatalog } from './fixtures';
import { removeRollout, rolloutMap, setRollout, writeLabel } from './labels-fixtures';
import { cacheTier, labels, preload, PromptClient } from '../../src/runtime';
import { decodeStreamValue, l2ItemKey, rolloutBucket } from '../../src/schema';
import { toItem } from '../../src/schema/ddb-codec';
import { cacheClient, createStreamTable, poller, startCache, startHandler } from '../invalidation/cache-fixture';
import { CallCounter } from '../support/call-counter';
import { LambdaProcess, startLambda } from '../support/lambda-runner';
import { RedisServer } from '../support/redis-server';
import { StreamPoller } from '../support/stream-poller';
import { deleteTable, localDynamoDBClient, localEndpoint } from '../support/table';

let admin: DynamoDBClient;
let table: string;
let streamArn: string;
let cache: RedisServer;
let fn: LambdaProcess;
let stream: StreamPoller;
const closers: (() => Promise<unknown> | unknown)[] = [];
const v1 = textContent('Hello v1 {{name}}');
const v2 = textContent('Hello v2 {{name}}');
const v3 = textContent('Hello v3 {{name}}');

beforeAll(async () => {
  admin = localDynamoDBClient();
  ({ table, streamArn } = await createStreamTable(admin));
  cache = await startCache(table);
  fn = await startHandler(table, cache);
  stream = poller(streamArn, fn.invoke, { batchSize: 25, maxRetries: 3 });
  for (const [n, content] of [[1, v1], [2, v2], [3, v3]] as const) await publish(admin, table, 'greeting', n, content);
  await writeLabel(admin, table, 'greeting', 'production', 1, v1);
  await writeLabel(admin, table, 'greeting', 'fleet', 1, v1);
  await writeCatalog(admin, table, ['greeting']);
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

async function reader(options: { maxAgeSeconds?: number } = {}) {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  const l2 = cacheClient(cache);
  const prompts = new PromptClient({
    tableName: table, dynamoDBClient, l2: cacheTier(l2), epochPollIntervalMs: 100, l2TimeoutMs: 200, features: [labels], ...options,
  });
  closers.push(() => prompts.close(), () => l2.close(), () => dynamoDBClient.destroy());
  await preload(prompts);
  const tableReads = () => counter.count('GetItem') + counter.count('BatchGetItem');
  return { prompts, tableReads };
}

test('label rows are written through to the L2 by the invalidation function; version items and audit records are not', async () => {
  // GIVEN a label write and an audit record (a row the filter must drop)
  await writeLabel(admin, table, 'greeting', 'production', 2, v2);
  const auditKey = 'AUDIT#2026-12-01T18:00:00.000Z#1f2e3d4c';
  await admin.send(new PutItemCommand({ TableName: table, Item: toItem({ prompt_id: 'greeting', version: auditKey, action: 'label', target: 'production', to_version: 2 }) }));
  await stream.drain();
  // THEN the label's stream value is in the L2, under its own sort key
  const l2 = cacheClient(cache);
  try {
    const raw = await l2.get(l2ItemKey(table, 'greeting', 'LABEL#production'));
    const value = decodeStreamValue(raw, 'greeting', 'LABEL#production');
    expect(value?.item?.version_number).toEqual({ N: '2' });
    expect(await l2.get(l2ItemKey(table, 'greeting', 'v000002'))).toBeNull();
    expect(await l2.get(l2ItemKey(table, 'greeting', auditKey))).toBeNull();
  } finally {
    await l2.close();
  }
  await writeLabel(admin, table, 'greeting', 'production', 1, v1);
  await stream.drain();
});

test('a label move reaches every reader through the epoch, like a CURRENT move, with no table read', async () => {
  // GIVEN 5 readers holding production (v1) in memory for a minute
  const readers = await Promise.all(Array.from({ length: 5 }, () => reader({ maxAgeSeconds: 60 })));
  for (const r of readers) expect((await r.prompts.getPrompt('greeting', { label: 'production' })).version).toBe(1);
  const before = readers.map((r) => r.tableReads());

  // WHEN the label moves to v3 and the stream is delivered
  await writeLabel(admin, table, 'greeting', 'production', 3, v3);
  const written = performance.now();
  await stream.drain();
  const seen = await Promise.all(readers.map(async (r) => {
    while ((await r.prompts.getPrompt('greeting', { label: 'production' })).version !== 3) {
      if (performance.now() - written > 5000) throw new Error('not served within 5 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return performance.now() - written;
  }));

  // THEN every reader serves v3 well within 5 s of the table write, and none read the table for it
  expect(Math.max(...seen)).toBeLessThan(5000);
  expect(readers.map((r) => r.tableReads())).toEqual(before);
  for (const r of readers) expect(r.prompts.stats().revalidations).toBeGreaterThanOrEqual(1);
});

describe('a fleet of 20 reader processes during a rollout', () => {
  const READERS = 20;
  const KEYS_PER_READER = 100;
  const fleet: LambdaProcess[] = [];
  const keysOf = (r: number) => Array.from({ length: KEYS_PER_READER }, (_, k) => `tenant-${r}-${k}`);
  const expected = (r: number, percentBp: number) => keysOf(r).map((key) => (rolloutBucket('greeting', 'fleet', key) < percentBp ? 'B' : 'A'));

  beforeAll(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'labels-fleet-'));
    closers.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const bundle = path.join(dir, 'index.js');
    await build({ entryPoints: [path.join(__dirname, 'labels-fleet-reader.ts')], bundle: true, platform: 'node', target: 'node20', outfile: bundle, logLevel: 'error' });
    const env = {
      TABLE_NAME: table,
      DYNAMODB_ENDPOINT: localEndpoint(),
      CACHE_PORT: String(cache.port),
      CACHE_CA: cache.ca!,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      EPOCH_POLL_MS: '500',
      // node-redis is loaded at run time (as the reader layer provides it), from the project's node_modules here
      NODE_PATH: path.resolve(__dirname, '../../node_modules'),
    };
    fleet.push(...await Promise.all(Array.from({ length: READERS }, () => startLambda(bundle, env))));
    closers.push(() => Promise.all(fleet.map((p) => p.stop())));
    const started = await Promise.all(fleet.map((p, r) => p.invoke<{ arms: string[] }>({ op: 'start', id: 'greeting', label: 'fleet', keys: keysOf(r) })));
    expect(started.every((s) => s.arms.every((arm) => arm === 'A'))).toBe(true);
  }, 120_000);

  /** Writes `change`, delivers the stream, and waits until every reader serves every key the arm `percentBp` gives. */
  async function step(change: () => Promise<void>, percentBp: number) {
    await change();
    const written = Date.now();
    await stream.drain();
    const results = await Promise.all(fleet.map((p, r) => p.invoke<{ at: number | null; flips: number; arms?: string[] }>({
      op: 'until', id: 'greeting', label: 'fleet', keys: keysOf(r), expect: expected(r, percentBp), timeoutMs: 10_000,
    })));
    return { results, slowestMs: Math.max(...results.map((x) => (x.at ?? Infinity) - written)) };
  }

  test('10 % → 50 % → 100 %: exactly the hash\'s share of keys on B at each step, and no key ever goes back from B to A', async () => {
    for (const percentBp of [1000, 5000, 10000]) {
      const { results, slowestMs } = await step(() => setRollout(admin, table, 'greeting', 'fleet', rolloutMap('r-fleet', 2, v2, percentBp)), percentBp);
      // every reader reached exactly the expected arms (so the share is the hash's, key by key) ...
      expect(results.map((x) => x.at === null)).toEqual(fleet.map(() => false));
      expect(slowestMs).toBeLessThan(5000);
      // ... and none served a key arm A after it had served it arm B
      expect(results.map((x) => x.flips)).toEqual(fleet.map(() => 0));
    }
    const onB = Array.from({ length: READERS }, (_, r) => expected(r, 5000).filter((a) => a === 'B').length).reduce((a, b) => a + b, 0);
    expect(onB).toBeGreaterThan(800); // the 50 % step moved about half of the 2000 keys
    expect(onB).toBeLessThan(1200);
  }, 120_000);

  test('removing the rollout (abort) returns every reader to arm A within the tier\'s propagation time', async () => {
    const { results, slowestMs } = await step(() => removeRollout(admin, table, 'greeting', 'fleet'), 0);
    expect(results.map((x) => x.at === null)).toEqual(fleet.map(() => false));
    // the epoch is read every 500 ms: every reader is back on A within a few polls of the write
    expect(slowestMs).toBeLessThan(3000);
    const stats = await Promise.all(fleet.map((p) => p.invoke<{ stats: { rolloutFaults: number; storeErrors: number } }>({ op: 'stats' })));
    expect(stats.map((s) => s.stats.rolloutFaults)).toEqual(fleet.map(() => 0));
    process.stdout.write(`labels fleet: abort reached all ${READERS} readers within ${slowestMs} ms\n`);
  }, 60_000);
});
