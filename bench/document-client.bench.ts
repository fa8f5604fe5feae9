/**
 * The library's attribute codec (src/schema/ddb-codec.ts) vs `@aws-sdk/lib-dynamodb`'s `DynamoDBDocumentClient`
 * for the reader, side by side in one run (docs/adr/0004-document-client.md):
 *
 * 1. round trips of the wire contract's odd values through DynamoDB Local (big numbers, sets, binary, empty
 *    strings, `undefined`), written and read each way;
 * 2. the size of a NodejsFunction-style bundle of a minimal reader (esbuild, `@aws-sdk/*` external, minified);
 * 3. cold init of that reader in a fresh Node.js process: load the bundle (and the SDK modules it requires),
 *    construct the client, first `GetItem` against DynamoDB Local;
 * 4. a miss's own CPU: sequential `GetItem`s of a realistic pointer item answered by a canned HTTP server in
 *    another process, so only the client's work is counted (`process.cpuUsage`).
 *
 * `@aws-sdk/lib-dynamodb` is not a dependency of this project. Install it (with the same client version as
 * the project's) into a folder of its own and name that folder:
 *
 *   mkdir -p /tmp/ddbdoc && npm i --prefix /tmp/ddbdoc @aws-sdk/lib-dynamodb@3.1169.0 @aws-sdk/client-dynamodb@3.1169.0
 *   LIB_DYNAMODB_DIR=/tmp/ddbdoc npx tsx bench/document-client.bench.ts
 *
 * Both readers load `@aws-sdk/client-dynamodb` from that folder, so they differ only in the codec.
 * Prints a markdown report. Takes about a minute on 2 cores.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { build } from 'esbuild';
import { toItem } from '../src/schema/ddb-codec';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';

const LIB_DIR = process.env.LIB_DYNAMODB_DIR;
/** Loads the bundles built here and the SDK from LIB_DIR at run time (they are not this project's modules). */
const load = createRequire(__filename);
const COLD_SAMPLES = Number(process.env.COLD_SAMPLES ?? 40);
const MISS_ROUNDS = 11;
const MISSES_PER_ROUND = 1500;

/** The document client's options that come closest to the codec (the ADR says where they still differ). */
const DOC_OPTIONS_SOURCE = `{
  marshallOptions: { convertClassInstanceToMap: true, removeUndefinedValues: true, allowImpreciseNumbers: true },
  unmarshallOptions: { wrapNumbers: (value) => Number(value) },
}`;

const CODEC_ENTRY = `
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { fromItem, toItem } from ${JSON.stringify(path.resolve(__dirname, '../src/schema/ddb-codec'))};
export function makeReader(config) {
  const client = new DynamoDBClient(config);
  return {
    get: async (table, key) => { const out = await client.send(new GetItemCommand({ TableName: table, Key: toItem(key) })); return out.Item && fromItem(out.Item); },
    put: async (table, item) => { await client.send(new PutItemCommand({ TableName: table, Item: toItem(item) })); },
    raw: client,
  };
}`;

const DOC_ENTRY = `
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
export function makeReader(config) {
  const raw = new DynamoDBClient(config);
  const client = DynamoDBDocumentClient.from(raw, ${DOC_OPTIONS_SOURCE});
  return {
    get: async (table, key) => (await client.send(new GetCommand({ TableName: table, Key: key }))).Item,
    put: async (table, item) => { await client.send(new PutCommand({ TableName: table, Item: item })); },
    raw,
  };
}`;

/** Runs in a fresh process: load the bundle, construct, first GetItem; prints the three times in ms. */
const COLD_RUNNER = `
const t0 = performance.now();
const { makeReader } = require(process.argv[2]);
const t1 = performance.now();
const reader = makeReader({ endpoint: process.argv[3], maxAttempts: 1 });
reader.get(process.argv[4], { prompt_id: 'summarize', version: 'CURRENT' }).then((item) => {
  const t2 = performance.now();
  if (!item) throw new Error('no item');
  process.stdout.write(JSON.stringify({ load: t1 - t0, firstRead: t2 - t1, sinceStart: t2 }));
});`;

interface Reader {
  raw: { send(command: unknown): Promise<any>; destroy(): void };
  get(table: string, key: Record<string, unknown>): Promise<Record<string, unknown> | undefined>;
  put(table: string, item: Record<string, unknown>): Promise<void>;
}
type MakeReader = (config: Record<string, unknown>) => Reader;

