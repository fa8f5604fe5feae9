/**
 * The reader's cache adapter when the cache goes away, and when it comes back: a breaker (calls fail at once after a
 * failure, one background probe per process finds the cache again) and connections the network black-holes replaced
 * by that probe. Real redis-server behind a loopback proxy; every call made as the client makes it (`withTimeout`
 * with the client's L2 timeout).
 */
import { createClient } from 'redis';
import { BlackholeProxy, startBlackholeProxy } from './blackhole-proxy';
import { withTimeout } from '../../src/runtime/l2';
import { createValkeyL2, PROBE_INTERVAL_MS, ValkeyL2 } from '../../src/runtime/valkey';
import { RedisServer, startRedisServer } from '../support/redis-server';

const L2_TIMEOUT_MS = 100;
let server: RedisServer;
const closers: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  server = await startRedisServer();
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

/** A reader's adapter, as `new PromptClient()` builds it from the environment (connect timeout 1 s). */
function reader(port: number): ValkeyL2 {
  const l2 = createValkeyL2({ host: '127.0.0.1', port, tls: false, cluster: false, connectTimeoutMs: 1000 }, 't');
  closers.push(() => l2.close());
  return l2;
}

interface Call {
  /** When it started (ms after `start`). */
  readonly at: number;
  readonly ok: boolean;
  /** It waited for the client's L2 timeout (rather than failing at once). */
  readonly waited: boolean;
}

