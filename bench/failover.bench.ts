/**
 * Failover from the L2 to the table: what the first table read costs a reader the cache has been
 * serving, when the cache dies. Fresh processes, interleaved, each:
 *
 * - the reader bundled as `NodejsFunction` does (esbuild, minified, `@aws-sdk/*` external), `new PromptClient()` at
 *   the defaults with the cache on (`PROMPT_SERVING_CACHE_ENDPOINT` as `addReader` sets it; plain TCP, no auth,
 *   standalone; node-redis and the adapter from the reader layer's files on `NODE_PATH`, as on Lambda);
 * - the L2 holds the prompt and the catalog (reader fills, fresh), so `preload` reads nothing from the table: the
 *   process has never sent a DynamoDB request;
 * - after 500 ms serving from the L2, the cache dies (the connection is cut and refused from then on, through a
 *   proxy in this process), and the reader reads the prompt again (`invalidate`, then `getPrompt`): the L2 call fails
 *   at once, the table answers (canned HTTP answers from another process, so the figure is the client's own cost,
 *   not DynamoDB's);
 * - with the client's SDK warm-up (the default) and with it switched off (the bench patches it out), in turn.
 *
 * Reports the first table read's wall time and CPU time, median of samples.
 *
 *   npx projen bundle && npx tsx bench/failover.bench.ts [samples=15]
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';
import { createClient } from 'redis';
import { Attr, bloomBuild, bloomParameters, CATALOG_ID, checksum, CURRENT, SCHEMA_VERSION, STATUS_ACTIVE, templateVariables } from '../src/schema';
import { toItem } from '../src/schema/ddb-codec';
import { Env } from '../src/schema/env';
import { encodeFillValue, l2FillKey, toDynamoJson } from '../src/schema/l2';
import { LAMBDA_BUNDLE_OPTIONS } from '../test/support/lambda-bundle';
import { startRedisServer } from '../test/support/redis-server';

const SAMPLES = Number(process.argv[2] ?? 15);
const TABLE = 'prompts';
const ID = 'summarize';
const LAYER = path.resolve(__dirname, '../assets/layer/nodejs/nodejs/node_modules');

function pointer(): Record<string, any> {
  const text = 'You are a support assistant. Summarise the ticket below in three sentences for {{audience}}.\n\n{{ticket}}\n'.repeat(3);
  const content = { template_type: 'TEXT', text, input_variables: templateVariables(text) };
  return toItem({
    ...content,
    [Attr.promptId]: ID,
    [Attr.version]: CURRENT,
    [Attr.versionNumber]: 3,
    [Attr.checksum]: checksum(content as never),
    [Attr.source]: 'bench',
    [Attr.sourceVersion]: '3',
    [Attr.syncedAt]: new Date().toISOString(),
    [Attr.schemaVersion]: SCHEMA_VERSION,
    [Attr.status]: STATUS_ACTIVE,
    [Attr.latestVersionNumber]: 3,
    [Attr.revision]: 1,
  });
}

function catalog(): Record<string, any> {
  const { bits, hashes } = bloomParameters(1);
  return toItem({
    [Attr.promptId]: CATALOG_ID,
    [Attr.version]: CURRENT,
    [Attr.bloom]: bloomBuild([ID], bits, hashes),
    [Attr.bloomBits]: bits,
    [Attr.bloomHashes]: hashes,
    [Attr.count]: 1,
    [Attr.revision]: 1,
  });
}

/** The canned DynamoDB: answers the prompt's `GetItem` with its pointer item, and the catalog. */
const CANNED_SERVER = `
const http = require('node:http');
const items = JSON.parse(process.env.ITEMS);
http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const input = JSON.parse(body);
    const target = String(req.headers['x-amz-target'] || '');
    let out = {};
    if (target.endsWith('.GetItem')) out = items[input.Key.prompt_id.S] ? { Item: items[input.Key.prompt_id.S] } : {};
    else if (target.endsWith('.BatchGetItem')) {
      const [table, { Keys }] = Object.entries(input.RequestItems)[0];
      out = { Responses: { [table]: Keys.map((k) => items[k.prompt_id.S]).filter(Boolean) }, UnprocessedKeys: {} };
    }
    const text = JSON.stringify(out);
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(String(this.address().port) + '\\n'); });
`;

