/**
 * A TCP proxy on loopback that can black-hole its connections: `blackhole()` makes every open connection stop
 * forwarding in both directions (the sockets stay open, as behind a dropped route or a dead NAT entry) while new
 * connections are forwarded again. No jest globals.
 */
import * as net from 'node:net';

export interface BlackholeProxy {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  blackhole(): void;
  /** Connections accepted from now on get no answer for their first `ms` (held, then delivered in order): a slow handshake. */
  slowStart(ms: number): void;
  close(): Promise<void>;
}

export async function startBlackholeProxy(targetPort: number): Promise<BlackholeProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; dead: boolean }>();
  let accepted = 0;
  let slowStartMs = 0;
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    const pair = { client, upstream, dead: false };
    pairs.add(pair);
    client.on('data', (d) => { if (!pair.dead) upstream.write(d); });
    const releaseAt = Date.now() + slowStartMs;
    let held = Promise.resolve();
    upstream.on('data', (d) => {
      if (slowStartMs === 0 && Date.now() >= releaseAt) {
        if (!pair.dead) client.write(d);
        return;
      }
      held = held.then(() => new Promise((resolve) => setTimeout(resolve, Math.max(0, releaseAt - Date.now())))).then(() => {
        if (!pair.dead) client.write(d);
      });
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', () => { if (!pair.dead) end(); });
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get accepted() { return accepted; },
    blackhole() {
      for (const pair of pairs) pair.dead = true;
    },
    slowStart(ms: number) {
      slowStartMs = ms;
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
