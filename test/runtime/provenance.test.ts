/**
 * Read provenance: every prompt says which tier served it, whether stale and how old; `onRead`
 * receives the same per read; the helpers turn it into a log line, EMF metrics and OpenTelemetry span attributes.
 * Real parts: DynamoDB Local, redis-server (the L2), the real `@opentelemetry/api` (a devDependency) with a span of our own.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { context, ROOT_CONTEXT, trace, type Context, type ContextManager, type Span, type SpanContext } from '@opentelemetry/api';
import { createClient } from 'redis';
import { failNextGetItems, fakeDate, publish, textContent } from './fixtures';
import { rolloutMap, writeLabel } from './labels-fixtures';
import {
  labels,
  combineReadHooks, emfReadMetrics, logReads, otelReadAttributes, PromptCacheL2, PromptClient, ReadInfo,
  cacheTier,
} from '../../src/runtime';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
let server: RedisServer;
let redis: ReturnType<typeof createClient>;
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}!'));
  await publish(admin, table, 'greeting', 2, textContent('Hi {{name}}!'));
  // A 50 % rollout of v2 on `canary` (v1): `user-0` falls in arm A, `user-4` in arm B (provenance.json says why).
  await writeLabel(admin, table, 'greeting', 'canary', 1, textContent('Hello {{name}}!'), {
    rollout: rolloutMap('r-1', 2, textContent('Hi {{name}}!'), 5000),
  });
  server = await startRedisServer();
  redis = createClient({ url: server.url, socket: { reconnectStrategy: false } });
  await redis.connect();
});

afterEach(() => {
  jest.useRealTimers();
  for (const c of opened.splice(0)) c.destroy();
});

afterAll(async () => {
  await redis?.close();
  await server?.stop();
  await deleteTable(admin, table);
  admin.destroy();
});

function l2(): PromptCacheL2 {
  return {
    get: (key) => redis.get(key),
    set: (key, value, ttlSeconds) => redis.set(key, value, { EX: ttlSeconds }),
    delete: (key) => redis.del(key),
  };
}

function client(options: ConstructorParameters<typeof PromptClient>[0] = {}): { prompts: PromptClient; ddb: DynamoDBClient; reads: ReadInfo[] } {
  const ddb = localDynamoDBClient({ maxAttempts: 1 });
  opened.push(ddb);
  const reads: ReadInfo[] = [];
  const prompts = new PromptClient({ tableName: table, dynamoDBClient: ddb, onRead: (info) => reads.push(info), features: [labels], ...options });
  return { prompts, ddb, reads };
}

test('table, then l1; age counts from the table read; an exact version says which was asked for', async () => {
  // GIVEN
  const clock = fakeDate();
  const { prompts, reads } = client();
  // WHEN
  const first = await prompts.getPrompt('greeting');
  clock.advanceSeconds(5);
  const second = await prompts.getPrompt('greeting');
  const pinned = await prompts.getPrompt('greeting', { version: 1 });
  // THEN
  expect(first.provenance).toMatchObject({ source: 'table', stale: false });
  expect(second.provenance).toMatchObject({ source: 'l1', stale: false, readAt: first.provenance.readAt });
  expect(second.provenance.ageSeconds).toBeGreaterThanOrEqual(5);
  expect(second.provenance.ageSeconds).toBeLessThan(6);
  expect(pinned.provenance.source).toBe('table');
  expect(reads.map((r) => [r.source, r.version, r.requestedVersion, r.stale])).toEqual([
    ['table', 2, undefined, false], ['l1', 2, undefined, false], ['table', 1, 1, false],
  ]);
  expect(reads[1]).toMatchObject({ tableName: table, promptId: 'greeting', checksum: first.checksum });
  expect(reads[1].ageSeconds).toBeGreaterThanOrEqual(5);
});

test('a hit returns the same frozen object every time: per-read provenance costs no allocation', async () => {
  // GIVEN
  const { prompts } = client({ onRead: undefined });
  await prompts.getPrompt('greeting');
  // WHEN
  const a = await prompts.getPrompt('greeting');
  const b = await prompts.getPrompt('greeting');
  // THEN
  expect(a).toBe(b);
  expect(Object.isFrozen(a.provenance)).toBe(true);
  expect(JSON.parse(JSON.stringify(a.provenance))).toMatchObject({ source: 'l1', stale: false, readAt: expect.any(Number) });
});

test('labeled hits return one frozen object per arm (l1), built once; the first read of each is its load', async () => {
  // GIVEN
  const { prompts, reads } = client();
  // WHEN
  const firstB = await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-4' });
  const hitsB = [await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-4' }), await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-4' })];
  const hitsA = [await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-0' }), await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-0' })];
  // THEN
  expect(firstB.provenance.source).toBe('table');
  expect(hitsB[0]).toBe(hitsB[1]);
  expect(hitsA[0]).toBe(hitsA[1]);
  expect(hitsB[0]).not.toBe(firstB);
  expect([hitsA[0], hitsB[0]].map((p) => [p.provenance.source, p.version, p.rollout?.arm])).toEqual([['l1', 1, 'A'], ['l1', 2, 'B']]);
  expect(hitsB[0].content).toBe(firstB.content); // the copies share the frozen content
  expect(reads.map((r) => [r.source, r.version, r.label, r.rolloutId, r.arm])).toEqual([
    ['table', 2, 'canary', 'r-1', 'B'], ['l1', 2, 'canary', 'r-1', 'B'], ['l1', 2, 'canary', 'r-1', 'B'],
    ['l1', 1, 'canary', 'r-1', 'A'], ['l1', 1, 'canary', 'r-1', 'A'],
  ]);
});

test('stale-while-revalidate: l1 and stale; stale-if-error: l1 and stale; nothing readable: fallback', async () => {
  // GIVEN a copy past maxAgeSeconds
  const clock = fakeDate();
  const { prompts, ddb, reads } = client({ maxAgeSeconds: 1, staleWhileRevalidateSeconds: 10, staleIfErrorSeconds: 100 });
  await prompts.getPrompt('greeting');
  clock.advanceSeconds(3);
  // WHEN read within the SWR window
  const swr = await prompts.getPrompt('greeting');
  // THEN
  expect(swr.provenance).toMatchObject({ source: 'l1', stale: true });
  expect(swr.stale).toBe(true);
  // WHEN the table fails past SWR
  await new Promise((r) => setTimeout(r, 50)); // the background refresh settles
  clock.advanceSeconds(30);
  failNextGetItems(ddb, 100, 'InternalServerError');
  const sie = await prompts.getPrompt('greeting');
  // THEN
  expect(sie.provenance).toMatchObject({ source: 'l1', stale: true });
  // WHEN a prompt never read cannot be read at all
  const fb = await prompts.getPrompt('never-read', { fallback: { text: 'fallback {{name}}' } });
  // THEN
  expect(fb.provenance).toMatchObject({ source: 'fallback', stale: true });
  expect(fb.version).toBe(0);
  expect(reads.map((r) => r.source)).toEqual(['table', 'l1', 'l1', 'fallback']);
});

test('a copy served from the L2 says l2, and its age is that of the table read behind it', async () => {
  // GIVEN one instance filled the L2
  await redis.flushAll();
  const first = client({ l2: cacheTier(l2()) });
  await first.prompts.getPrompt('greeting');
  const deadline = Date.now() + 2000;
  while ((await redis.keys('*')).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 20));
  // WHEN another instance reads it
  const second = client({ l2: cacheTier(l2()) });
  const shared = await second.prompts.getPrompt('greeting');
  // THEN
  expect(shared.provenance.source).toBe('l2');
  expect(shared.provenance.ageSeconds).toBeGreaterThan(0.01);
  expect(second.reads.map((r) => r.source)).toEqual(['l2']);
});

test('a labeled read served from the L2 says l2, for each arm (the label item and the candidate both from the L2)', async () => {
  // GIVEN one instance filled the L2 with the label item and the candidate
  await redis.flushAll();
  const first = client({ l2: cacheTier(l2()) });
  await first.prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-0' });
  const deadline = Date.now() + 2000;
  while ((await redis.keys('*')).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 20));
  // WHEN other instances read arm B, and arm A, first
  const second = client({ l2: cacheTier(l2()) });
  const b = await second.prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-4' });
  const third = client({ l2: cacheTier(l2()) });
  const a = await third.prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-0' });
  // THEN
  expect([b.provenance.source, b.version, b.rollout?.arm]).toEqual(['l2', 2, 'B']);
  expect([a.provenance.source, a.version, a.rollout?.arm]).toEqual(['l2', 1, 'A']);
  expect(second.reads.map((r) => [r.source, r.arm])).toEqual([['l2', 'B']]);
  expect(third.reads.map((r) => [r.source, r.arm])).toEqual([['l2', 'A']]);
  expect(second.prompts.stats().storeReads + third.prompts.stats().storeReads).toBe(0);
});

test('a hook that throws never fails the read, and is reported once', async () => {
  // GIVEN
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  const { prompts } = client({ onRead: () => { throw new Error('hook bug'); } });
  // WHEN
  const a = await prompts.getPrompt('greeting');
  const b = await prompts.getPrompt('greeting');
  // THEN
  expect([a.version, b.version]).toEqual([2, 2]);
  const lines = stderr.mock.calls.map((c) => String(c[0])).filter((l) => l.includes('onRead'));
  stderr.mockRestore();
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0])).toMatchObject({ level: 'WARN' });
});

test('an onRead that is not a function fails the client\'s creation, naming the option', () => {
  expect(() => new PromptClient({ tableName: table, onRead: 'log' as unknown as never })).toThrow('onRead must be a function (info, client) => void, got string');
});

test('logReads writes one JSON line per read', async () => {
  // GIVEN
  const lines: string[] = [];
  const { prompts } = client({ onRead: logReads({ write: (l) => lines.push(l) }) });
  // WHEN
  await prompts.getPrompt('greeting');
  await prompts.getPrompt('greeting');
  // THEN
  expect(lines.map((l) => JSON.parse(l))).toEqual([
    expect.objectContaining({ level: 'INFO', message: 'prompt read', promptId: 'greeting', version: 2, source: 'table', stale: false }),
    expect.objectContaining({ source: 'l1' }),
  ]);
});

test('emfReadMetrics: one EMF line per interval with reads by tier, stale, fallbacks, table reads and L2 errors', async () => {
  // GIVEN
  const clock = fakeDate();
  const lines: string[] = [];
  const metrics = emfReadMetrics({ write: (l) => lines.push(l), flushIntervalSeconds: 60 });
  const brokenL2: PromptCacheL2 = { get: () => Promise.reject(new Error('down')), set: () => Promise.reject(new Error('down')), delete: async () => 0 };
  const { prompts, ddb } = client({
    onRead: metrics.onRead, l2: cacheTier(brokenL2), maxAgeSeconds: 1, staleWhileRevalidateSeconds: 0, staleIfErrorSeconds: 100,
  });
  // WHEN: a table read, two hits, a stale-if-error serve, a fallback
  await prompts.getPrompt('greeting');
  await prompts.getPrompt('greeting');
  await prompts.getPrompt('greeting');
  expect(lines).toHaveLength(0); // nothing before the interval
  clock.advanceSeconds(2);
  failNextGetItems(ddb, 100, 'InternalServerError');
  await prompts.getPrompt('greeting');
  await prompts.getPrompt('other', { fallback: { text: 'x' } }); // a fallback serve writes the line at once
  expect(lines).toHaveLength(1);
  metrics.flush(); // nothing more
  // THEN
  expect(lines).toHaveLength(1);
  const emf = JSON.parse(lines[0]);
  expect(emf._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: 'CdkPromptServing', Dimensions: [['TableName']] });
  expect(emf._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name)).toEqual([
    'ReaderServedL1', 'ReaderServedL2', 'ReaderServedTable', 'ReaderServedFallback', 'ReaderServedStale', 'ReaderTableReads', 'ReaderL2Errors',
  ]);
  expect(emf).toMatchObject({
    TableName: table, ReaderServedL1: 3, ReaderServedL2: 0, ReaderServedTable: 1, ReaderServedFallback: 1, ReaderServedStale: 1,
  });
  expect(emf.ReaderL2Errors).toBeGreaterThan(0);
  expect(emf.ReaderTableReads).toBe(prompts.stats().storeReads); // from the client's creation: the first GetItem too
  // AND the interval flushes by itself at the next read
  clock.advanceSeconds(61);
  ddb.middlewareStack.remove('injectGetItemFaults'); // the table heals
  await prompts.getPrompt('greeting');
  expect(lines).toHaveLength(2);
  // (the copy is still within staleIfErrorSeconds of a failing key: served at once from memory while the table is read again)
  expect(JSON.parse(lines[1])).toMatchObject({ ReaderServedL1: 1, ReaderServedStale: 1, ReaderServedFallback: 0 });
  // AND an empty interval writes nothing
  metrics.flush();
  expect(lines).toHaveLength(2);
});

test('emfReadMetrics: table reads count from the client\'s creation, one line per table, a fallback serve is written at once', async () => {
  // GIVEN one helper shared by the clients of two tables
  const other = await createServingTable(admin);
  try {
    await publish(admin, other, 'greeting', 1, textContent('Hey {{name}}!'));
    const lines: string[] = [];
    const metrics = emfReadMetrics({ write: (l) => lines.push(l), flushIntervalSeconds: 3600 });
    const a = client({ onRead: metrics.onRead });
    const b = client({ onRead: metrics.onRead, tableName: other });
    // WHEN each reads once from its table (the first reported read: its GetItem happened before the hook ran)
    await a.prompts.getPrompt('greeting');
    await a.prompts.getPrompt('greeting');
    await b.prompts.getPrompt('greeting');
    metrics.flush();
    // THEN one line per table, each with its own reads and its own table reads
    const byTable = Object.fromEntries(lines.map((l) => JSON.parse(l)).map((e) => [e.TableName, e]));
    expect(Object.keys(byTable).sort()).toEqual([table, other].sort());
    expect(byTable[table]).toMatchObject({ ReaderServedTable: 1, ReaderServedL1: 1, ReaderTableReads: 1, ReaderServedFallback: 0 });
    expect(byTable[other]).toMatchObject({ ReaderServedTable: 1, ReaderServedL1: 0, ReaderTableReads: 1 });
    // AND a fallback serve is written at once, without flush() and within the interval
    lines.length = 0;
    failNextGetItems(b.ddb, 10, 'InternalServerError');
    await b.prompts.getPrompt('missing', { fallback: { text: 'x' } });
    expect(lines.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ TableName: other, ReaderServedFallback: 1 })]);
  } finally {
    await deleteTable(admin, other);
  }
});

test('otelReadAttributes sets the gen_ai and prompt attributes on the active span', async () => {
  // GIVEN the real @opentelemetry/api with a synchronous context manager and a recording span of our own as the active one
  const attributes: Record<string, unknown> = {};
  const span = {
    setAttributes: (a: Record<string, unknown>) => { Object.assign(attributes, a); return span; },
    spanContext: (): SpanContext => ({ traceId: '0'.repeat(31) + '1', spanId: '0'.repeat(15) + '1', traceFlags: 1 }),
    isRecording: () => true,
  } as unknown as Span;
  let current: Context = ROOT_CONTEXT;
  const manager: ContextManager = {
    active: () => current,
    with: (ctx, fn, thisArg, ...args) => {
      const saved = current;
      current = ctx;
      try {
        return fn.call(thisArg, ...args);
      } finally {
        current = saved;
      }
    },
    bind: (_ctx, target) => target,
    enable() { return this; },
    disable() { return this; },
  };
  context.setGlobalContextManager(manager);
  try {
    const hook = otelReadAttributes();
    expect(hook).toBeDefined();
    const { prompts } = client({ onRead: combineReadHooks(hook, undefined) });
    await prompts.getPrompt('greeting'); // outside any span: nothing to set, nothing fails
    // WHEN a hit runs inside the span's context (the hook runs synchronously within getPrompt for a hit)
    const read = context.with(trace.setSpan(context.active(), span), () => prompts.getPrompt('greeting'));
    await read;
    // THEN
    expect(attributes).toEqual({
      'gen_ai.prompt.name': 'greeting',
      'gen_ai.prompt.version': 2,
      'prompt.source': 'l1',
      'prompt.stale': false,
      'prompt.age_seconds': expect.any(Number),
    });
  } finally {
    context.disable();
  }
});

test('otelReadAttributes is undefined when @opentelemetry/api cannot be loaded', () => {
  expect(otelReadAttributes(() => { throw Object.assign(new Error('Cannot find module'), { code: 'MODULE_NOT_FOUND' }); })).toBeUndefined();
  expect(otelReadAttributes(() => ({}))).toBeUndefined();
});
