/**
 * The reader layer's node-redis (`assets/layer/nodejs/nodejs/node_modules/redis`, built by scripts/build-layer.ts from
 * `@redis/client` with its command table cut to what the cache adapter and node-redis's own connection send) carries
 * everything the adapter uses: the adapter runs on it against real redis-server, standalone and as a serverless cache
 * stands in (cluster mode, TLS, IAM auth under the library's access rules), its scripts included. `npx projen bundle`
 * builds the layer (the test task does it first).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as Redis from 'redis';
import { ADAPTER_REDIS_COMMANDS, checkCommandsCalled } from '../../scripts/build-layer';
import { ValkeyWriter } from '../../src/invalidation/valkey-writer';
import { createValkeyL2, redisLoadError, useRedisModule, ValkeyConfig } from '../../src/runtime/valkey';
import { l2EpochKey, l2ItemKey, l2ReaderAccessRules, l2WriterAccessRules } from '../../src/schema';
import { ADMIN_AUTH, RedisServer, startRedisServer } from '../support/redis-server';

const LAYER_REDIS = path.resolve(__dirname, '../../assets/layer/nodejs/nodejs/node_modules/redis');
const TABLE = 'prompts-layer';
/** Every method the adapter calls on a connection (src/runtime/valkey-redis.ts, `Conn`). */
const CONN_METHODS = ['get', 'set', 'del', 'incr', 'ping', 'evalSha', 'eval', 'connect', 'destroy', 'on', 'sendCommand'];

let layer: typeof Redis;
const servers: RedisServer[] = [];
const closers: (() => Promise<unknown> | unknown)[] = [];

beforeAll(() => {
  if (!fs.existsSync(path.join(LAYER_REDIS, 'index.js'))) throw new Error(`${LAYER_REDIS} is missing: run npx projen bundle first`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  layer = require(LAYER_REDIS) as typeof Redis;
  useRedisModule(layer);
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  for (const s of servers) await s.stop();
});

async function server(options: Parameters<typeof startRedisServer>[0]): Promise<RedisServer> {
  const s = await startRedisServer(options);
  servers.push(s);
  return s;
}

/** `INFO commandstats` of `s` as { command: calls } (asked as the admin user, which the counts then include). */
function commandCalls(s: RedisServer): Record<string, number> {
  const out = execFileSync('redis-cli', [
    '-h', '127.0.0.1', '-p', String(s.port), '--user', ADMIN_AUTH.username, '--pass', ADMIN_AUTH.password, '--no-auth-warning',
    ...(s.ca ? ['--tls', '--cacert', path.join(s.certDir!, 'ca.crt')] : []), 'info', 'commandstats',
  ], { encoding: 'utf8' });
  return Object.fromEntries([...out.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1], Number(m[2])]));
}

test('the layer\'s clients, standalone and cluster, have every method the adapter calls, and no command it does not send', () => {
  // GIVEN clients made from the layer's file (neither connects)
  const client = layer.createClient({ socket: { host: '127.0.0.1', port: 1 } }) as unknown as Record<string, unknown>;
  const cluster = layer.createCluster({ rootNodes: [{ socket: { host: '127.0.0.1', port: 1 } }] }) as unknown as Record<string, unknown>;
  // THEN
  for (const conn of [client, cluster]) {
    for (const method of CONN_METHODS) expect([method, typeof conn[method]]).toEqual([method, 'function']);
    expect(conn.hSet).toBeUndefined(); // the command table is the adapter's, not node-redis's ~500 commands
  }
  expect(new Set(ADAPTER_REDIS_COMMANDS.map((c) => c.toLowerCase()))).toEqual(new Set(['get', 'set', 'del', 'incr', 'ping', 'eval', 'evalsha']));
  expect(typeof layer.ErrorReply).toBe('function');
  expect(redisLoadError()).toBeUndefined();
});

