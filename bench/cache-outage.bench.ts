/**
 * Cache outage across processes, as deployed (the set-up of bench/cache-fleet.bench.ts: readers bundled as
 * `NodejsFunction` does, the node-redis adapter from the reader layer's folder, the invalidation function from its
 * asset fed by DynamoDB Local's stream, a TLS cluster-mode redis-server with the template's ACL users).
 *
 *   npx projen bundle && npx tsx bench/cache-outage.bench.ts [readers=50] [prompts=20] [mode=kill|stop] [outageSeconds=4]
 *
 * Two fleets of `readers` processes read at the same time, each in a loop: every round drops the in-process copy of
 * each prompt (`invalidate(id)`) and reads it again, so every read goes past memory (to the L2, or the table), then
 * pauses 100 ms (`OUTAGE_PAUSE_MS`). One fleet has the cache tier (default settings), the other the L2 off (the
 * Directory stack's reader, the same bundle). Each fleet reads the table through its own counting proxy. After a few
 * seconds the cache is SIGKILLed and restarted `outageSeconds` later (`kill`: an empty cache comes back), or
 * SIGSTOPped and SIGCONTed (`stop`: a silent host, whose connections stay open, comes back with its data).
 *
 * Prints: read latency p50/p99 during the outage for both fleets (the goal: the tiered fleet's p99 ≤ 1.2× the L2-off
 * fleet's, 0 failed), where the slowest 1 % of outage reads spent their time (the read's L2 calls, waits before its
 * table request, the table request, after it: measured in each reader by wrapping the adapter's `get` and the SDK
 * client's `send`), the time from the cache's return until each reader's L2 hits resume (p50/p99 across processes;
 * with `stop`, also from the cache's first answer to a new connection: the harness opens one at the return and
 * PINGs, and a stopped server first works through the connections its kernel queued meanwhile), and the tiered
 * fleet's table reads per second before, during and after the outage, and how long the tiered reads' L2 calls took
 * while the cache was up (the share a hedged table read after 5, 10, 20 or 50 ms would have doubled).
 *
 * Each fleet reads the table through a counting proxy on a thread of its own (bench/support/counting-proxy.ts). Also printed: the
 * breaker's steady state (the outage's reads after each tiered reader's first, the one that meets the dead cache).
 *
 * Tracing: `OUTAGE_TRACE=1` also lists each tiered reader's first outage read and those slower than 300 ms by phase,
 * with the reader's CPU time meanwhile (in the table request apart), its breaker probes, connection attempts, HTTP
 * request steps (new or reused socket, connected, sent, answered) and event-loop stalls (a 10 ms interval more than
 * 60 ms late), and when the proxies accepted connections; `OUTAGE_PROFILE_DIR=dir`
 * has the first two readers of each fleet write a CPU profile of their load into `dir`. `OUTAGE_TABLE=memo` answers
 * repeated table reads from the proxies' memory (see {@link MEMO_TABLE}). `OUTAGE_CACHE_NICE=-15` runs the cache server at
 * that nice value (as root), as the table's stand-in runs: a cache on hosts of its own, not at its turn among the fleets.
 * `OUTAGE_PLAIN_READERS` sets the L2-off fleet's size (default: `readers`). `OUTAGE_SETTLE_S` waits that long
 * between starting the fleets and their reading; the report gives the share of the cores busy over the reading.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { build } from 'esbuild';
import { CURRENT, Env, l2AccessRules, l2KeyPattern, L2_READER_COMMANDS, L2_WRITER_COMMANDS } from '../src/schema';
import { countingProxies } from './support/counting-proxy';
import { buildReadmeApp, prepareReaderApp } from '../test/deployed/readme-app';
import { createStreamTable } from '../test/invalidation/cache-fixture';
import { publish, textContent, writeCatalog } from '../test/runtime/fixtures';
import { DeployedProcess, startFunction, SynthesizedFunction, synthesize } from '../test/support/as-deployed';
import { driveMapping } from '../test/support/as-deployed-stream';
import { installCompiledPackage } from '../test/support/compiled-package';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { RedisServer, startRedisServer } from '../test/support/redis-server';
import { localDynamoDBClient } from '../test/support/table';

const READERS = Number(process.argv[2] ?? 50);
const PROMPTS = Number(process.argv[3] ?? 20);
const MODE = (process.argv[4] ?? 'kill') as 'kill' | 'stop';
const OUTAGE_MS = Number(process.argv[5] ?? 4) * 1000;
const STREAM_POLL_MS = 250;
const BEFORE_MS = 4000;
const AFTER_MS = 6000;
/**
 * `OUTAGE_PAUSE_MS`: each reader's pause between rounds (default 100 ms). A longer pause lets many readers share
 * these 2 cores without the fleets' own CPU becoming the figure (50 + 50 readers at 100 ms load them past 30).
 */
