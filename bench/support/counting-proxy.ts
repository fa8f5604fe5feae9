/**
 * The benches' table stand-in: counting proxies in front of DynamoDB Local, on a worker thread of their own.
 *
 * They count table reads (each `GetItem`, each key of a `BatchGetItem`) per key on their way to DynamoDB Local, and
 * with `memoTable` answer a request they have answered before from memory (one memory for all the proxies).
 *
 * Not on the harness's event loop: a Node server accepts one connection per turn of its loop, and a bench harness's
 * loop (its stream poller, the calls of a fleet of reader processes) turns every 60–150 ms while a fleet runs. Readers
 * opening their first table connection at the same moment (a fleet's cold start, the cache tier's readers when the
 * cache fails) would then wait in line for the stand-in, which DynamoDB's endpoints never make them do.
 */
import { Worker } from 'node:worker_threads';

/** A table read seen by a proxy: when, and which key (`prompt_id/version`). */
export interface ProxyRead {
  readonly at: number;
  readonly key: string;
}

/** What one proxy saw. */
export interface ProxyLog {
  /** Every table read, in order. */
  readonly reads: ProxyRead[];
  /** Each request: [arrival, 1 when answered from memory else 0, ms until answered]. */
  readonly served: [number, number, number][];
  /** Each connection: [accepted at, ms until its first bytes]. */
  readonly accepted: [number, number][];
}

export interface CountingProxies {
  /** One `http://127.0.0.1:port` per proxy, in order. */
  readonly endpoints: string[];
  /** What each proxy saw so far (a copy), in order. */
  collect(): Promise<ProxyLog[]>;
  close(): Promise<void>;
}

export interface CountingProxyOptions {
  /**
   * Answer a `GetItem` or `BatchGetItem` a proxy has answered before from memory: for runs whose prompts do not
   * change, so that what is measured is the readers' own cost, not DynamoDB Local's (one Java process on the same
   * cores as the fleets). Reads are still counted.
   * @default false
   */
  readonly memoTable?: boolean;
}

/** The proxies' code, run on the worker thread. */
const PROXY = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { target, count, memoTable } = workerData;
// This thread only (on Linux a thread has its own nice value), when allowed (root): the stand-in's endpoint answers as
// one on other hosts would, not after its turn among the fleets' processes on the same cores.
try { require('node:os').setPriority(0, -15); } catch {}
const upstream = new URL(target);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const memo = new Map();
const proxies = [];
const keyOf = (k) => (k && k.prompt_id && k.version ? k.prompt_id.S + '/' + k.version.S : '?');
for (let i = 0; i < count; i++) {
  const proxy = { reads: [], served: [], accepted: [] };
  proxy.server = http.createServer((req, res) => {
    const arrived = Date.now();
    let hit = 0;
    res.on('finish', () => proxy.served.push([arrived, hit, Date.now() - arrived]));
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const op = String(req.headers['x-amz-target'] ?? '').split('.')[1];
      if (op === 'GetItem' || op === 'BatchGetItem') {
        try {
          const input = JSON.parse(body.toString());
          const keys = op === 'GetItem' ? [input.Key] : Object.values(input.RequestItems).flatMap((r) => r.Keys);
          for (const k of keys) proxy.reads.push({ at: Date.now(), key: keyOf(k) });
        } catch {
          proxy.reads.push({ at: Date.now(), key: '?' });
        }
      }
      const memoKey = memoTable && (op === 'GetItem' || op === 'BatchGetItem') ? op + '\\u0000' + body.toString() : undefined;
      const held = memoKey === undefined ? undefined : memo.get(memoKey);
      if (held !== undefined) {
        hit = 1;
        res.writeHead(held.status, held.headers);
        res.end(held.body);
        return;
      }
      const options = { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers, agent };
      const out = http.request(options, (up) => {
        res.writeHead(up.statusCode ?? 500, up.headers);
        if (memoKey === undefined || up.statusCode !== 200) {
          up.pipe(res);
          return;
        }
        const parts = [];
        up.on('data', (d) => parts.push(d));
        up.on('end', () => {
          const answer = Buffer.concat(parts);
          memo.set(memoKey, { status: 200, headers: up.headers, body: answer });
          res.end(answer);
        });
      });
      out.on('error', () => { res.statusCode = 502; res.end(); });
      out.end(body);
    });
  });
  proxy.server.on('connection', (sock) => {
    const at = Date.now();
    sock.once('data', () => proxy.accepted.push([at, Date.now() - at]));
  });
  proxies.push(proxy);
}
Promise.all(proxies.map((p) => new Promise((resolve) => p.server.listen(0, '127.0.0.1', resolve)))).then(() => {
  parentPort.postMessage({ ports: proxies.map((p) => p.server.address().port) });
});
parentPort.on('message', (m) => {
  if (m === 'collect') parentPort.postMessage({ collected: proxies.map(({ reads, served, accepted }) => ({ reads, served, accepted })) });
  if (m === 'close') {
    for (const p of proxies) p.server.closeAllConnections();
    agent.destroy();
    Promise.all(proxies.map((p) => new Promise((resolve) => p.server.close(resolve)))).then(() => process.exit(0));
  }
});
`;

/** `count` counting proxies in front of `target` (DynamoDB Local's endpoint), on one worker thread. */
export async function countingProxies(target: string, count: number, options: CountingProxyOptions = {}): Promise<CountingProxies> {
  const worker = new Worker(PROXY, { eval: true, workerData: { target, count, memoTable: options.memoTable ?? false } });
  const next = <T>(key: string) => new Promise<T>((resolve, reject) => {
    const onMessage = (m: Record<string, T>) => {
      if (!(key in m)) return;
      worker.off('message', onMessage);
      worker.off('error', reject);
      resolve(m[key]);
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
  });
  const ports = await next<number[]>('ports');
  return {
    endpoints: ports.map((port) => `http://127.0.0.1:${port}`),
    collect: () => {
      const collected = next<ProxyLog[]>('collected');
      worker.postMessage('collect');
      return collected;
    },
    close: async () => {
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.postMessage('close');
      await exited;
    },
  };
}