test('the layer build fails when node-redis\'s own code calls a command the cut drops, naming the file and the command', () => {
  // GIVEN node-redis's real command table, and a node-redis file that calls one command the layer keeps and one it drops
  const table = require.resolve('@redis/client/dist/lib/commands/index.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layer-redis-'));
  try {
    const kept = path.join(dir, 'kept.js');
    const dropped = path.join(dir, 'dropped.js');
    fs.writeFileSync(kept, 'async function discover(client) { return client.clusterSlots(); }\n');
    fs.writeFileSync(dropped, 'async function refresh(client) { await client.clusterSlots(); return client.clusterNodes(); }\n');
    // THEN
    expect(() => checkCommandsCalled([kept], table)).not.toThrow();
    expect(() => checkCommandsCalled([kept, dropped], table)).toThrow(`${dropped} calls .clusterNodes()`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('standalone, plain TCP, a static ACL user: reads, writes and keep-alive PINGs; the connection sends nothing but AUTH before them', async () => {
  // GIVEN redis-server with a user limited to the commands the adapter sends
  const s = await server({ users: [{ name: 'app', password: 'secret', rules: '~* -@all +get +set +del +incr +ping +auth' }] });
  const l2 = createValkeyL2({
    host: '127.0.0.1', port: s.port, tls: false, cluster: false, username: 'app', password: 'secret', pingIntervalMs: 100, connectTimeoutMs: 2000,
  });
  closers.push(() => l2.close());
  // WHEN
  await l2.ready();
  expect(l2.isConnected).toBe(true);
  await l2.set('k', 'v', 60);
  const got = await l2.get('k');
  const counter = await l2.incr('n');
  const deleted = await l2.delete('k');
  await new Promise((resolve) => setTimeout(resolve, 350)); // idle: the adapter PINGs
  // THEN
  expect([got, counter, deleted, await l2.get('k')]).toEqual(['v', 1, 1, null]);
  const calls = commandCalls(s);
  expect(calls.ping).toBeGreaterThanOrEqual(1);
  // One AUTH (the adapter's, no HELLO, no CLIENT SETINFO) besides the admin's own, then the commands themselves
  expect(Object.keys(calls).filter((c) => !['get', 'set', 'incr', 'del', 'ping', 'info'].includes(c))).toEqual(['auth']);
  expect(l2.connections).toBe(1);
});

test('a serverless cache\'s stand-in (cluster mode, TLS, IAM auth under the library\'s access rules): the reader reads, the writer runs its scripts', async () => {
  // GIVEN one redis-server node owning every slot, with the reader's and the writer's ACL users (any password: IAM tokens)
  const s = await server({
    tls: true,
    cluster: true,
    users: [
      { name: 'reader', password: 'unused', rules: `nopass ${l2ReaderAccessRules(TABLE)}` },
      { name: 'writer', password: 'unused', rules: `nopass ${l2WriterAccessRules(TABLE)}` },
    ],
  });
  const config = (userId: string): ValkeyConfig => ({
    host: 'localhost',
    port: s.port,
    tls: true,
    ca: s.ca,
    cluster: true,
    connectTimeoutMs: 3000,
    iam: {
      cacheName: 'prompts-cache',
      userId,
      serverless: true,
      region: async () => 'us-east-1',
      credentials: async () => ({ accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret', sessionToken: 'local-session' }),
    },
  });
  const writer = new ValkeyWriter(config('writer'));
  const reader = createValkeyL2(config('reader'), TABLE);
  closers.push(() => writer.close(), () => reader.close());
  await Promise.all([writer.ready(), reader.ready()]);
  expect([writer.isConnected, reader.isConnected]).toEqual([true, true]);
  // WHEN the writer writes a value through and moves the epoch (EVALSHA: NOSCRIPT the first time, then EVAL), twice
  const key = l2ItemKey(TABLE, 'summarize', 'CURRENT');
  const inc = '2026-12-01T00:00:00.000'; // the stream's incarnation label
  const first = await writer.writeThroughValue(key, inc, '00000000000000000001', 'value-1', 60);
  const epoch1 = await writer.bumpEpoch(l2EpochKey(TABLE), inc, inc);
  const second = await writer.writeThroughValue(key, inc, '00000000000000000002', 'value-2', 60);
  const epoch2 = await writer.bumpEpoch(l2EpochKey(TABLE), inc, inc);
  // THEN the scripts ran, and the reader (read-only on these keys) sees both values (a created epoch starts at a
  // random counter, then moves by one)
  expect([first, second, epoch2]).toEqual([1, 1, epoch1 + 1]);
  expect(epoch1).toBeGreaterThan(0);
  expect(await reader.get(key)).toContain('value-2');
  expect(await reader.get(l2EpochKey(TABLE))).toBe(`${epoch2} ${inc}`);
  const calls = commandCalls(s);
  expect(calls.evalsha).toBeGreaterThanOrEqual(2);
  expect(calls.eval).toBe(2); // one per script, the first time only
  expect(calls['cluster|slots']).toBeGreaterThanOrEqual(2); // each client discovered the slots
  expect(calls['client|setinfo']).toBeUndefined();
  expect(writer.timeouts + reader.timeouts).toBe(0);
});
