/**
 * Connections that cannot hang. Real redis-server, a loopback TCP proxy that black-holes its
 * connections, ACL users deleted under a live connection; the built-in adapter (readers and the invalidation
 * function alike) and the write-through engine.
 */
import { createClient } from 'redis';
import { BlackholeProxy, startBlackholeProxy } from './blackhole-proxy';
import { ValkeyWriter } from '../../src/invalidation/valkey-writer';
import { writeThrough } from '../../src/invalidation/write-through';
import { l2ItemKey } from '../../src/schema';
import { ADMIN_AUTH, RedisServer, startRedisServer } from '../support/redis-server';

let server: RedisServer;
const closers: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  server = await startRedisServer({ users: [{ name: 'app', password: 'secret', rules: '~* -@all +get +set +del +eval +evalsha +ping +hello +auth' }] });
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await server.stop();
});

async function proxy(): Promise<BlackholeProxy> {
  const p = await startBlackholeProxy(server.port);
  closers.push(() => p.close());
  return p;
}

function adapter(port: number, extra: Record<string, unknown> = {}): ValkeyWriter {
  const l2 = new ValkeyWriter({
    host: '127.0.0.1', port, tls: false, cluster: false, username: 'app', password: 'secret', connectTimeoutMs: 500, commandTimeoutMs: 300, ...extra,
  });
  closers.push(() => l2.close());
  return l2;
}

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return Date.now() - started;
}

test('a black-holed connection fails its call within commandTimeoutMs and is replaced within seconds', async () => {
  // GIVEN an adapter connected through the proxy
  const p = await proxy();
  const l2 = adapter(p.port);
  await l2.ready();
  await expect(l2.get('k')).resolves.toBeNull();
  // WHEN the connection is black-holed
  p.blackhole();
  const started = Date.now();
  await expect(l2.get('k')).rejects.toThrow(/did not answer within 300 ms/);
  // THEN the call failed in time, the connection was dropped, and a new one serves calls within a few seconds
  expect(Date.now() - started).toBeLessThan(1000);
  expect(l2.timeouts).toBe(1);
  const recovered = await until(() => l2.get('k').then(() => true, () => false), 5000);
  expect(recovered).toBeLessThan(4000);
  expect(p.accepted).toBe(2);
});

test('a reconnection slower than connectTimeoutMs is let finish (reconnectTimeoutMs), so the cache comes back under load', async () => {
  // GIVEN an adapter connected through the proxy (first connection bounded at 500 ms)
  const p = await proxy();
  const l2 = adapter(p.port, { reconnectTimeoutMs: 3000 });
  await l2.ready();
  await expect(l2.get('k')).resolves.toBeNull();
  // WHEN new connections take 1 s to be answered (a loaded cache, or a loaded reader: TLS, token, discovery) and the
  // open one dies
  p.slowStart(1000);
  p.blackhole();
  await expect(l2.get('k')).rejects.toThrow(/did not answer/);
  // THEN the reconnection, which no read waits for, may take that second, and calls are served again (cut off at
  // 500 ms, as before, every reconnection failed and only doubled the backoff)
  const recovered = await until(() => l2.get('k').then(() => true, () => false), 8000);
  expect(recovered).toBeLessThan(6000);
  expect(l2.isConnected).toBe(true);
});

test('an idle black-holed connection is found by the keep-alive PING and replaced before the next call', async () => {
  const p = await proxy();
  const l2 = adapter(p.port, { pingIntervalMs: 200 });
  await l2.ready();
  await l2.get('k');
  p.blackhole();
  // no call is made: the keep-alive finds the dead connection by itself
  await until(() => l2.timeouts === 1, 3000);
  await until(() => l2.isConnected && p.accepted === 2, 4000);
  await expect(l2.get('k')).resolves.toBeNull();
});

test('a reader whose ACL user was deleted reconnects at most once a second (backoff with jitter)', async () => {
  // GIVEN a connected adapter
  const admin = createClient({ url: server.url, ...ADMIN_AUTH, socket: { reconnectStrategy: false } });
  await admin.connect();
  closers.push(() => admin.close());
  await admin.sendCommand(['ACL', 'SETUSER', 'doomed', 'on', '>pw', '~*', '+@all']);
  const l2 = adapter(server.port, { username: 'doomed', password: 'pw' });
  await l2.ready();
  expect(l2.isConnected).toBe(true);
  // WHEN the user is deleted (the server closes its connections) and calls go on for 4 s
  await admin.sendCommand(['ACL', 'DELUSER', 'doomed']);
  const before = l2.connections;
  const until4s = Date.now() + 4000;
  let failures = 0;
  while (Date.now() < until4s) {
    await l2.get('k').catch(() => { failures++; });
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // THEN every call failed fast, and at most one connection attempt was made per second (1 s, 2 s, … apart)
  expect(failures).toBeGreaterThan(100);
  const attempts = l2.connections - before;
  expect(attempts).toBeGreaterThanOrEqual(1);
  expect(attempts).toBeLessThanOrEqual(3);
});

test('the write-through has a deadline per call and stops before the function\'s timeout', async () => {
  const p = await proxy();
  const writer = adapter(p.port);
  await writer.ready();
  p.blackhole();
  const records = [1, 2, 3].map((i) => ({
    eventID: String(i),
    eventName: 'MODIFY',
    eventSourceARN: 'arn:aws:dynamodb:us-east-1:1:table/t/stream/2026-01-02T03:04:05.678',
    dynamodb: {
      Keys: { prompt_id: { S: `p${i}` }, version: { S: 'CURRENT' } },
      NewImage: { prompt_id: { S: `p${i}` }, version: { S: 'CURRENT' } },
      SequenceNumber: String(100 + i),
    },
  }));
  // WHEN a batch meets a black-holed cache
  let started = Date.now();
  const result = await writeThrough(records, 't', writer, () => undefined);
  // THEN it answers within a few call deadlines (not the Lambda timeout), reporting every record for a retry
  expect(Date.now() - started).toBeLessThan(2000);
  expect(result.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['101', '102', '103']);
  // AND with too little time left, a batch is not started at all
  started = Date.now();
  const late = await writeThrough(records, 't', adapter(server.port), () => undefined, { remainingMs: () => 2000, reserveMs: 3000 });
  expect(late.batchItemFailures).toHaveLength(3);
  expect(Date.now() - started).toBeLessThan(500);
  void l2ItemKey;
});
