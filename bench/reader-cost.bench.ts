/**
 * What the deployed reader costs, side by side in one run, at the defaults a user gets
 * (`new PromptClient()`, no options; the cache on means `PROMPT_SERVING_CACHE_ENDPOINT` set as `addReader` sets
 * it, plain TCP, no auth, standalone, against a local redis-server):
 *
 * 1. a cached `getPrompt` with the L2 off and on (the epoch watch running) against the floor, an awaited `Map`
 *    lookup with an expiry check: interleaved rounds, median ns/op and median per-round ratio;
 * 2. a miss's own CPU (`process.cpuUsage`) of the reader bundled as deployed, against canned HTTP answers (a local
 *    HTTP server in another process answering `GetItem`/`BatchGetItem` with a fixed pointer item), beside a bare
 *    `DynamoDBClient` `GetItemCommand`, the two alternated call by call;
 * 3. cold init, process start → first item, of the reader bundled as `NodejsFunction` does (esbuild, minified,
 *    `@aws-sdk/*` external) vs a bare `DynamoDBClient` bundled the same way, in fresh processes, interleaved;
 * 4. time to ready (process start → import, construct, `preload`) of that bundle with the cache on vs off, the cache
 *    reached plainly (standalone, TCP, no auth) and as `addReader` reaches a serverless cache (cluster mode, TLS, IAM
 *    auth, against a one-node cluster redis-server with TLS); then node-redis's own load and client creation;
 *    node-redis comes from the reader layer's file (`assets/layer/nodejs/nodejs/node_modules`, on `NODE_PATH` as on
 *    Lambda): run `npx projen bundle` first.
 *
 *   npx projen bundle && npx tsx bench/reader-cost.bench.ts
 *   READER_COST_ONLY=cold npx tsx bench/reader-cost.bench.ts     # parts 3 and 4 only
 *   READER_COST_ONLY=miss npx tsx bench/reader-cost.bench.ts     # part 2 only
 *
 * Prints a markdown report (copied into docs/BENCHMARKS.md). Takes about a minute on 2 cores.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { build, buildSync } from 'esbuild';
import { preload, PromptClient } from '../src/runtime';
import { createValkeyL2 } from '../src/runtime/valkey';
import { Attr, checksum, CURRENT, l2ReaderAccessRules, SCHEMA_VERSION, STATUS_ACTIVE, templateVariables } from '../src/schema';
import { toItem } from '../src/schema/ddb-codec';
import { Env } from '../src/schema/env';
import { LAMBDA_BUNDLE_OPTIONS } from '../test/support/lambda-bundle';
import { RedisServer, startRedisServer } from '../test/support/redis-server';

const ROUNDS = 15;
const OPS = 200_000;
const MISSES = 1500;
const MISS_ROUNDS = 9;
const COLD_SAMPLES = Number(process.env.COLD_SAMPLES ?? 15);
const TABLE = 'prompts';
/** The cache user of the serverless stand-in (IAM auth). */
const SERVERLESS_USER = 'prompt-reader';
/** `READER_COST_ONLY=cold` runs parts 3 and 4 (fresh processes) alone; `READER_COST_ONLY=miss`, part 2 alone. */
const ONLY = process.env.READER_COST_ONLY;
const LAYER = path.resolve(__dirname, '../assets/layer/nodejs/nodejs/node_modules');

/** A realistic pointer item (TEXT, ~300 bytes of template) with a placeholder id the canned server replaces. */
function pointerItem(): Record<string, unknown> {
  const text = 'You are a support assistant. Summarise the ticket below in three sentences for {{audience}}.\n\n{{ticket}}\n'.repeat(3);
  const content = { template_type: 'TEXT', text, input_variables: templateVariables(text) };
  return toItem({
    ...content,
    [Attr.promptId]: '__ID__',
    [Attr.versionNumber]: 3,
    [Attr.checksum]: checksum(content as never),
    [Attr.source]: 'bench',
    [Attr.sourceVersion]: '3',
    [Attr.syncedAt]: new Date().toISOString(),
    [Attr.schemaVersion]: SCHEMA_VERSION,
    [Attr.version]: CURRENT,
    [Attr.status]: STATUS_ACTIVE,
    [Attr.latestVersionNumber]: 3,
    [Attr.revision]: 1,
  });
}