/** Calls `get` as the client does, every 20 ms for `ms`; what each call cost and whether it was answered. */
async function readFor(l2: ValkeyL2, ms: number, start = Date.now()): Promise<Call[]> {
  const calls: Call[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const at = Date.now();
    const error = await withTimeout(() => l2.get('k'), L2_TIMEOUT_MS).then(() => undefined, (err: Error) => err);
    calls.push({ at: at - start, ok: error === undefined, waited: /did not answer within/.test(String(error?.message)) });
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return calls;
}

test('the cache gone (its host silent): one call waits for the L2 timeout, every later one fails at once; back within ~1 s of the cache', async () => {
  // GIVEN a reader connected to the cache
  const p = await proxy();
  const l2 = reader(p.port);
  await l2.ready();
  await expect(l2.get('k')).resolves.toBeNull();
  // WHEN the cache's host goes silent (the open connection and any new one get no answer) for 2 s
  p.slowStart(60_000);
  p.blackhole();
  const outage = await readFor(l2, 2000);
  // THEN no call was answered, one waited for the L2 timeout, and every other failed at once (no table read waits)
  expect(outage.filter((c) => c.ok)).toEqual([]);
  expect(outage.filter((c) => c.waited).length).toBe(1);
  expect(outage.length).toBeGreaterThan(40);
  // WHEN the cache answers again
  p.slowStart(0);
  const back = Date.now();
  const after = await readFor(l2, 2500, back);
  // THEN calls are answered again within the probe's bound, and none waited meanwhile. The bound: the next probe comes
  // at most 1.5 probe intervals after the return; it pings the connection opened during the outage (whose answers
  // this host still holds: 250 ms), drops it, opens another and pings that. The rest is slack for a loaded machine.
  const first = after.find((c) => c.ok);
  expect(first).toBeDefined();
  expect(first!.at).toBeLessThan(1000 + 1.5 * PROBE_INTERVAL_MS + 200);
  expect(after.filter((c) => c.waited)).toEqual([]);
  expect(after.slice(-10).every((c) => c.ok)).toBe(true);
});

/**
 * A reader that logs in (as every ElastiCache reader does, with its IAM token), connected through a proxy and served:
 * its connections are made when the cache answers.
 */
async function loggedInReader(): Promise<{ p: BlackholeProxy; l2: ValkeyL2 }> {
  const admin = createClient({ url: server.url, socket: { reconnectStrategy: false } });
  await admin.connect();
  await admin.sendCommand(['ACL', 'SETUSER', 'reader', 'on', '>pw', '~*', '+@all']);
  await admin.close();
  const p = await proxy();
  const l2 = createValkeyL2({ host: '127.0.0.1', port: p.port, tls: false, cluster: false, connectTimeoutMs: 1000, username: 'reader', password: 'pw' }, 't');
  closers.push(() => l2.close());
  await l2.ready();
  await expect(l2.get('k')).resolves.toBeNull();
  return { p, l2 };
}

test('a reader that logs in, whose path to the cache goes silent and heals, is back once the connection attempt stuck on that path reaches its deadline', async () => {
  // GIVEN a reader that logs in, connected through the proxy
  const { p, l2 } = await loggedInReader();
  // WHEN the path goes silent for 3 s (the open connection and every new one: a failover's old address, a route
  // dropping packets), then new connections are answered again while those made meanwhile stay silent
  p.slowStart(60_000);
  p.blackhole();
  const outage = await readFor(l2, 3000);
  expect(outage.filter((c) => c.ok)).toEqual([]);
  p.slowStart(0);
  const back = Date.now();
  const after = await readFor(l2, 6000, back);
  // THEN no call waited meanwhile, and the reader is back once its probe's connection attempt, begun within about
  // 1 s of the outage's start, reached its deadline (reconnectTimeoutMs, 5 s) and the next probe (0.2–0.6 s later)
  // connected: within 3.6 s of the path healing, plus slack for a loaded machine. The probe waits on that one
  // attempt: a cache that wakes answers the attempts queued at it first, and more of them made its wake slower
  // (docs/RELIABILITY.md).
  const first = after.find((c) => c.ok);
  expect(first).toBeDefined();
  expect(first!.at).toBeLessThan(5000);
  expect(after.filter((c) => c.waited)).toEqual([]);
  expect(after.slice(-10).every((c) => c.ok)).toBe(true);
});

test('a reader whose new connections take longer than connectTimeoutMs to be answered (a loaded cache or reader) is let finish one, and is back', async () => {
  // GIVEN a reader that logs in, connected through the proxy
  const { p, l2 } = await loggedInReader();
  // WHEN its connection is black-holed and every new connection is answered only after 2 s (its login included)
  p.slowStart(2000);
  p.blackhole();
  const calls = await readFor(l2, 5500);
  // THEN the probe's attempt is let run past connectTimeoutMs (up to reconnectTimeoutMs) and the reader is back on
  // the cache: the attempt begins by 0.9 s and is answered 2 s later. (Cut at connectTimeoutMs and begun again, no
  // attempt would ever be answered.)
  const back = calls.find((c) => c.ok && c.at > 0);
  expect(back).toBeDefined();
  expect(back!.at).toBeLessThan(4500);
  expect(calls.slice(-10).every((c) => c.ok)).toBe(true);
});

test('four readers whose connections the network black-holes are all back on the cache within the keep-alive bound', async () => {
  // GIVEN four readers connected through the proxy and reading
  const p = await proxy();
  const readers = [0, 1, 2, 3].map(() => reader(p.port));
  await Promise.all(readers.map((l2) => l2.ready()));
  await Promise.all(readers.map((l2) => l2.get('k')));
  expect(p.accepted).toBe(4);
  // WHEN their open connections are black-holed (new connections are forwarded)
  p.blackhole();
  const start = Date.now();
  const calls = await Promise.all(readers.map((l2) => readFor(l2, 3000, start)));
  // THEN each reader waited for the L2 timeout once, replaced its connection and is served by the cache again within
  // 1.9 s (the probe: 0.2–0.6 s, then a PING of 250 ms; before the breaker, a black-holed connection cost every
  // call the L2 timeout until the adapter's own 1 s command deadline, then a reconnection backoff of 1 s or more)
  for (const c of calls) {
    const failures = c.filter((x) => !x.ok);
    expect(failures.length).toBeGreaterThan(0);
    const back = c.find((x) => x.ok && x.at > failures[0].at);
    expect(back).toBeDefined();
    expect(back!.at).toBeLessThan(1900);
    expect(c.filter((x) => x.waited).length).toBe(1);
    expect(c.slice(-10).every((x) => x.ok)).toBe(true);
  }
  expect(p.accepted).toBe(8);
});

test.each([
  ['a reader', false],
  // node-redis's cluster client reports its root node's refusal as "All the root nodes are unavailable".
  ['a cluster-mode reader', true],
])('%s whose ACL user was deleted is probed on the reconnection backoff: at most one connection attempt a second', async (_, cluster) => {
  // GIVEN a reader connected as a user of its own
  const node = cluster ? await startRedisServer({ cluster: true }) : server;
  if (cluster) closers.push(() => node.stop());
  const admin = createClient({ url: node.url, socket: { reconnectStrategy: false } });
  await admin.connect();
  closers.push(() => admin.close());
  await admin.sendCommand(['ACL', 'SETUSER', 'doomed', 'on', '>pw', '~*', '+@all']);
  const l2 = createValkeyL2({
    host: '127.0.0.1', port: node.port, tls: false, cluster, connectTimeoutMs: 1000, username: 'doomed', password: 'pw',
  }, 't');
  closers.push(() => l2.close());
  await l2.ready();
  await expect(l2.get('k')).resolves.toBeNull();
  // WHEN the user is deleted (the server closes its connections) and reads go on for 4 s
  await admin.sendCommand(['ACL', 'DELUSER', 'doomed']);
  const before = l2.connections;
  const calls = await readFor(l2, 4000);
  // THEN every read failed at once, and the probe opened at most one connection a second (1 s, 2 s, … apart)
  expect(calls.filter((c) => c.ok)).toEqual([]);
  expect(calls.filter((c) => c.waited)).toEqual([]);
  expect(l2.connections - before).toBeGreaterThanOrEqual(1);
  expect(l2.connections - before).toBeLessThanOrEqual(4);
});

test('a cache slow to answer a new connection at first (as one just woken is) is probed again on that connection, not after the reconnection backoff', async () => {
  // GIVEN a reader connected to the cache
  const p = await proxy();
  const l2 = reader(p.port);
  await l2.ready();
  await expect(l2.get('k')).resolves.toBeNull();
  // WHEN its connection is black-holed, and every new connection's first answer comes 400 ms late (past the probe's
  // 250 ms PING deadline), then promptly
  p.slowStart(400);
  p.blackhole();
  const calls = await readFor(l2, 3500);
  // THEN the probe's new connection, whose first PING missed its deadline, is pinged again at the next probe (0.2–0.6 s
  // later) and answers: the reader is back on the cache within two probes. (A slow first PING is not a refused login:
  // taken for one, the connection was dropped and the next probe waited the reconnection backoff, 1–1.25 s, only to
  // open another connection slow at first, so this reader never came back.)
  const back = calls.find((c) => c.ok && c.at > 0);
  expect(back).toBeDefined();
  expect(back!.at).toBeLessThan(100 + 2 * (1.5 * PROBE_INTERVAL_MS + 250) + 700);
  expect(calls.filter((c) => c.waited).length).toBe(1);
  expect(calls.slice(-10).every((c) => c.ok)).toBe(true);
});

test('a cluster cache whose port refuses connections (a node restarting) is probed every half second, and the reader is back within a second of its return', async () => {
  // GIVEN a cluster-mode reader (an ElastiCache Serverless cache) connected to its node
  const node = await startRedisServer({ cluster: true });
  const l2 = createValkeyL2({ host: '127.0.0.1', port: node.port, tls: false, cluster: true, connectTimeoutMs: 1000 }, 't');
  closers.push(() => l2.close());
  await l2.ready();
  await expect(l2.get('k')).resolves.toBeNull();
  // WHEN the node goes away (its port refuses connections) for 3 s
  await node.stop();
  const probes = l2.probes;
  const outage = await readFor(l2, 3000);
  // THEN every probe's connection attempt was refused at once and the next probe came 0.2–0.6 s later (node-redis
  // reports a cluster whose root node refused as "All the root nodes are unavailable": taken for a refused login,
  // the probes followed the growing reconnection backoff, 1, 2, 4 s)
  expect(outage.filter((c) => c.ok)).toEqual([]);
  expect(l2.probes - probes).toBeGreaterThanOrEqual(4);
  // WHEN the node is back on its port
  const restarted = await startRedisServer({ cluster: true, port: node.port });
  closers.push(() => restarted.stop());
  const back = Date.now();
  const after = await readFor(l2, 2000, back);
  // THEN the reader is served by it again within 1.5 probe intervals, plus slack for a loaded machine
  const first = after.find((c) => c.ok);
  expect(first).toBeDefined();
  expect(first!.at).toBeLessThan(1.5 * PROBE_INTERVAL_MS + 600);
});