const PROMPT = {
  prompt_id: 'summarize',
  version: 'CURRENT',
  version_number: 7,
  latest_version_number: 7,
  checksum: `sha256:${'ab'.repeat(32)}`,
  source_checksum: `sha256:${'cd'.repeat(32)}`,
  status: 'ACTIVE',
  template_type: 'CHAT',
  system: [{ text: 'You are a careful assistant. Answer in the language of the question.' }],
  messages: Array.from({ length: 4 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: [{ text: `Turn ${i}: {{document}} `.repeat(20) }] })),
  input_variables: [{ name: 'document' }, { name: 'audience' }],
  model_id: 'anthropic.claude-3-haiku-20240307-v1:0',
  inference_config: { text: { maxTokens: 512, temperature: 0.2, topP: 0.9, stopSequences: ['\n\nHuman:'] } },
  source: 'bedrock',
  source_version: '3',
  synced_at: '2026-12-01T10:00:00.000Z',
  revision: 12,
  schema_version: 1,
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
function p90(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))];
}
const pct = (ours: number, theirs: number) => `${theirs >= ours ? '+' : ''}${((theirs / ours - 1) * 100).toFixed(1)} %`;

async function bundle(name: string, entry: string, outDir: string): Promise<{ file: string; bytes: number }> {
  const entryFile = path.join(outDir, `${name}.entry.ts`);
  fs.writeFileSync(entryFile, entry);
  const file = path.join(outDir, `${name}.cjs`);
  await build({
    entryPoints: [entryFile],
    outfile: file,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    minify: true,
    external: ['@aws-sdk/*'],
    logLevel: 'error',
  });
  return { file, bytes: fs.statSync(file).size };
}

/** A value as JSON with the types JSON loses spelled out (BigInt, Set, Uint8Array, undefined). */
function show(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (typeof v === 'bigint') return `BigInt(${v})`;
    if (v instanceof Set) return { Set: [...v] };
    if (v instanceof Uint8Array) return { bytes: [...v] };
    if (v === undefined) return 'undefined';
    return v;
  });
}

async function roundTrips(readers: Record<string, Reader>, table: string): Promise<string[]> {
  const cases: { name: string; value?: unknown; raw?: AttributeValue }[] = [
    { name: 'numbers above 2^53 (1e100, 2^60)', value: { a: 1e100, b: 2 ** 60 } },
    { name: 'beyond DynamoDB\'s range (1e300)', value: { a: 1e300 } },
    { name: 'float and negative zero', value: { a: 0.1, b: -0 } },
    { name: 'binary', value: new Uint8Array([0, 1, 255]) },
    { name: 'empty string, top level and nested', value: { s: '', l: [''] } },
    { name: 'undefined map member', value: { a: 1, b: undefined } },
    { name: 'undefined list member', value: ['a', undefined, 'c'] },
    { name: 'long integer N written by hand', raw: { N: '123456789012345678901' } },
    { name: 'string set written by hand', raw: { SS: ['a', 'b'] } },
    { name: 'number set written by hand', raw: { NS: ['1', '2'] } },
  ];
  const names = Object.keys(readers);
  const rows = [
    `| value | ${names.map((n) => `written and read by ${n}`).join(' | ')} | same? |`,
    `| --- | ${names.map(() => '---').join(' | ')} | --- |`,
  ];
  for (const [i, c] of cases.entries()) {
    const results: string[] = [];
    for (const name of names) {
      const key = { prompt_id: `case-${i}-${name}`, version: 'CURRENT' };
      try {
        if (c.raw) {
          await readers[name].raw.send(new (sdk().PutItemCommand)({
            TableName: table, Item: { prompt_id: { S: key.prompt_id }, version: { S: 'CURRENT' }, v: c.raw },
          }));
        } else {
          await readers[name].put(table, { ...key, v: c.value });
        }
        const item = await readers[name].get(table, key);
        results.push(`\`${show(item?.v)}\``);
      } catch (err) {
        results.push(`throws: ${(err as Error).message.slice(0, 70)}`);
      }
    }
    const input = c.raw ? `\`${JSON.stringify(c.raw)}\`` : `\`${show(c.value)}\``;
    rows.push(`| ${c.name}: ${input} | ${results.join(' | ')} | ${results.every((r) => r === results[0]) ? 'yes' : '**no**'} |`);
  }
  return rows;
}