/** The canned DynamoDB: answers every key but `#catalog` with the pointer item under the id asked for. */
const CANNED_SERVER = `
const http = require('node:http');
const template = process.env.ITEM;
const item = (id) => JSON.parse(template.replace('"__ID__"', JSON.stringify(id)));
http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const input = JSON.parse(body);
    const target = String(req.headers['x-amz-target'] || '');
    let out = {};
    if (target.endsWith('.GetItem')) {
      const id = input.Key.prompt_id.S;
      out = id.startsWith('#') ? {} : { Item: item(id) };
    } else if (target.endsWith('.BatchGetItem')) {
      const [table, { Keys }] = Object.entries(input.RequestItems)[0];
      out = { Responses: { [table]: Keys.filter((k) => !k.prompt_id.S.startsWith('#')).map((k) => item(k.prompt_id.S)) }, UnprocessedKeys: {} };
    }
    const text = JSON.stringify(out);
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(String(this.address().port) + '\\n'); });
`;

async function startCanned(): Promise<{ endpoint: string; process: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', CANNED_SERVER], { env: { ...process.env, ITEM: JSON.stringify(pointerItem()) }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', () => reject(new Error('canned server exited')));
  });
  return { endpoint: `http://127.0.0.1:${port}`, process: child };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ids = Array.from({ length: 8 }, (_, i) => `prompt-${i}`);

// ---- 1. cached reads ----
const floorCache = new Map<string, { value: unknown; expiresAt: number }>();
async function floorGet(key: string): Promise<unknown> {
  const entry = floorCache.get(key);
  if (entry !== undefined && entry.expiresAt > Date.now()) return entry.value;
  throw new Error(`floor miss ${key}`);
}
async function floorLoop(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await floorGet(ids[i % 8]);
}
let off: PromptClient;
let on: PromptClient;
async function offLoop(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await off.getPrompt(ids[i % 8]);
}
async function onLoop(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await on.getPrompt(ids[i % 8]);
}

async function cachedReads(rows: string[]): Promise<void> {
  for (const id of ids) floorCache.set(id, { value: id, expiresAt: Date.now() + 3_600_000 });
  await preload(off, ids);
  await preload(on, ids);
  if (on.stats().l2Misses + on.stats().l2Hits === 0) throw new Error('the L2 was not consulted: is the cache on?');
  const loops: Record<string, (n: number) => Promise<void>> = {
    'floor: awaited `Map.get` + expiry check': floorLoop,
    '`getPrompt` (CURRENT), L2 off': offLoop,
    '`getPrompt` (CURRENT), L2 on (epoch watch running)': onLoop,
  };
  const ns: Record<string, number[]> = {};
  const ratios: Record<string, number[]> = {};
  for (const fn of Object.values(loops)) await fn(OPS); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const names = Object.keys(loops).sort(() => Math.random() - 0.5);
    const round: Record<string, number> = {};
    for (const name of names) {
      const t0 = process.hrtime.bigint();
      await loops[name](OPS);
      round[name] = Number(process.hrtime.bigint() - t0) / OPS;
      (ns[name] ??= []).push(round[name]);
    }
    const floor = round['floor: awaited `Map.get` + expiry check'];
    for (const name of names) (ratios[name] ??= []).push(round[name] / floor);
  }
  rows.push('| cached read | ns/op (median) | × floor (median of rounds) |', '| --- | ---: | ---: |');
  for (const name of Object.keys(loops)) rows.push(`| ${name} | ${median(ns[name]).toFixed(0)} | ${median(ratios[name]).toFixed(2)}× |`);
}

// ---- 2. miss CPU ----
/**
 * The reader as deployed: `src/runtime` bundled and minified as `NodejsFunction` bundles it (`@aws-sdk/*` external),
 * loaded from a file outside the repository. (Run from the TypeScript sources through the test loader instead, every
 * cross-module access goes through a getter the bundle does not have: +~20 µs per miss.)
 */