const PAUSE_MS = Number(process.env.OUTAGE_PAUSE_MS ?? 100);
if (!(PAUSE_MS >= 0)) throw new Error(`OUTAGE_PAUSE_MS must be a number of milliseconds (got ${process.env.OUTAGE_PAUSE_MS})`);
/**
 * `OUTAGE_TABLE=memo`: the proxies answer a read either has answered before from memory (the prompts do not change during
 * the run), so the table answers at once and the same for both fleets: what is left is the readers' own cost, not
 * DynamoDB Local's (one Java process on the same cores as both fleets). Reads are still counted.
 */
const MEMO_TABLE = process.env.OUTAGE_TABLE === 'memo';

/** The reader: `new PromptClient()` (defaults). `load` reads every prompt past memory, round after round. */
const READER = `
import { preload, PromptClient } from 'cdk-prompt-serving/runtime';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
// Per-read phases: the read's L2 calls (from its start until the last of them settled), its table request, and the
// rest. Wrapped from outside (the adapter's prototype from the layer, the SDK client's send); reads run one at a time.
let current;
const phase = (kind, started) => { if (current !== undefined && started >= current.t) current[kind] = Math.max(current[kind], performance.now() - current.t); };
const send = DynamoDBClient.prototype.send;
DynamoDBClient.prototype.send = function (...args) {
  const started = performance.now();
  const read = current;
  if (read !== undefined && read.tableAt < 0) { read.tableAt = started - read.t; read.cpuAtTable = process.cpuUsage(); }
  return send.apply(this, args).finally(() => { if (read === current) { phase('tableEnd', started); read.cpuTable = process.cpuUsage(read.cpuAtTable); } });
};
let adapter;
try { adapter = createRequire(typeof __filename === 'string' ? __filename : process.cwd() + '/index.js')('cdk-prompt-serving-cache'); } catch {}
if (adapter !== undefined) {
  const get = adapter.ValkeyL2.prototype.get;
  adapter.ValkeyL2.prototype.get = function (key) {
    const started = performance.now();
    const read = current;
    const epoch = key.endsWith('#epoch');
    let p;
    try { p = get.call(this, key); } catch (e) { p = Promise.reject(e); }
    p.then(() => {}, () => {}).finally(() => { if (read === current && !epoch) phase('l2End', started); });
    return p;
  };
  // Trace (OUTAGE_TRACE): when the breaker's probe and connection attempts ran, and how long their synchronous part took.
  for (const [proto, name] of [[adapter.ValkeyL2.prototype, 'probe'], [adapter.ValkeyConnection.prototype, 'open'], [adapter.ValkeyConnection.prototype, 'drop']]) {
    const original = proto[name];
    proto[name] = function (...args) {
      const t0 = performance.now();
      const out = original.apply(this, args);
      events.push([Date.now(), name, performance.now() - t0]);
      // How a probe or connection attempt ended: its settle time, and 'ok' (a probe: the breaker closed) or why not.
      if (out && typeof out.then === 'function') {
        out.then(() => events.push([Date.now(), name + (name === 'probe' && this.isTripped ? ':open' : ':ok'), performance.now() - t0]),
          (e) => events.push([Date.now(), name + ':' + String(e && e.message).slice(0, 40), performance.now() - t0]));
      }
      return out;
    };
  }
}
const events = [];
// HTTP trace (OUTAGE_TRACE): each table request's steps (created, socket assigned (new or reused), connected, sent, response).
{
  const http = createRequire(typeof __filename === 'string' ? __filename : process.cwd() + '/index.js')('node:http');
  const request = http.request;
  http.request = function (...args) {
    const req = request.apply(this, args);
    const t0 = performance.now();
    const mark = (what) => events.push([Date.now(), what, performance.now() - t0]);
    mark('http.req');
    req.on('socket', (sock) => {
      mark(sock.connecting ? 'http.newsock' : 'http.reused');
      if (sock.connecting) sock.once('connect', () => mark('http.conn'));
    });
    req.on('finish', () => mark('http.sent'));
    req.on('response', () => mark('http.resp'));
    return req;
  };
}
// Event-loop stalls (OUTAGE_TRACE): a 10 ms interval that ran more than 60 ms late.
let last = performance.now();
setInterval(() => { const now = performance.now(); if (now - last > 70) events.push([Date.now(), 'stall', now - last - 10]); last = now; }, 10).unref();
const prompts = new PromptClient();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const handler = async (event) => {
  if (event.op === 'start') {
    await preload(prompts, event.ids).catch(() => undefined);
    for (const id of event.ids) await prompts.getPrompt(id).catch(() => undefined);
    return prompts.stats();
  }
  if (event.op === 'load') {
    const until = Date.now() + event.durationMs;
    // OUTAGE_PROFILE_DIR (a trace for one reader): a CPU profile of the load, written beside the wall clock it began at.
    let session;
    if (process.env.OUTAGE_PROFILE_DIR) {
      const inspector = await import('node:inspector');
      session = new inspector.Session();
      session.connect();
      await new Promise((r) => session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 1000 }, () => session.post('Profiler.start', r))));
      session.startedAt = Date.now();
    }
    // One row per read: [epoch ms at the start, ms taken, 1 if served from the L2, 1 if it failed]
    const reads = [];
    const errors = {};
    while (Date.now() < until) {
      for (const id of event.ids) {
        prompts.invalidate(id);
        const hits = prompts.stats().l2Hits;
        const at = Date.now();
        const t = performance.now();
        const cpu = process.cpuUsage();
        let failed = 0;
        current = { t, l2End: 0, tableAt: -1, tableEnd: 0 };
        try { await prompts.getPrompt(id); } catch (e) { failed = 1; const m = String(e && e.name) + ': ' + String(e && e.message).slice(0, 120); errors[m] = (errors[m] || 0) + 1; }
        const took = performance.now() - t;
        const c = current;
        current = undefined;
        // Phases: L2 calls, waits before the table request (L2 calls included), the table request, after it.
        const beforeTable = c.tableAt < 0 ? took : c.tableAt;
        const table = c.tableAt < 0 ? 0 : Math.max(0, c.tableEnd - c.tableAt);
        const used = process.cpuUsage(cpu);
        const ms = (u) => (u === undefined ? 0 : (u.user + u.system) / 1000);
        reads.push([at, took, prompts.stats().l2Hits > hits ? 1 : 0, failed, c.l2End, beforeTable, table, took - beforeTable - table, ms(used), ms(c.cpuTable)]);
      }
      await sleep(event.pauseMs);
    }
    if (session !== undefined) {
      const { profile } = await new Promise((r) => session.post('Profiler.stop', (e, p) => r(p)));
      const fs = await import('node:fs');
      fs.writeFileSync(process.env.OUTAGE_PROFILE_DIR + '/' + process.pid + '-' + session.startedAt + '.cpuprofile', JSON.stringify(profile));
      session.disconnect();
    }
    return { reads, errors, stats: prompts.stats(), events: events.splice(0) };
  }
  return prompts.stats();
};
`;