function coldInit(bundles: Record<string, string>, endpoint: string, table: string, runnerFile: string): string[] {
  const times: Record<string, { load: number[]; firstRead: number[]; sinceStart: number[] }> = {};
  for (const name of Object.keys(bundles)) times[name] = { load: [], firstRead: [], sinceStart: [] };
  const env = { ...process.env, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_REGION: 'us-east-1', AWS_EC2_METADATA_DISABLED: 'true', NODE_NO_WARNINGS: '1' };
  for (let i = 0; i < COLD_SAMPLES; i++) {
    const order = i % 2 === 0 ? Object.keys(bundles) : Object.keys(bundles).reverse();
    for (const name of order) {
      const result = spawnSync(process.execPath, [runnerFile, bundles[name], endpoint, table], { env, encoding: 'utf8', timeout: 30_000 });
      if (result.status !== 0) throw new Error(`cold run of ${name} failed: ${result.stderr}`);
      const t = JSON.parse(result.stdout);
      times[name].load.push(t.load);
      times[name].firstRead.push(t.firstRead);
      times[name].sinceStart.push(t.sinceStart);
    }
  }
  const [base, other] = Object.keys(bundles);
  const row = (label: string, key: 'load' | 'firstRead' | 'sinceStart') =>
    `| ${label} | ${median(times[base][key]).toFixed(1)} / ${p90(times[base][key]).toFixed(1)} | ${median(times[other][key]).toFixed(1)} / ${p90(times[other][key]).toFixed(1)} | ${pct(median(times[base][key]), median(times[other][key]))} |`;
  return [
    `| cold init, ${COLD_SAMPLES} fresh processes each, alternating (ms, median / p90) | ${base} | ${other} | ${other} vs ${base} (median) |`,
    '| --- | ---: | ---: | ---: |',
    row('load the bundle (require, SDK modules included)', 'load'),
    row('construct + first GetItem', 'firstRead'),
    row('process start → first item decoded', 'sinceStart'),
  ];
}

/** A canned DynamoDB endpoint in its own process: every request gets the same GetItem answer. */
function startCannedServer(body: string): Promise<{ endpoint: string; child: ChildProcess }> {
  const source = `
const body = ${JSON.stringify(body)};
const server = require('node:http').createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'canned', 'content-length': Buffer.byteLength(body) }).end(body));
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
process.on('SIGTERM', () => process.exit(0));`;
  const child = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('canned server did not start in 10 s')), 10_000);
    child.stdout!.once('data', (d: Buffer) => {
      clearTimeout(timer);
      resolve({ endpoint: `http://127.0.0.1:${d.toString().trim()}`, child });
    });
  });
}

async function missCpu(makers: Record<string, MakeReader>): Promise<string[]> {
  const body = JSON.stringify({ Item: toItem(PROMPT) });
  const server = await startCannedServer(body);
  try {
    const readers = Object.fromEntries(Object.entries(makers).map(([n, make]) => [n, make({ endpoint: server.endpoint, maxAttempts: 1 })]));
    const key = { prompt_id: 'summarize', version: 'CURRENT' };
    const loop = async (reader: Reader, n: number) => {
      for (let i = 0; i < n; i++) if (!(await reader.get('canned', key))) throw new Error('no item');
    };
    for (const reader of Object.values(readers)) await loop(reader, MISSES_PER_ROUND); // warm-up (JIT, sockets)
    const cpu: Record<string, number[]> = Object.fromEntries(Object.keys(readers).map((n) => [n, []]));
    const wall: Record<string, number[]> = Object.fromEntries(Object.keys(readers).map((n) => [n, []]));
    for (let round = 0; round < MISS_ROUNDS; round++) {
      const order = round % 2 === 0 ? Object.keys(readers) : Object.keys(readers).reverse();
      for (const name of order) {
        const started = process.hrtime.bigint();
        const before = process.cpuUsage();
        await loop(readers[name], MISSES_PER_ROUND);
        const used = process.cpuUsage(before);
        wall[name].push(Number(process.hrtime.bigint() - started) / 1000 / MISSES_PER_ROUND);
        cpu[name].push((used.user + used.system) / MISSES_PER_ROUND);
      }
    }
    for (const reader of Object.values(readers)) reader.raw.destroy();
    const [base, other] = Object.keys(readers);
    return [
      `| a miss (GetItem of a ${(body.length / 1024).toFixed(1)} KB pointer, canned HTTP answer), ${MISS_ROUNDS} rounds × ${MISSES_PER_ROUND} | ${base} | ${other} | ${other} vs ${base} |`,
      '| --- | ---: | ---: | ---: |',
      `| CPU of the client process, µs per miss (median of rounds) | ${median(cpu[base]).toFixed(1)} | ${median(cpu[other]).toFixed(1)} | ${pct(median(cpu[base]), median(cpu[other]))} |`,
      `| wall time, µs per miss (median of rounds) | ${median(wall[base]).toFixed(1)} | ${median(wall[other]).toFixed(1)} | ${pct(median(wall[base]), median(wall[other]))} |`,
    ];
  } finally {
    server.child.kill('SIGTERM');
  }
}