function deployedRuntime(): typeof import('../src/runtime') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reader-cost-runtime-'));
  const file = path.join(dir, 'runtime.js');
  buildSync({
    entryPoints: [path.resolve(__dirname, '../src/runtime/index.ts')],
    ...LAMBDA_BUNDLE_OPTIONS,
    outfile: file,
  });
  // Beside it only this project's node_modules (for @aws-sdk/*, as the Lambda runtime provides it).
  fs.symlinkSync(path.resolve(__dirname, '../node_modules'), path.join(dir, 'node_modules'));
  const runtime = createRequire(file)(file) as typeof import('../src/runtime');
  fs.rmSync(dir, { recursive: true, force: true });
  return runtime;
}

/**
 * Misses and bare `GetItemCommand`s alternate call by call, each timed with `process.cpuUsage`, so a burst of load
 * from other processes on the host falls on both alike (rounds of 1,500 of each timed as blocks spread 21–188 µs).
 */
async function missCpu(rows: string[], endpoint: string): Promise<void> {
  const { PromptClient: Deployed, cacheTier } = deployedRuntime();
  const bare = new DynamoDBClient({ endpoint, maxAttempts: 1 });
  // Steady-state misses: 8 prompts read over and over, each read a miss (maxAgeSeconds 0, no stale serving), so the
  // heap stays flat. (With a new id per read, as before, the cache grew to 15,000 entries and the major collections
  // it caused landed in either column at random: rounds ranged from -41 to 143 µs.)
  const client = new Deployed({
    dynamoDBClient: new DynamoDBClient({ endpoint, maxAttempts: 1 }), tableName: TABLE, maxAgeSeconds: 0, staleWhileRevalidateSeconds: 0,
  });
  // The same reader with the cache tier over the built-in adapter and its cache down (a host that accepts connections
  // and never answers): after its first read the breaker is open, so every read skips the L2 at once and its probe
  // looks for the cache in the background (a PING, a new connection) every 0.2–0.6 s. What a read costs during an outage.
  const silent = net.createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const adapter = createValkeyL2({ host: '127.0.0.1', port: (silent.address() as net.AddressInfo).port, tls: false, cluster: false });
  const down = new Deployed({
    dynamoDBClient: new DynamoDBClient({ endpoint, maxAttempts: 1 }),
    tableName: TABLE,
    maxAgeSeconds: 0,
    staleWhileRevalidateSeconds: 0,
    l2: cacheTier(adapter),
  });
  let n = 0;
  const id = () => `miss-${n++ % 8}`;
  const bareGet = () => bare.send(new GetItemCommand({ TableName: TABLE, Key: { prompt_id: { S: id() }, version: { S: CURRENT } } }));
  for (let i = 0; i < 1000; i++) { await client.getPrompt(id()); await down.getPrompt(id()); await bareGet(); } // warm-up (and the catalog probe)
  if (!adapter.isTripped) throw new Error('the breaker is not open: is the cache host silent?');
  const ours: number[] = [];
  const sdk: number[] = [];
  const own: number[] = [];
  const outage: number[] = [];
  const outageOwn: number[] = [];
  const cpu = (u: NodeJS.CpuUsage) => u.user + u.system;
  const misses = client.stats().misses;
  const probes = adapter.probes;
  const startedAt = performance.now();
  for (let r = 0; r < MISS_ROUNDS; r++) {
    let o = 0;
    let d = 0;
    let b = 0;
    for (let i = 0; i < MISSES; i++) {
      const t0 = cpu(process.cpuUsage());
      await client.getPrompt(id());
      const t1 = cpu(process.cpuUsage());
      await down.getPrompt(id());
      const t2 = cpu(process.cpuUsage());
      await bareGet();
      const t3 = cpu(process.cpuUsage());
      o += t1 - t0;
      d += t2 - t1;
      b += t3 - t2;
    }
    ours.push(o / MISSES);
    sdk.push(b / MISSES);
    own.push((o - b) / MISSES);
    outage.push(d / MISSES);
    outageOwn.push((d - o) / MISSES);
  }
  const seconds = (performance.now() - startedAt) / 1000;
  if (client.stats().misses - misses !== MISS_ROUNDS * MISSES) throw new Error(`not every read was a miss: ${JSON.stringify(client.stats())}`);
  if (!adapter.isTripped) throw new Error('the cache answered: the outage rows would be wrong');
  rows.push('', `| a miss (canned HTTP answer), the bundled reader, ${MISS_ROUNDS} rounds × ${MISSES} alternated call by call | CPU µs per read (median of rounds) |`, '| --- | ---: |');
  rows.push(`| bare \`DynamoDBClient\` \`GetItemCommand\` (what the SDK costs) | ${median(sdk).toFixed(0)} |`);
  rows.push(`| \`PromptClient.getPrompt\`, L2 off | ${median(ours).toFixed(0)} |`);
  rows.push(`| the miss's own CPU: \`getPrompt\` − bare, per round | **${median(own).toFixed(0)}** (rounds: ${Math.min(...own).toFixed(0)} to ${Math.max(...own).toFixed(0)}) |`);
  rows.push(`| \`PromptClient.getPrompt\` with the cache tier, its cache down (breaker open; ${adapter.probes - probes} probes in ${seconds.toFixed(0)} s) | ${median(outage).toFixed(0)} |`);
  rows.push(`| what the open breaker adds to a read: cache down − L2 off, per round | **${median(outageOwn).toFixed(0)}** (rounds: ${Math.min(...outageOwn).toFixed(0)} to ${Math.max(...outageOwn).toFixed(0)}) |`);
  await Promise.all([client.close(), down.close()]);
  silent.close();
}

