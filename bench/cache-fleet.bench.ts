/**
 * Cache-tier fleet benchmark, across processes, as deployed: one OS process per simulated Lambda container (the
 * README's Cached stack's reader: its template environment and the node-redis layer `addReader` attaches, the
 * client bundled from the package as published), the invalidation function run from its isolated staged asset
 * (test/support/as-deployed.ts) and fed from DynamoDB Local's stream the way the template's event source mapping
 * reads it (polled 4 times a second, as Lambda polls a shard), a TLS cluster-mode redis-server with the template's
 * ACL users. Every reader runs at the DEFAULT client settings. Table reads are counted by a proxy in front of
 * DynamoDB Local (every reader's AWS_ENDPOINT_URL_DYNAMODB), per key, on a thread of its own (bench/support/counting-proxy.ts).
 *
 *   npx projen bundle && npx tsx bench/cache-fleet.bench.ts [readers=50] [prompts=20] [phases=cold,change,kill]
 *
 * Phases, with the cache tier and beside it the same fleet with the L2 off:
 * 1. fleet cold start: every reader starts at once, preloads and reads every prompt → table reads per key;
 * 2. a change at the source (a pointer write) → time until every reader serves it, and the table reads it caused;
 * 3. the cache SIGKILLed for 3 s under load (the readers' copies expire every second, `maxAgeSeconds=1`, so that
 *    their refreshes go to the L2) → failed reads, and time from the restart until each reader's L2 hits resume.
 * Prints a markdown report (docs/BENCHMARKS.md "Cache tier (fleet)"). About two minutes on 2 cores.
 * `FLEET_CACHE_NICE=-15` runs the cache server, and its restart, at that nice value (as root), as the table's stand-in
 * runs: a cache on hosts of its own, not at its turn among the readers (on 2 cores, 50 readers leave a server sharing
 * them waiting: a restart took 19 s at load 45). `FLEET_TABLE=memo` has the proxy answer a table read it has answered
 * before from memory (reads still counted), so the table answers at once whatever the load, as DynamoDB does: at 50
 * readers after the kill, DynamoDB Local, on the cores the readers share, failed 95 % of the refills on the readers'
 * request timeout, so nothing refilled the empty cache. The prompts must not change meanwhile: not with `change`.
 * `FLEET_KILL_L2_TIMEOUT_MS=1000` sets the kill phase's `l2TimeoutMs`; `FLEET_DEBUG=1` prints the counters of the
 * readers that read the table at the cold start, and the first three kill-phase readers' counters and L2 hits.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { build } from 'esbuild';
import { CATALOG_ID, CURRENT, Env, l2AccessRules, l2KeyPattern, L2_READER_COMMANDS, L2_WRITER_COMMANDS } from '../src/schema';
import { countingProxies, ProxyRead } from './support/counting-proxy';
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
/** Which phases to run (`cold`, `change`, `kill`; comma-separated): all by default. */
const PHASES = new Set((process.argv[4] ?? 'cold,change,kill').split(','));
/** Lambda polls each shard of a DynamoDB stream four times a second. */
const STREAM_POLL_MS = 250;
/** `FLEET_TABLE=memo`: the proxy answers repeated table reads from memory (see the header). */
const MEMO_TABLE = process.env.FLEET_TABLE === 'memo';
if (MEMO_TABLE && PHASES.has('change')) throw new Error('FLEET_TABLE=memo answers a pointer read from memory after a change: run it without the change phase (e.g. phases=cold,kill)');

/** The reader every simulated container runs: `new PromptClient()` with no options (the defaults), driven by op. */
const READER = `
import { preload, PromptClient } from 'cdk-prompt-serving/runtime';
const prompts = new PromptClient();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const handler = async (event) => {
  if (event.op === 'start') {
    const started = Date.now();
    let failed = 0, preloadFailed = 0;
    await preload(prompts, event.ids).catch(() => { preloadFailed++; });
    for (const id of event.ids) await prompts.getPrompt(id).catch(() => { failed++; });
    return { ms: Date.now() - started, failed, preloadFailed, stats: prompts.stats() };
  }
  if (event.op === 'watch') {
    const until = Date.now() + event.timeoutMs;
    while (Date.now() < until) {
      const p = await prompts.getPrompt(event.id).catch(() => undefined);
      if (p && p.version >= event.version) return { at: Date.now(), stats: prompts.stats() };
      await sleep(event.intervalMs);
    }
    return { at: null, stats: prompts.stats() };
  }
  if (event.op === 'load') {
    const until = Date.now() + event.durationMs;
    let ok = 0, failed = 0;
    const hits = [];
    while (Date.now() < until) {
      for (const id of event.ids) {
        try { await prompts.getPrompt(id); ok++; } catch { failed++; }
      }
      hits.push([Date.now(), prompts.stats().l2Hits]);
      await sleep(event.pauseMs);
    }
    return { ok, failed, hits, stats: prompts.stats() };
  }
  return prompts.stats();
};
`;

