/**
 * A cluster-mode connection cut off by `connectTimeoutMs` during its slot discovery must leave no connection behind.
 * node-redis 5 goes on discovering after `destroy()` and then opens the nodes' connections, which nobody closes: seen
 * in the governed fleet rollout test (a start storm on a busy machine), one leaked connection per timed-out attempt,
 * kept after `close()`. Real redis-server in cluster mode (one node, every slot), reached through a loopback proxy
 * that holds a new connection's answers (test/runtime/blackhole-proxy.ts); the nodes' connections go to the port
 * CLUSTER SLOTS reports, straight to the server, so the server's CLIENT LIST shows them.
 */
import { createClient } from 'redis';
import { BlackholeProxy, startBlackholeProxy } from './blackhole-proxy';
import { ValkeyL2 } from '../../src/runtime/valkey';
import { ADMIN_AUTH, RedisServer, startRedisServer } from '../support/redis-server';

let server: RedisServer;
let admin: ReturnType<typeof createClient>;
let proxy: BlackholeProxy;

beforeAll(async () => {
  server = await startRedisServer({ cluster: true, users: [{ name: 'reader', password: 'pw', rules: '~* +@all' }] });
  admin = createClient({ url: server.url, ...ADMIN_AUTH, socket: { reconnectStrategy: false } });
  await admin.connect();
  proxy = await startBlackholeProxy(server.port);
}, 30_000);

afterAll(async () => {
  await proxy?.close();
  await admin?.close();
  await server?.stop();
});

/** Connections the server holds for the user `reader`. */
async function readerConnections(): Promise<number> {
  const list = String(await admin.sendCommand(['CLIENT', 'LIST']));
  return list.split('\n').filter((line) => / user=reader /.test(line)).length;
}

test('a cluster connection that times out during discovery is closed once its discovery ends: no connection leaks', async () => {
  // GIVEN new connections through the proxy are answered only after 800 ms (a loaded cache or a loaded reader)
  proxy.slowStart(800);
  const errors: string[] = [];
  const l2 = new ValkeyL2({
    host: '127.0.0.1',
    port: proxy.port,
    tls: false,
    cluster: true,
    username: 'reader',
    password: 'pw',
    connectTimeoutMs: 300,
    onError: (err) => errors.push(String((err as Error)?.message ?? err)),
  });
  try {
    // WHEN the first read waits for the first connection, which is cut off at 300 ms
    await expect(l2.get('k')).rejects.toThrow(/did not connect within 300 ms/);
    // THEN once the held discovery has run its course (800 ms + margin), the server holds no connection of the reader
    // (before the fix: 1, the node connection discovery opened after destroy(), still there after close())
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await readerConnections()).toBe(0);
    expect(errors).toEqual(['L2 did not connect within 300 ms']);
  } finally {
    await l2.close();
  }
  expect(await readerConnections()).toBe(0);
});