// ---- 3 and 4: fresh processes ----
const READER = `
import { preload, PromptClient } from ${JSON.stringify(path.resolve(__dirname, '../src/runtime'))};
const t0 = performance.now();
const prompts = new PromptClient();
const constructMs = performance.now() - t0;
preload(prompts, ['summarize']).then(() => prompts.getPrompt('summarize')).then((p) => {
  if (!p.id) throw new Error('no prompt');
  const s = prompts.stats();
  process.stdout.write(JSON.stringify({ sinceStart: performance.now(), imported: t0, constructMs, l2: s.l2Hits + s.l2Misses, l2Unavailable: s.l2Unavailable }));
  prompts.close().then(() => process.exit(0));
});`;
const BARE = `
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
const client = new DynamoDBClient({ maxAttempts: 1 });
client.send(new GetItemCommand({ TableName: process.env.${Env.tableName}, Key: { prompt_id: { S: 'summarize' }, version: { S: 'CURRENT' } } })).then((out) => {
  if (!out.Item) throw new Error('no item');
  process.stdout.write(JSON.stringify({ sinceStart: performance.now() }));
  process.exit(0);
});`;

async function bundle(dir: string, name: string, contents: string): Promise<{ file: string; bytes: number }> {
  const file = path.join(dir, `${name}.js`);
  await build({
    stdin: { contents, resolveDir: __dirname, sourcefile: `${name}.ts`, loader: 'ts' },
    ...LAMBDA_BUNDLE_OPTIONS,
    outfile: file,
  });
  return { file, bytes: fs.statSync(file).size };
}

interface Sample {
  readonly sinceStart: number;
  readonly imported?: number;
  readonly constructMs?: number;
  readonly l2?: number;
  readonly l2Unavailable?: number;
}

function run(file: string, env: NodeJS.ProcessEnv): Sample {
  const out = spawnSync(process.execPath, [file], { env, encoding: 'utf8', timeout: 30_000 });
  if (out.status !== 0) throw new Error(`${file}: ${out.stderr}`);
  return JSON.parse(out.stdout);
}