async function main(): Promise<void> {
  if (!libDirReady()) return;
  const outDir = fs.mkdtempSync(path.join(LIB_DIR!, 'bench-'));
  const codecBundle = await bundle('codec', CODEC_ENTRY, outDir);
  const docBundle = await bundle('document-client', DOC_ENTRY, outDir);
  const runnerFile = path.join(outDir, 'cold-runner.cjs');
  fs.writeFileSync(runnerFile, COLD_RUNNER);
  const makers: Record<string, MakeReader> = {
    'codec': load(codecBundle.file).makeReader,
    'document client': load(docBundle.file).makeReader,
  };

  const local = await startDynamoDBLocal();
  const report: string[] = [];
  try {
    const readers = Object.fromEntries(Object.entries(makers).map(([n, make]) => [n, make({ endpoint: local.endpoint, maxAttempts: 1 })]));
    const table = 'bench-document-client';
    await readers.codec.raw.send(new (sdk().CreateTableCommand)({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'prompt_id', AttributeType: 'S' }, { AttributeName: 'version', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'prompt_id', KeyType: 'HASH' }, { AttributeName: 'version', KeyType: 'RANGE' }],
    }));
    await readers.codec.put(table, PROMPT);

    report.push('## Round trips through DynamoDB Local', '', ...await roundTrips(readers, table), '');
    report.push('## Reader bundle (esbuild, `@aws-sdk/*` external, minified, CommonJS)', '',
      '| reader | bytes |', '| --- | ---: |',
      `| codec (GetItem + src/schema/ddb-codec.ts) | ${codecBundle.bytes} |`,
      `| document client (GetCommand of @aws-sdk/lib-dynamodb) | ${docBundle.bytes} |`, '');
    report.push('## Cold init', '', ...coldInit({ 'codec': codecBundle.file, 'document client': docBundle.file }, local.endpoint, table, runnerFile), '');
    for (const reader of Object.values(readers)) reader.raw.destroy();
  } finally {
    await local.stop();
  }
  report.push('## Miss CPU', '', ...await missCpu(makers), '');
  const versions = ['client-dynamodb', 'lib-dynamodb', 'util-dynamodb'].map((p) =>
    `@aws-sdk/${p} ${JSON.parse(fs.readFileSync(load.resolve(`@aws-sdk/${p}/package.json`, { paths: [LIB_DIR!] }), 'utf8')).version}`);
  report.push(`Node.js ${process.version}; ${versions.join(', ')}.`);
  fs.rmSync(outDir, { recursive: true, force: true });
  console.log(report.join('\n'));
}

/** `@aws-sdk/client-dynamodb` as both readers load it (from LIB_DYNAMODB_DIR), for the commands the bench sends itself. */
function sdk(): typeof import('@aws-sdk/client-dynamodb') {
  return load(load.resolve('@aws-sdk/client-dynamodb', { paths: [LIB_DIR!] }));
}

function libDirReady(): boolean {
  if (LIB_DIR && fs.existsSync(path.join(LIB_DIR, 'node_modules', '@aws-sdk', 'lib-dynamodb'))) return true;
  console.error('Set LIB_DYNAMODB_DIR to a folder with @aws-sdk/lib-dynamodb and @aws-sdk/client-dynamodb installed (see the header of this file).');
  process.exitCode = 1;
  return false;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