/** The reader: served by the L2, then (on "go" from stdin, after the cache died) one read that goes to the table. */
const READER = `
import { preload, PromptClient } from ${JSON.stringify(path.resolve(__dirname, '../src/runtime'))};
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
// The warm-up switched off: every SDK request before the cache dies is refused unsent (the reader's only ones are the
// cache tier's warm-up: it reads nothing from the table before then).
let warmUpOff = process.env.BENCH_WARMUP === 'off';
const send = DynamoDBClient.prototype.send;
DynamoDBClient.prototype.send = function (...args) { return warmUpOff ? Promise.reject(new Error('warm-up off')) : send.apply(this, args); };
const prompts = new PromptClient();
preload(prompts, [${JSON.stringify(ID)}]).then(() => prompts.getPrompt(${JSON.stringify(ID)})).then(async () => {
  const before = prompts.stats();
  if (before.storeReads !== 0 || before.l2Hits === 0) throw new Error('not served by the L2: ' + JSON.stringify(before));
  await new Promise((r) => setTimeout(r, 500));
  process.stdout.write('served\\n');
  process.stdin.once('data', async () => {
    warmUpOff = false;
    prompts.invalidate(${JSON.stringify(ID)});
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const p = await prompts.getPrompt(${JSON.stringify(ID)});
    const ms = performance.now() - t0;
    const c = process.cpuUsage(cpu);
    const after = prompts.stats();
    if (!p.id || after.storeReads !== 1) throw new Error('the read did not go to the table once: ' + JSON.stringify(after));
    process.stdout.write(JSON.stringify({ ms, cpuMs: (c.user + c.system) / 1000 }) + '\\n');
    process.exit(0);
  });
});`;

/** A TCP proxy to the cache that can die: every connection cut, new ones refused. */
async function dyingProxy(port: number): Promise<{ port: number; kill: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) { sockets.add(s); s.on('error', () => undefined); s.on('close', () => sockets.delete(s)); }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    kill: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function sample(file: string, env: NodeJS.ProcessEnv, redisPort: number): Promise<{ ms: number; cpuMs: number }> {
  const proxy = await dyingProxy(redisPort);
  const child: ChildProcess = spawn(process.execPath, [file], {
    env: { ...env, [Env.cacheEndpoint]: `127.0.0.1:${proxy.port}` }, stdio: ['pipe', 'pipe', 'inherit'],
  });
  try {
    const lines = (async function* () {
      let buffer = '';
      for await (const chunk of child.stdout!) {
        buffer += chunk;
        let i: number;
        while ((i = buffer.indexOf('\n')) >= 0) { yield buffer.slice(0, i); buffer = buffer.slice(i + 1); }
      }
    })();
    if ((await lines.next()).value !== 'served') throw new Error('the reader did not start');
    await proxy.kill();
    child.stdin!.write('go\n');
    return JSON.parse((await lines.next()).value as string);
  } finally {
    child.kill();
    await proxy.kill().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(LAYER, 'redis'))) throw new Error(`${LAYER}/redis is missing: run npx projen bundle first`);
  const canned: ChildProcess = spawn(process.execPath, ['-e', CANNED_SERVER], {
    env: { ...process.env, ITEMS: JSON.stringify({ [ID]: pointer(), [CATALOG_ID]: catalog() }) }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const cannedPort = await new Promise<string>((resolve) => canned.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));
  const redis = await startRedisServer();
  const admin = createClient({ socket: { host: '127.0.0.1', port: redis.port } });
  await admin.connect();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'failover-'));
  try {
    const file = path.join(dir, 'reader.js');
    await build({
      stdin: { contents: READER, resolveDir: __dirname, sourcefile: 'reader.ts', loader: 'ts' },
      ...LAMBDA_BUNDLE_OPTIONS,
      outfile: file,
    });
    const env = {
      PATH: process.env.PATH,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'x',
      AWS_SECRET_ACCESS_KEY: 'x',
      AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${cannedPort}`,
      [Env.tableName]: TABLE,
      NODE_PATH: `${LAYER}${path.delimiter}${path.resolve(__dirname, '../node_modules')}`,
      [Env.cacheTls]: 'false',
      [Env.cacheAuth]: 'none',
      [Env.cacheCluster]: 'false',
    };
    const seed = async () => {
      for (const item of [pointer(), catalog()]) {
        const value = encodeFillValue({ inc: null, fetchedAt: Date.now(), item: toDynamoJson(item) });
        await admin.set(l2FillKey(TABLE, item[Attr.promptId].S, CURRENT), value, { EX: 60 });
      }
    };
    const results = { on: [] as { ms: number; cpuMs: number }[], off: [] as { ms: number; cpuMs: number }[] };
    for (let i = 0; i < SAMPLES + 1; i++) {
      for (const which of (Math.random() < 0.5 ? ['on', 'off'] : ['off', 'on']) as ('on' | 'off')[]) {
        await seed();
        const r = await sample(file, { ...env, BENCH_WARMUP: which }, redis.port);
        if (i > 0) results[which].push(r); // the first pair warms the file cache
      }
    }
    const rows = [`Node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`, '',
      `| first table read after the cache died (fresh processes, ${SAMPLES} interleaved samples each) | wall ms (median) | CPU ms (median) |`,
      '| --- | ---: | ---: |'];
    for (const which of ['off', 'on'] as const) {
      const label = which === 'on' ? 'with the SDK warm-up while the L2 serves (default)' : 'without the warm-up';
      rows.push(`| ${label} | ${median(results[which].map((r) => r.ms)).toFixed(1)} | ${median(results[which].map((r) => r.cpuMs)).toFixed(1)} |`);
    }
    console.log(rows.join('\n'));
  } finally {
    await admin.quit().catch(() => undefined);
    await redis.stop();
    canned.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