async function freshProcesses(rows: string[], endpoint: string, redisPort: number, serverless: RedisServer): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reader-cost-'));
  // The bundles sit outside the repository: only @aws-sdk/* is found, from this project's node_modules by NODE_PATH.
  const sdk = path.resolve(__dirname, '../node_modules');
  const reader = await bundle(dir, 'reader', READER);
  const bare = await bundle(dir, 'bare', BARE);
  const base = {
    PATH: process.env.PATH,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'x',
    AWS_SECRET_ACCESS_KEY: 'x',
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    [Env.tableName]: TABLE,
    NODE_PATH: sdk,
  };
  const cacheEnv = {
    ...base,
    NODE_PATH: `${LAYER}${path.delimiter}${sdk}`,
    [Env.cacheEndpoint]: `127.0.0.1:${redisPort}`,
    [Env.cacheTls]: 'false',
    [Env.cacheAuth]: 'none',
    [Env.cacheCluster]: 'false',
  };
  // The cache as `addReader` reaches a serverless cache: cluster mode, TLS, IAM auth (a user under the reader's access
  // rules that takes any password, since redis-server cannot check an IAM token: the reader signs and sends a real one).
  const serverlessEnv = {
    ...cacheEnv,
    [Env.cacheEndpoint]: `localhost:${serverless.port}`,
    [Env.cacheTls]: 'true',
    [Env.cacheAuth]: 'iam',
    [Env.cacheUser]: SERVERLESS_USER,
    [Env.cacheName]: 'prompts-cache',
    [Env.cacheCluster]: 'true',
    NODE_EXTRA_CA_CERTS: path.join(serverless.certDir!, 'ca.crt'),
  };
  if (!fs.existsSync(path.join(LAYER, 'redis'))) throw new Error(`${LAYER}/redis is missing: run npx projen bundle first`);
  const cold = { bare: [] as number[], reader: [] as number[], cache: [] as number[], serverless: [] as number[] };
  const ratio = { reader: [] as number[], cache: [] as number[], serverless: [] as number[] };
  const constructMs = { reader: [] as number[], cache: [] as number[] };
  const variants: [NodeJS.ProcessEnv, string][] = [[base, bare.file], [base, reader.file], [cacheEnv, reader.file], [serverlessEnv, reader.file]];
  for (const [env, file] of variants) run(file, env); // warm the file cache
  for (let i = 0; i < COLD_SAMPLES; i++) {
    const order = [0, 1, 2, 3].sort(() => Math.random() - 0.5);
    const got: Sample[] = [];
    for (const which of order) {
      got[which] = run(variants[which][1], variants[which][0]);
      if (which >= 2 && (!got[which].l2 || got[which].l2Unavailable)) throw new Error(`the cache was not used: ${JSON.stringify(got[which])}`);
    }
    cold.bare.push(got[0].sinceStart); cold.reader.push(got[1].sinceStart);
    cold.cache.push(got[2].sinceStart); cold.serverless.push(got[3].sinceStart);
    ratio.reader.push(got[1].sinceStart / got[0].sinceStart); ratio.cache.push(got[2].sinceStart / got[1].sinceStart);
    ratio.serverless.push(got[3].sinceStart / got[1].sinceStart);
    constructMs.reader.push(got[1].constructMs!); constructMs.cache.push(got[2].constructMs!);
  }
  rows.push('', `| process start → first item (fresh processes, ${COLD_SAMPLES} interleaved samples) | bundle (minified) | ms (median) | ratio (median of samples) |`,
    '| --- | ---: | ---: | ---: |');
  rows.push(`| bare \`DynamoDBClient\` + \`GetItemCommand\` | ${bare.bytes} B | ${median(cold.bare).toFixed(0)} | 1.00× |`);
  rows.push(`| reader, cache off: import, \`new PromptClient()\`, \`preload\`, \`getPrompt\` | ${reader.bytes} B | ${median(cold.reader).toFixed(0)} | **${median(ratio.reader).toFixed(2)}×** bare |`);
  rows.push(`| same reader, cache on (node-redis from the layer file) | same | ${median(cold.cache).toFixed(0)} | **${median(ratio.cache).toFixed(2)}×** cache off |`);
  rows.push('| of which `new PromptClient()`: cache off / on (on loads the adapter and node-redis from the layer) | | '
    + `${median(constructMs.reader).toFixed(1)} / ${median(constructMs.cache).toFixed(1)} | |`);
  rows.push(`| same reader, cache on as a serverless cache is reached (cluster mode, TLS, IAM auth) | same | ${median(cold.serverless).toFixed(0)} | `
    + `**${median(ratio.serverless).toFixed(2)}×** cache off |`);
  await nodeRedisModule(rows, dir);
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * The layer's node-redis file on its own, in fresh processes: `require` it, then `createClient` and `createCluster`
 * (neither connects), beside the whole `redis` package bundled into one file as the layer did before (esbuild, minified,
 * `keepNames`), so the module's cost has a before and after from one run. Node's own modules it needs (`tls`, `net`,
 * `crypto`, …) are counted; in a reader most of them are loaded already by the AWS SDK.
 */