/**
 * `OUTAGE_PLAIN_READERS`: the L2-off fleet's size (default `readers`). A smaller one leaves the cores to a large tiered
 * fleet when what is measured is its return to the L2, not the ratio.
 */
const PLAIN_READERS = Number(process.env.OUTAGE_PLAIN_READERS ?? READERS);
/** `OUTAGE_SETTLE_S`: seconds between the fleets' start and their reading (default 0). */
const SETTLE_MS = Number(process.env.OUTAGE_SETTLE_S ?? 0) * 1000;
if (!Number.isInteger(PLAIN_READERS) || PLAIN_READERS < 0) throw new Error(`OUTAGE_PLAIN_READERS must be a whole number of processes (got ${process.env.OUTAGE_PLAIN_READERS})`);
if (!(SETTLE_MS >= 0)) throw new Error(`OUTAGE_SETTLE_S must be a number of seconds (got ${process.env.OUTAGE_SETTLE_S})`);

/** The machine's CPU time (ms, all cores) busy and in total, since `since` when given. */
function cpuTimes(since?: { busy: number; total: number }): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const { times } of os.cpus()) {
    busy += times.user + times.nice + times.sys + times.irq;
    total += times.user + times.nice + times.sys + times.irq + times.idle;
  }
  return since === undefined ? { busy, total } : { busy: busy - since.busy, total: total - since.total };
}

const pct = (xs: number[], p: number): number | undefined =>
  (xs.length === 0 ? undefined : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]);
const ms = (v: number | undefined) => (v === undefined ? '—' : `${v.toFixed(1)} ms`);
const s = (v: number | undefined) => (v === undefined ? '—' : `${(v / 1000).toFixed(2)} s`);