const pct = (xs: number[], p: number): number | undefined => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const seconds = (ms: number | undefined) => (ms === undefined ? '—' : `${(ms / 1000).toFixed(2)} s`);

async function bundleReader(): Promise<string> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'fleet-reader-'));
  await installCompiledPackage(work);
  const asset = path.join(work, 'asset');
  // As NodejsFunction bundles by default: CommonJS, AWS SDK external, not minified.
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
  const cacheNice = process.env.FLEET_CACHE_NICE === undefined ? undefined : Number(process.env.FLEET_CACHE_NICE);
  const renice = (server: RedisServer) => { if (cacheNice !== undefined) os.setPriority(server.process.pid!, cacheNice); return server; };
  let cache: RedisServer = renice(await startRedisServer({ tls: true, cluster: true, users }));
  const proxies = await countingProxies(ddb.endpoint, 1, { memoTable: MEMO_TABLE });
  const proxyEndpoint = proxies.endpoints[0];
  const readerAsset = await bundleReader();
  const refs = (logicalId: string, attribute?: string) => {
    if (logicalId.startsWith('PromptsTable')) return table;
    if (attribute === 'Endpoint.Address') return 'localhost';
    if (attribute === 'Endpoint.Port') return String(cache.port);
    if (logicalId.startsWith('PromptsCache')) return 'prompts-cache';
    return undefined;
  };
  const extraEnv = () => ({ AWS_ENDPOINT_URL_DYNAMODB: proxyEndpoint, NODE_EXTRA_CA_CERTS: path.join(cache.certDir!, 'ca.crt') });
  const started: DeployedProcess[] = [];
  let polling = false;
  let pollLoop: Promise<void> = Promise.resolve();
  const closers: (() => unknown)[] = [];
  try {
    await measure();
  } finally {
    // Whatever happened, no process of this run outlives it.
    polling = false;
    await pollLoop;
    for (const close of closers) await close();
    for (const p of started) await p.stop().catch(() => undefined);
    await cache.stop().catch(() => undefined);
    await proxies.close().catch(() => undefined);
    admin.destroy();
    await ddb.stop();
    synth.cleanup();
    fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(path.dirname(readerAsset), { recursive: true, force: true });
  }

  async function measure(): Promise<void> {
    const start = async (fn: SynthesizedFunction, env: Record<string, string> = {}) => {
      const p = await startFunction(fn, { refs, extraEnv: { ...extraEnv(), ...env } });
      started.push(p);
      return p;
    };

    const invalidation = await start(invalidationFn);
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
    await new Promise((resolve) => setTimeout(resolve, 3 * STREAM_POLL_MS)); // written through before the fleet starts
    // DynamoDB Local's JVM warmed up (JIT), so the first fleet does not pay for it alone.
    for (let i = 0; i < 300; i++) {
      await admin.send(new GetItemCommand({ TableName: table, Key: { prompt_id: { S: ids[i % PROMPTS] }, version: { S: CURRENT } } }));
    }

    const report: string[] = [];
    const readsSince = async (t: number): Promise<ProxyRead[]> => (await proxies.collect())[0].reads.filter((r) => r.at >= t);
    const perKey = (reads: { key: string }[]) => {
      const counts = new Map<string, number>();
      for (const r of reads) counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
      return counts;
    };

    // 1. Fleet cold start, with the tier and with the L2 off.
    report.push(`| fleet cold start: ${READERS} reader processes × ${PROMPTS} prompts, all at once | table reads per key (max) | table reads, all keys | failed reads | readers whose first cache connection failed | L2 hits / misses / errors (all readers) | time to ready p50 / p99 |`, '|---|---|---|---|---|---|---|');
    const fleets: Record<string, DeployedProcess[]> = {};
    const runs: [string, SynthesizedFunction, Record<string, string>][] = [
      ['L2 off', { ...plainReader, assetDir: readerAsset, layerDirs: [] }, {}],
      ['with the cache tier (defaults)', { ...cachedReader, assetDir: readerAsset }, {}],
      ['with the cache tier, `PROMPT_SERVING_L2_TIMEOUT_MS=1000`', { ...cachedReader, assetDir: readerAsset }, { PROMPT_SERVING_L2_TIMEOUT_MS: '1000' }],
    ];
    for (const [label, fn, env] of runs) {
      if (!PHASES.has('cold') && label !== runs[1][0]) continue; // the later phases need the tiered fleet only
      const t0 = Date.now();
      const fleet = await Promise.all(Array.from({ length: READERS }, () => start(fn, env)));
      fleets[label] = fleet;
      const results = await Promise.all(fleet.map((p) => p.call<{ ms: number; failed: number; preloadFailed: number; stats: any }>({ op: 'start', ids })));
      const reads = await readsSince(t0);
      const counts = perKey(reads);
      // FLEET_DEBUG=1: the counters of every reader that read the table.
      if (process.env.FLEET_DEBUG) for (const r of results) if (r.stats.storeReads > 0) console.error(label, JSON.stringify(r.stats));
      const failed = results.reduce((n, r) => n + r.failed, 0);
      const preloadFailed = results.reduce((n, r) => n + r.preloadFailed, 0);
      const ms = results.map((r) => r.ms);
      const sum = (name: string) => results.reduce((n, r) => n + (r.stats[name] ?? 0), 0);
      const l2 = fn.layerDirs.length === 0 ? '—' : `${sum('l2Hits')} / ${sum('l2Misses')} / ${sum('l2Errors')}`;
      report.push(`| ${label} | ${Math.max(0, ...counts.values())} (${CATALOG_ID}: ${counts.get(`${CATALOG_ID}/${CURRENT}`) ?? 0}) | ${reads.length} | ${failed} (preloads that threw: ${preloadFailed}) | ${fn.layerDirs.length === 0 ? '—' : sum('l2Unavailable')} | ${l2} | ${seconds(pct(ms, 0.5))} / ${seconds(pct(ms, 0.99))} |`);
      if (label !== runs[1][0]) {
        for (const p of fleet) await p.stop(); // idle from here on: out of the way of the measured fleet
      }
    }

    if (!PHASES.has('cold')) report.length = 0;
    const tiered = fleets[runs[1][0]];
    if (PHASES.has('change')) await change();
    for (const p of tiered) await p.stop();
    if (PHASES.has('kill')) await kill();
    report.push('', `Load average at the end (1/5/15 min): ${os.loadavg().map((l) => l.toFixed(1)).join(' / ')} on ${os.cpus().length} cores${cacheNice === undefined ? '' : `; the cache server at nice ${cacheNice}`}${MEMO_TABLE ? '; repeated table reads answered from the proxy\'s memory' : ''}.`);
    console.log(report.join('\n'));
    return;

    // 2. A change at the source: every cached reader watches one prompt; the pointer is rewritten at t0.
    async function change(): Promise<void> {
      const changed = ids[0];
      const watch = tiered.map((p) => p.call<{ at: number | null }>({ op: 'watch', id: changed, version: 2, intervalMs: 10, timeoutMs: 20_000 }));
      await new Promise((resolve) => setTimeout(resolve, 1500)); // every reader is watching
      const current = (await admin.send(new GetItemCommand({ TableName: table, Key: { prompt_id: { S: changed }, version: { S: CURRENT } } }))).Item!;
      const t0 = Date.now();
      await admin.send(new PutItemCommand({
        TableName: table,
        Item: { ...current, version_number: { N: '2' }, text: { S: 'Prompt v2 {{x}}' }, revision: { N: String(Number(current.revision?.N ?? 1) + 1) } },
      }));
      const served = (await Promise.all(watch)).map((r) => (r.at === null ? Infinity : r.at - t0));
      const causedReads = (await readsSince(t0)).length;
      report.push('', `| a change at the source, ${READERS} reader processes, default settings (epoch poll 500 ms), stream polled every ${STREAM_POLL_MS} ms | p50 | p99 | max | readers that never served it (20 s) | table reads caused |`, '|---|---|---|---|---|---|');
      const finite = served.filter(Number.isFinite);
      report.push(`| with the cache tier: time from the table write until each reader serves it | ${seconds(pct(finite, 0.5))} | ${seconds(pct(finite, 0.99))} | ${seconds(Math.max(...finite))} | ${served.length - finite.length} | ${causedReads} |`);
      report.push('| L2 off: bound (not waited for) | — | — | maxAgeSeconds + staleWhileRevalidateSeconds = 120 s | — | 1 per reader |');
    }

    // 3. The cache SIGKILLed for 3 s under load: a fleet whose copies expire every second (maxAgeSeconds=1), so that
    // reads keep going to the cache (stale-while-revalidate refreshes in the background, from the L2 or the table).
    async function kill(): Promise<void> {
      // FLEET_KILL_L2_TIMEOUT_MS: this fleet's l2TimeoutMs (default 100 ms), for a host whose round trips outlast it.
      const l2Timeout = process.env.FLEET_KILL_L2_TIMEOUT_MS;
      const timeout: Record<string, string> = l2Timeout === undefined ? {} : { PROMPT_SERVING_L2_TIMEOUT_MS: l2Timeout };
      const churn = await Promise.all(Array.from({ length: READERS }, () => start({ ...cachedReader, assetDir: readerAsset }, { PROMPT_SERVING_MAX_AGE_SECONDS: '1', ...timeout })));
      await Promise.all(churn.map((p) => p.call({ op: 'start', ids })));
      const loadMs = 45_000;
      const loadStart = Date.now();
      const load = churn.map((p) => p.call<{ ok: number; failed: number; hits: [number, number][]; stats: any }>({ op: 'load', ids, durationMs: loadMs, pauseMs: 100 }));
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const killReadsFrom = Date.now();
      cache.process.kill('SIGKILL');
      await cache.stop();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const restartFrom = Date.now();
      // With FLEET_CACHE_NICE the restart itself runs at that nice value too (the harness's thread for its length, so
      // the new server and the redis-cli that gives it its slots inherit it): a cache's restart is not its turn
      // among the readers.
      const harnessNice = os.getPriority(0);
      if (cacheNice !== undefined) os.setPriority(0, cacheNice);
      try {
        cache = renice(await startRedisServer({ tls: true, cluster: true, users, certsFrom: cache }));
      } finally {
        if (cacheNice !== undefined) os.setPriority(0, harnessNice);
      }
      const restartedAt = Date.now();
      const downFor = restartedAt - killReadsFrom;
      const restartTook = restartedAt - restartFrom;
      const loaded = await Promise.all(load);
      if (process.env.FLEET_DEBUG) for (const r of loaded.slice(0, 3)) console.error('kill', JSON.stringify(r.stats), JSON.stringify(r.hits.filter(([t]) => t >= killReadsFrom - 500).filter((_, k) => k % 10 === 0).map(([t, h]) => [t - restartedAt, h])));
      const resume = loaded.map((r) => {
        const before = r.hits.filter(([t]) => t < restartedAt).at(-1)?.[1] ?? 0;
        const first = r.hits.find(([t, h]) => t >= restartedAt && h > before);
        return first === undefined ? Infinity : first[0] - restartedAt;
      });
      const resumed = resume.filter(Number.isFinite);
      const hitsBeforeKill = loaded.reduce((n, r) => n + (r.hits.filter(([t]) => t < killReadsFrom).at(-1)?.[1] ?? 0), 0);
      const window = loadStart + loadMs - restartedAt;
      report.push('', `| the cache SIGKILLed for 3 s under load (${READERS} readers reading ${PROMPTS} prompts every 100 ms, \`maxAgeSeconds=1\`${l2Timeout === undefined ? '' : `, \`l2TimeoutMs=${l2Timeout}\``}, other settings default) | reads | failed reads | time from the restart until L2 hits resume p50 / p99 / max | readers whose L2 hits did not resume (within ${seconds(window)}) | L2 hits before the kill | table reads from the kill to the end |`, '|---|---|---|---|---|---|---|');
      report.push(`| with the cache tier | ${loaded.reduce((n, r) => n + r.ok + r.failed, 0)} | ${loaded.reduce((n, r) => n + r.failed, 0)} | ${seconds(pct(resumed, 0.5))} / ${seconds(pct(resumed, 0.99))} / ${seconds(resumed.length ? Math.max(...resumed) : undefined)} | ${resume.length - resumed.length} | ${hitsBeforeKill} | ${(await readsSince(killReadsFrom)).length} |`);

      report.push('', `The cache was down ${seconds(downFor)} (SIGKILL, 3 s, then the restart, which took ${seconds(restartTook)} here).`);
      const total = (name: string) => loaded.reduce((n, r) => n + (r.stats[name] ?? 0), 0);
      report.push('', `Over the phase (its start included), all readers: table requests ${total('storeReads')} (retries and catalog reads included), reads that failed after them ${total('storeErrors')} (stale copies served meanwhile: ${total('staleServes')}); L2 hits / misses / errors ${total('l2Hits')} / ${total('l2Misses')} / ${total('l2Errors')} (errors include calls skipped while the breaker was open).`);
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