async function nodeRedisModule(rows: string[], dir: string): Promise<void> {
  const layerFile = path.join(LAYER, 'redis', 'index.js');
  const fullFile = path.join(dir, 'redis-full', 'index.js');
  await build({
    entryPoints: [require.resolve('redis')],
    outfile: fullFile,
    bundle: true,
    minify: true,
    keepNames: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const probe = path.join(dir, 'redis-probe.js');
  fs.writeFileSync(probe, [
    'const t0 = performance.now();',
    'const redis = require(process.argv[2]);',
    'const t1 = performance.now();',
    "redis.createClient({ socket: { host: '127.0.0.1', port: 1 } });",
    'const t2 = performance.now();',
    "redis.createCluster({ rootNodes: [{ socket: { host: '127.0.0.1', port: 1 } }] });",
    'process.stdout.write(JSON.stringify({ load: t1 - t0, client: t2 - t1, cluster: performance.now() - t2 }));',
  ].join('\n'));
  const measure = (file: string) => {
    const out = spawnSync(process.execPath, [probe, file], { encoding: 'utf8', timeout: 30_000 });
    if (out.status !== 0) throw new Error(`${file}: ${out.stderr}`);
    return JSON.parse(out.stdout) as { load: number; client: number; cluster: number };
  };
  const samples = { layer: [] as ReturnType<typeof measure>[], full: [] as ReturnType<typeof measure>[] };
  measure(layerFile); measure(fullFile); // warm the file cache
  for (let i = 0; i < COLD_SAMPLES; i++) {
    const order = i % 2 === 0 ? ['layer', 'full'] as const : ['full', 'layer'] as const;
    for (const which of order) samples[which].push(measure(which === 'layer' ? layerFile : fullFile));
  }
  rows.push('', `| node-redis in one file (fresh processes, ${COLD_SAMPLES} interleaved samples) | file | \`require\` ms | \`createClient\` ms | \`createCluster\` ms |`,
    '| --- | ---: | ---: | ---: | ---: |');
  for (const [name, file, got] of [
    ['the whole `redis` package (as the layer was built before)', fullFile, samples.full],
    ['the reader layer\'s file (`@redis/client`, the adapter\'s commands)', layerFile, samples.layer],
  ] as const) {
    rows.push(`| ${name} | ${fs.statSync(file).size} B | ${median(got.map((g) => g.load)).toFixed(1)} | ${median(got.map((g) => g.client)).toFixed(1)} | `
      + `${median(got.map((g) => g.cluster)).toFixed(1)} |`);
  }
}

async function main(): Promise<void> {
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'x';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'x';
  const canned = await startCanned();
  const redis = await startRedisServer();
  const serverless = await startRedisServer({
    tls: true, cluster: true, users: [{ name: SERVERLESS_USER, password: 'unused', rules: `nopass ${l2ReaderAccessRules(TABLE)}` }],
  });
  const rows: string[] = [`Node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`, ''];
  try {
    off = new PromptClient({ dynamoDBClient: new DynamoDBClient({ endpoint: canned.endpoint, maxAttempts: 1 }), tableName: TABLE });
    // The environment's cache serves the environment's table only (as addReader sets both).
    process.env[Env.tableName] = TABLE;
    process.env[Env.cacheEndpoint] = `127.0.0.1:${redis.port}`;
    process.env[Env.cacheTls] = 'false';
    process.env[Env.cacheAuth] = 'none';
    process.env[Env.cacheCluster] = 'false';
    on = new PromptClient({ dynamoDBClient: new DynamoDBClient({ endpoint: canned.endpoint, maxAttempts: 1 }), tableName: TABLE });
    for (const name of [Env.tableName, Env.cacheEndpoint, Env.cacheTls, Env.cacheAuth, Env.cacheCluster]) delete process.env[name];
    if (ONLY !== 'cold') {
      if (ONLY !== 'miss') await cachedReads(rows);
      await missCpu(rows, canned.endpoint);
    }
    if (ONLY !== 'miss') await freshProcesses(rows, canned.endpoint, redis.port, serverless);
  } finally {
    await off?.close();
    await on?.close();
    canned.process.kill();
    await redis.stop();
    await serverless.stop();
  }
  console.log(rows.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