async function bundleReader(): Promise<string> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'outage-reader-'));
  await installCompiledPackage(work);
  const asset = path.join(work, 'asset');
  await build({
    absWorkingDir: work,
    stdin: { contents: READER, resolveDir: work, sourcefile: 'index.mjs', loader: 'js' },
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    external: ['@aws-sdk/*'],
    outfile: path.join(asset, 'index.js'),
    logLevel: 'silent',
  });
  return asset;
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const ddb = await startDynamoDBLocal();
  process.env.DYNAMODB_LOCAL_ENDPOINT = ddb.endpoint;
  const admin = localDynamoDBClient();
  const { table, streamArn } = await createStreamTable(admin);
  const work = await prepareReaderApp();
  const synth = synthesize((app) => { buildReadmeApp(app, work); });
  const invalidationFn = synth.fn('PromptsInvalidationFunction', 'Cached');
  const cachedReader = synth.fn('ReaderCjs', 'Cached');
  const plainReader = synth.fn('ReaderCjs', 'Directory');
  const users = [
    { name: cachedReader.environment[Env.cacheUser] as string, password: 'unused', rules: `nopass ${l2AccessRules(l2KeyPattern(table), L2_READER_COMMANDS)}` },
    { name: invalidationFn.environment[Env.cacheUser] as string, password: 'unused', rules: `nopass ${l2AccessRules(l2KeyPattern(table), L2_WRITER_COMMANDS)}` },
  ];
  // OUTAGE_CACHE_NICE=-15: the cache server at that nice value (when allowed: root), as the table's stand-in is, for
  // a cache on hosts of its own; by default it shares the cores with both fleets, as every figure before it did.
  const cacheNice = process.env.OUTAGE_CACHE_NICE === undefined ? undefined : Number(process.env.OUTAGE_CACHE_NICE);
  const renice = (server: RedisServer) => { if (cacheNice !== undefined) os.setPriority(server.process.pid!, cacheNice); return server; };
  let cache: RedisServer = renice(await startRedisServer({ tls: true, cluster: true, users }));
  // One memory for both proxies (`OUTAGE_TABLE=memo`): the L2-off fleet has read every key before the outage.
  const proxies = await countingProxies(ddb.endpoint, 2, { memoTable: MEMO_TABLE });
  const [tieredEndpoint, plainEndpoint] = proxies.endpoints;
  const readerAsset = await bundleReader();
  const refs = (logicalId: string, attribute?: string) => {
    if (logicalId.startsWith('PromptsTable')) return table;
    if (attribute === 'Endpoint.Address') return 'localhost';
    if (attribute === 'Endpoint.Port') return String(cache.port);
    if (logicalId.startsWith('PromptsCache')) return 'prompts-cache';
    return undefined;
  };
  const caEnv = () => ({ NODE_EXTRA_CA_CERTS: path.join(cache.certDir!, 'ca.crt') });
  const started: DeployedProcess[] = [];
  let polling = false;
  let pollLoop: Promise<void> = Promise.resolve();
  const closers: (() => unknown)[] = [];
  try {
    const start = async (fn: SynthesizedFunction, env: Record<string, string>) => {
      const p = await startFunction(fn, { refs, extraEnv: { ...caEnv(), ...env } });
      started.push(p);
      return p;
    };
    const invalidation = await start(invalidationFn, { AWS_ENDPOINT_URL_DYNAMODB: ddb.endpoint });
    const stream = driveMapping(synth.eventSourceMappings[invalidationFn.logicalId], streamArn, ddb.endpoint, (e) => invalidation.call(e));
    closers.push(() => stream.poller.close());
    polling = true;
    pollLoop = (async () => {
      while (polling) {
        await stream.poller.drain().catch(() => 0);
        await new Promise((resolve) => setTimeout(resolve, STREAM_POLL_MS));
      }
    })();

    const ids = Array.from({ length: PROMPTS }, (_, i) => `prompt-${String(i).padStart(2, '0')}`);
    for (const id of ids) await publish(admin, table, id, 1, textContent(`Prompt ${id} v1 {{x}}`));
    await writeCatalog(admin, table, ids);
    await new Promise((resolve) => setTimeout(resolve, 3 * STREAM_POLL_MS));
    for (let i = 0; i < 300; i++) {
      await admin.send(new GetItemCommand({ TableName: table, Key: { prompt_id: { S: ids[i % PROMPTS] }, version: { S: CURRENT } } }));
    }

    // Started a few at a time (on a loaded host, 100 processes at once miss the harness's 30 s init bound).
    const tiered: DeployedProcess[] = [];
    const plain: DeployedProcess[] = [];
    for (let i = 0; i < Math.max(READERS, PLAIN_READERS); i += 5) {
      const n = Math.max(0, Math.min(5, READERS - i));
      const tieredFn = { ...cachedReader, assetDir: readerAsset };
      const plainFn = { ...plainReader, assetDir: readerAsset, layerDirs: [] };
      // OUTAGE_PROFILE_DIR: the first two readers of each fleet write a CPU profile of their load there.
      const env = (endpoint: string, k: number): Record<string, string> => ({
        AWS_ENDPOINT_URL_DYNAMODB: endpoint,
        ...(i + k < 2 && process.env.OUTAGE_PROFILE_DIR ? { OUTAGE_PROFILE_DIR: process.env.OUTAGE_PROFILE_DIR } : {}),
      });
      tiered.push(...await Promise.all(Array.from({ length: n }, (_, k) => start(tieredFn, env(tieredEndpoint, k)))));
      const m = Math.max(0, Math.min(5, PLAIN_READERS - i));
      plain.push(...await Promise.all(Array.from({ length: m }, (_, k) => start(plainFn, env(plainEndpoint, k)))));
    }
    for (let i = 0; i < Math.max(READERS, PLAIN_READERS); i += 10) await Promise.all([...tiered.slice(i, i + 10), ...plain.slice(i, i + 10)].map((p) => p.call({ op: 'start', ids })));

    /** A read: [start (epoch ms), ms taken, L2 hit, failed, L2 calls' end, before the table request, the table request, after it] (ms from its start), and the reader's CPU ms meanwhile. */
    type Read = [number, number, number, number, number, number, number, number, number, number];
    type Loaded = { reads: Read[]; errors: Record<string, number>; stats: any; events: [number, string, number][] };
    const durationMs = BEFORE_MS + OUTAGE_MS + AFTER_MS;

    // OUTAGE_SETTLE_S: wait this long after the fleets started (starting 100 processes loads 2 cores for a while).
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const loadAtLoad = os.loadavg();
    const cpuAtLoad = cpuTimes();
    const loads = [...tiered, ...plain].map((p) => p.call<Loaded>({ op: 'load', ids, durationMs, pauseMs: PAUSE_MS }));
    await new Promise((resolve) => setTimeout(resolve, BEFORE_MS));
    const downAt = Date.now();
    if (process.env.OUTAGE_PROFILE_DIR) console.log(`outage from ${downAt}`);
    if (MODE === 'kill') {
      cache.process.kill('SIGKILL');
      await cache.stop();
    } else {
      cache.process.kill('SIGSTOP');
    }
    // The harness's own TLS connections to the cache, each sending one PING once its handshake is done (a NOAUTH
    // error is an answer): one opened at the return tells when the cache answers a new connection again (a stopped
    // server first works through the connections its kernel queued meanwhile); with OUTAGE_TRACE one more, opened
    // 1 s before the return. Times in ms from the return.
    const returned = { at: Date.now() + OUTAGE_MS };
    const harnessConnections: string[] = [];
    const harnessConnection = (label: string) => new Promise<number | undefined>((resolve) => {
      const opened = Date.now();
      const sock = tls.connect({ host: '127.0.0.1', port: cache.port, ca: cache.ca, servername: 'localhost' }, () => {
        harnessConnections.push(`${label}: handshake +${Date.now() - returned.at}`);
        sock.write('PING\r\n');
      });
      sock.once('data', () => {
        harnessConnections.push(`${label}: PING answered +${Date.now() - returned.at} (opened ${opened - returned.at})`);
        sock.destroy();
        resolve(Date.now());
      });
      sock.on('error', (e) => { harnessConnections.push(`${label}: ${e.message}`); resolve(undefined); });
      setTimeout(() => { sock.destroy(); resolve(undefined); }, OUTAGE_MS + AFTER_MS).unref();
    });
    if (process.env.OUTAGE_TRACE && MODE === 'stop') setTimeout(() => void harnessConnection('opened 1 s before the return'), Math.max(0, OUTAGE_MS - 1000));
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    let restartTook = 0;
    if (MODE === 'kill') {
      const t = Date.now();
      cache = renice(await startRedisServer({ tls: true, cluster: true, users, certsFrom: cache }));
      restartTook = Date.now() - t;
    } else {
      cache.process.kill('SIGCONT');
    }
    const upAt = Date.now();
    returned.at = upAt;
    // A restarted server answered already (startRedisServer waits for its PONG).
    const answering = MODE === 'stop' ? harnessConnection('opened at the return') : Promise.resolve(upAt);
    const loaded = await Promise.all(loads);
    const answeredAt = await answering;
    const loadAtEnd = os.loadavg();
    const busy = cpuTimes(cpuAtLoad);
    const [tieredProxy, plainProxy] = (await proxies.collect()).map((log) => ({ ...log, reads: log.reads.map((r) => r.at) }));
    const tieredLoads = loaded.slice(0, tiered.length);
    const plainLoads = loaded.slice(tiered.length);

    const window = (ls: Loaded[], from: number, to: number) => ls.flatMap((l) => l.reads.filter(([at]) => at >= from && at < to));
    const row = (label: string, rows: Read[]) => {
      const t = rows.map((r) => r[1]);
      const max = t.length ? Math.max(...t) : undefined;
      const failed = rows.reduce((n, r) => n + r[3], 0);
      return { label, p50: pct(t, 0.5), p99: pct(t, 0.99), max, n: rows.length, failed, l2: rows.reduce((n, r) => n + r[2], 0) };
    };
    // Outage window: from the kill (stop) to the cache's return.
    const during = [row('with the cache tier, cache down', window(tieredLoads, downAt, upAt)), row('L2 off (same window)', window(plainLoads, downAt, upAt))];
    const before = [row('with the cache tier, cache up', window(tieredLoads, downAt - BEFORE_MS + 1000, downAt)), row('L2 off (same window)', window(plainLoads, downAt - BEFORE_MS + 1000, downAt))];
    // Reads beginning in the first second of the outage are the ones a per-read timeout would have slowed.
    const firstSecond = [row('with the cache tier, first second of the outage', window(tieredLoads, downAt, downAt + 1000)), row('L2 off (same window)', window(plainLoads, downAt, downAt + 1000))];

    // Resumption: per reader, the first read that started after the cache's return and was an L2 hit.
    const resume = tieredLoads.map((l) => {
      const first = l.reads.find(([at, , hit]) => at >= upAt && hit === 1);
      return first === undefined ? Infinity : first[0] - upAt;
    });
    const resumed = resume.filter(Number.isFinite);
    const rate = (reads: number[], from: number, to: number) => reads.filter((t) => t >= from && t < to).length / ((to - from) / 1000);
    const bins: string[] = [];
    for (let t = upAt; t < upAt + 3000; t += 250) bins.push(String(tieredProxy.reads.filter((r) => r >= t && r < t + 250).length));

    const out: string[] = [];
    out.push(`### The cache ${MODE === 'kill' ? 'SIGKILLed, then restarted empty' : 'SIGSTOPped (a silent host), then SIGCONTed'} after ${s(upAt - downAt)}: ${READERS} + ${PLAIN_READERS} reader processes × ${PROMPTS} prompts`, '');
    out.push(`Each read drops the prompt's in-process copy first (\`invalidate(id)\`), so every read goes past memory; rounds every ${PAUSE_MS} ms; both fleets read at the same time, default settings${MEMO_TABLE ? '; the table answered from the proxies\' memory after each read\'s first (`OUTAGE_TABLE=memo`)' : ''}.`, '');
    out.push('| window | reads | failed | served from the L2 | p50 | p99 | max | p99 ÷ L2 off p99 |', '|---|---:|---:|---:|---:|---:|---:|---:|');
    // The breaker's steady state: each tiered reader's outage reads after its first (which meets the silent or dead
    // cache, opens the breaker and is that process's first table request), against the same L2-off window.
    const afterFirst = tieredLoads.flatMap((l) => l.reads.filter(([at]) => at >= downAt && at < upAt).slice(1));
    const breakerOpen = [row('with the cache tier, cache down, each reader\'s first outage read left out', afterFirst), row('L2 off (same window)', window(plainLoads, downAt, upAt))];
    for (const pair of [before, firstSecond, during, breakerOpen]) {
      for (const r of pair) out.push(`| ${r.label} | ${r.n} | ${r.failed} | ${r.l2} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.max)} | ${r === pair[0] && r.p99 !== undefined && pair[1].p99 ? `${(r.p99 / pair[1].p99).toFixed(2)}×` : ''} |`);
    }
    // What a hedge would cost (a table read started when the L2 has not answered within H ms): the cache-up reads whose
    // L2 answer came more than H ms into the read, each of which a hedge at H would have sent to the table as well. A
    // read whose L2 call outlived it records no answer (0): an undercount, rare with the cache up.
    const upReads = window(tieredLoads, downAt - BEFORE_MS + 1000, downAt);
    const hedges = [5, 10, 20, 50].map((h) => `${h} ms: ${upReads.length ? ((100 * upReads.filter((r) => r[4] > h).length) / upReads.length).toFixed(1) : '—'} %`);
    out.push('', `Reads with the cache up (${upReads.filter((r) => r[2] === 1).length} of them L2 hits) whose L2 answer came later than this into the read (each a table read for a hedge at that delay; a read whose L2 call outlived it counts as 0): ${hedges.join(', ')} of ${upReads.length}; the L2 answer p50 / p99 / p99.9 ${ms(pct(upReads.map((r) => r[4]), 0.5))} / ${ms(pct(upReads.map((r) => r[4]), 0.99))} / ${ms(pct(upReads.map((r) => r[4]), 0.999))}.`);
    // Where the slowest reads of the outage spent their time (the reads at or above each fleet's p99).
    out.push('', '| slowest 1 % of outage reads | reads | processes | mean ms | L2 calls until | before the table request | table request | after it |', '|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const [label, ls] of [['with the cache tier', tieredLoads], ['L2 off', plainLoads]] as const) {
      const tagged = ls.flatMap((l, i) => l.reads.filter(([at]) => at >= downAt && at < upAt).map((r) => ({ r, i })));
      const p99 = pct(tagged.map(({ r }) => r[1]), 0.99);
      const slow = tagged.filter(({ r }) => p99 !== undefined && r[1] >= p99);
      const mean = (k: number) => (slow.length ? (slow.reduce((n, { r }) => n + r[k], 0) / slow.length).toFixed(0) : '—');
      out.push(`| ${label} | ${slow.length} | ${new Set(slow.map(({ i }) => i)).size} | ${mean(1)} | ${mean(4)} | ${mean(5)} | ${mean(6)} | ${mean(7)} |`);
    }
    if (process.env.OUTAGE_TRACE) {
      // Each tiered process's reads slower than 300 ms in the outage: offset from the outage's start, ms, phases.
      tieredLoads.forEach((l, i) => {
        const slow = l.reads.filter(([at, took], k, all) => at >= downAt && at < upAt && (took > 300 || (k > 0 && all[k - 1][0] < downAt)));
        if (slow.length) out.push(`- reader ${i}: ${slow.map((r) => `+${r[0] - downAt}:${r[1].toFixed(0)}(l2 ${r[4].toFixed(0)}, pre ${r[5].toFixed(0)}, ddb ${r[6].toFixed(0)}, post ${r[7].toFixed(0)}, cpu ${r[8].toFixed(1)}, of which in the table request ${r[9].toFixed(1)})`).join(' ')}`);
        const events = l.events.filter(([at]) => at >= downAt - 200 && at < downAt + 2000);
        if (events.length) out.push(`  - events: ${events.map(([at, what, took]) => `+${at - downAt} ${what} ${took.toFixed(0)}`).join(', ')}`);
      });
      // After the cache's return: each tiered reader's probes and connection attempts from 6 s before it until its L2 hits resumed.
      tieredLoads.forEach((l, i) => {
        const until = upAt + (Number.isFinite(resume[i]) ? resume[i] : AFTER_MS);
        const events = l.events.filter(([at, what]) => at >= upAt - 6000 && at <= until && /^(probe|open|drop)/.test(what));
        out.push(`- reader ${i}, back after ${Number.isFinite(resume[i]) ? `${resume[i]} ms` : 'never'}: ${events.map(([at, what, took]) => `${at - upAt >= 0 ? '+' : ''}${at - upAt} ${what} ${took.toFixed(0)}`).join(', ')}`);
      });
      const cpu = (rows: Read[]) => `p50 ${pct(rows.map((r) => r[8]), 0.5)?.toFixed(1)}, p99 ${pct(rows.map((r) => r[8]), 0.99)?.toFixed(1)} ms (${rows.length} reads)`;
      const firsts = tieredLoads.flatMap((l) => l.reads.filter(([at], k, all) => at >= downAt && k > 0 && all[k - 1][0] < downAt));
      out.push(`- CPU per read in the outage: with the cache tier ${cpu(window(tieredLoads, downAt, upAt))}; its readers' first outage read ${cpu(firsts)}; L2 off ${cpu(window(plainLoads, downAt, upAt))}`);
      for (const [label, proxy] of [['tiered', tieredProxy], ['L2 off', plainProxy]] as const) {
        const w = proxy.served.filter(([at]) => at >= downAt - 200 && at < downAt + 1500);
        out.push(`- ${label} proxy, -200..+1500 ms: ${w.length} requests, ${w.filter(([, h]) => !h).length} memo misses; served in p50 ${pct(w.map((x) => x[2]), 0.5)} ms, max ${Math.max(0, ...w.map((x) => x[2]))} ms; arrivals per 100 ms: ${Array.from({ length: 17 }, (_, k) => w.filter(([at]) => at >= downAt - 200 + k * 100 && at < downAt - 100 + k * 100).length).join(' ')}`);
      }
      out.push(`- the harness's connections to the cache (ms from the return): ${harnessConnections.join('; ')}`);
      out.push(`- tiered proxy connections accepted -200..+2000 (+at: ms to first data): ${tieredProxy.accepted.filter(([at]) => at >= downAt - 200 && at < downAt + 2000).map(([at, d]) => `+${at - downAt}:${d}`).join(' ')}`);
      plainLoads.slice(0, 5).forEach((l, i) => {
        const events = l.events.filter(([at]) => at >= downAt - 200 && at < downAt + 2000);
        out.push(`- L2 off reader ${i} events: ${events.map(([at, what, took]) => `+${at - downAt} ${what} ${took.toFixed(0)}`).join(', ')}`);
      });
    }
    const allFailed = loaded.reduce((n, l) => n + l.reads.reduce((m, r) => m + r[3], 0), 0);
    out.push('', `Failed reads over the whole run (both fleets, ${loaded.reduce((n, l) => n + l.reads.length, 0)} reads): ${allFailed}.`);
    const errors = new Map<string, number>();
    for (const l of loaded) for (const [m, n] of Object.entries(l.errors)) errors.set(m, (errors.get(m) ?? 0) + n);
    for (const [m, n] of errors) out.push(`- ${n} × ${m}`);
    out.push('', '| after the cache is back | p50 | p99 | max | readers not back on the L2 |', '|---|---:|---:|---:|---:|');
    out.push(`| time until a reader's L2 hits resume | ${s(pct(resumed, 0.5))} | ${s(pct(resumed, 0.99))} | ${s(resumed.length ? Math.max(...resumed) : undefined)} | ${resume.length - resumed.length} of ${READERS} (within ${s(AFTER_MS)}) |`);
    // When each reader's breaker closed (its probe answered: its next read goes to the L2), which does not wait for
    // the reader's next round as the first hit does. A probe answered during a restart (the new server answers a PING
    // before the harness has given it its slots) counts as at the return, and the row says how many.
    const closed = tieredLoads.map((l) => l.events.find(([at, what]) => what === 'probe:ok' && at >= downAt)?.[0]);
    const closedAt = closed.filter((at): at is number => at !== undefined);
    const closedAfter = closedAt.map((at) => Math.max(0, at - upAt));
    const early = closedAt.filter((at) => at < upAt).length;
    out.push(`| time until a reader's breaker closes (its probe answered) | ${s(pct(closedAfter, 0.5))} | ${s(pct(closedAfter, 0.99))} | ${s(closedAfter.length ? Math.max(...closedAfter) : undefined)} | ${READERS - closedAt.length} of ${READERS}${early ? ` (${early} closed during the restart, counted as 0)` : ''} |`);
    if (MODE === 'stop') {
      // From the moment the cache answered a new connection again (the harness's, opened at the return).
      const answered = answeredAt === undefined ? undefined : answeredAt - upAt;
      const since = answered === undefined ? [] : resumed.map((t) => Math.max(0, t - answered));
      out.push(`| the same, from the cache's first answer to a new connection (${answered === undefined ? 'none' : `${s(answered)} after the return`}) | ${s(pct(since, 0.5))} | ${s(pct(since, 0.99))} | ${s(since.length ? Math.max(...since) : undefined)} | |`);
    }
    out.push('', `Table reads/s of the tiered fleet: before the outage ${rate(tieredProxy.reads, downAt - 3000, downAt).toFixed(0)}, during ${rate(tieredProxy.reads, downAt, upAt).toFixed(0)}, 0–1 s after the return ${rate(tieredProxy.reads, upAt, upAt + 1000).toFixed(0)}, 1–2 s ${rate(tieredProxy.reads, upAt + 1000, upAt + 2000).toFixed(0)}, 2–5 s ${rate(tieredProxy.reads, upAt + 2000, upAt + 5000).toFixed(0)}; per 250 ms after the return: ${bins.join(', ')}. (L2 off fleet, during: ${rate(plainProxy.reads, downAt, upAt).toFixed(0)}/s.)`);
    if (MODE === 'kill') out.push('', `The restart itself took ${s(restartTook)} (counted in the outage window).`);
    out.push('', `Load average (1/5/15 min) at the start: ${loadAtStart.map((l) => l.toFixed(1)).join(' / ')}; when the fleets began reading: ${loadAtLoad.map((l) => l.toFixed(1)).join(' / ')}; at the end: ${loadAtEnd.map((l) => l.toFixed(1)).join(' / ')}; the cores busy over the reading ${(100 * busy.busy / busy.total).toFixed(0)} % (${os.cpus().length} cores)${cacheNice === undefined ? '' : `; the cache server at nice ${cacheNice}`}.`);
    console.log(out.join('\n'));
  } finally {
    polling = false;
    await pollLoop;
    for (const close of closers) await close();
    if (MODE === 'stop') cache.process.kill('SIGCONT');
    for (const p of started) await p.stop().catch(() => undefined);
    await cache.stop().catch(() => undefined);
    await proxies.close().catch(() => undefined);
    admin.destroy();
    await ddb.stop();
    synth.cleanup();
    fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(path.dirname(readerAsset), { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
