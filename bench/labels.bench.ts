/**
 * Labels and rollouts benchmark, side by side in one run:
 * 1. cached reads in one process: a labeled read vs a CURRENT read, and a rollout-assigned read (with a stickiness key,
 *    and without one) vs a plain labeled read — interleaved rounds in shuffled order, medians of per-round ratios;
 * 2. propagation across processes with the cache tier: a label move vs a CURRENT change, from the table write to
 *    every reader process serving it (DynamoDB Local with its stream, the bundled invalidation handler, a TLS
 *    cluster-mode redis-server with the library's ACL users, reader processes at the default epoch interval).
 *
 *   npx projen bundle && npx tsx bench/labels.bench.ts [readers=10] [rounds=8]
 *
 * Prints a markdown report (docs/BENCHMARKS.md "Labels and rollouts"). About a minute on 2 cores.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';
import { labels, preload, PromptClient } from '../src/runtime';
import { createStreamTable, poller, startCache, startHandler } from '../test/invalidation/cache-fixture';
import { publish, textContent, writeCatalog } from '../test/runtime/fixtures';
import { rolloutMap, writeLabel } from '../test/runtime/labels-fixtures';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { LambdaProcess, startLambda } from '../test/support/lambda-runner';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

const READERS = Number(process.argv[2] ?? 10);
const ROUNDS = Number(process.argv[3] ?? 8);
const OPS_PER_ROUND = 200_000;
const CACHED_ROUNDS = 15;
const PROMPTS = 8;
const ids = Array.from({ length: PROMPTS }, (_, i) => `prompt-${i}`);
const keys = Array.from({ length: 1024 }, (_, i) => `user-${i}`);

let client: PromptClient;
const LABEL = { label: 'production' };
const ROLLING = { label: 'rolling' };
const keyed = keys.map((stickinessKey) => ({ label: 'rolling', stickinessKey }));

const loops: Record<string, (n: number) => Promise<void>> = {
  'getPrompt(id) — CURRENT': async (n) => { for (let i = 0; i < n; i++) await client.getPrompt(ids[i % PROMPTS]); },
  'getPrompt(id, { label })': async (n) => { for (let i = 0; i < n; i++) await client.getPrompt(ids[i % PROMPTS], LABEL); },
  'getPrompt(id, { label, stickinessKey }) — rollout at 50 %': async (n) => {
    for (let i = 0; i < n; i++) await client.getPrompt(ids[i % PROMPTS], keyed[i % 1024]);
  },
  'getPrompt(id, { label }) — rollout at 50 %, no key': async (n) => { for (let i = 0; i < n; i++) await client.getPrompt(ids[i % PROMPTS], ROLLING); },
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const p = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))];

async function cachedReads(): Promise<string[]> {
  const names = Object.keys(loops);
  for (const name of names) await loops[name](OPS_PER_ROUND);
  const ns: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const ratios: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < CACHED_ROUNDS; round++) {
    const times: Record<string, number> = {};
    for (const name of [...names].sort(() => Math.random() - 0.5)) {
      const started = process.hrtime.bigint();
      await loops[name](OPS_PER_ROUND);
      times[name] = Number(process.hrtime.bigint() - started) / OPS_PER_ROUND;
      ns[name].push(times[name]);
    }
    ratios[names[0]].push(1);
    ratios[names[1]].push(times[names[1]] / times[names[0]]);
    ratios[names[2]].push(times[names[2]] / times[names[1]]);
    ratios[names[3]].push(times[names[3]] / times[names[1]]);
  }
  const against = ['—', '× CURRENT', '× plain labeled read', '× plain labeled read'];
  return [
    `Cached reads, one process, ${PROMPTS} prompts, ${CACHED_ROUNDS} interleaved rounds of ${OPS_PER_ROUND.toLocaleString('en-US')} awaited reads (medians):`,
    '',
    '| read | ns/op | ratio |',
    '|---|---:|---:|',
    ...names.map((name, i) => `| ${name} | ${median(ns[name]).toFixed(0)} | ${i === 0 ? '1.00' : median(ratios[name]).toFixed(2)} ${against[i]} |`),
    '',
    `Table reads during the timed rounds: ${client.stats().misses} misses for ${(client.stats().hits).toLocaleString('en-US')} hits; rollout faults: ${client.stats().rolloutFaults}.`,
  ];
}

async function propagation(): Promise<string[]> {
  const admin = localDynamoDBClient();
  const { table, streamArn } = await createStreamTable(admin);
  const cache = await startCache(table);
  const fn = await startHandler(table, cache);
  const stream = poller(streamArn, fn.invoke, { batchSize: 100, maxRetries: 3 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'labels-bench-'));
  const fleet: LambdaProcess[] = [];
  try {
    const v = (n: number) => textContent(`bench v${n} {{name}}`);
    await publish(admin, table, 'bench', 1, v(1));
    await writeLabel(admin, table, 'bench', 'production', 1, v(1));
    await writeCatalog(admin, table, ['bench']);
    await stream.drain();
    const bundle = path.join(dir, 'index.js');
    await build({ entryPoints: [path.join(__dirname, '..', 'test', 'runtime', 'labels-fleet-reader.ts')], bundle: true, platform: 'node', target: 'node20', outfile: bundle, logLevel: 'error' });
    const env = {
      TABLE_NAME: table,
      DYNAMODB_ENDPOINT: process.env.DYNAMODB_LOCAL_ENDPOINT!,
      CACHE_PORT: String(cache.port),
      CACHE_CA: cache.ca!,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      NODE_PATH: path.resolve(__dirname, '..', 'node_modules'),
    };
    fleet.push(...await Promise.all(Array.from({ length: READERS }, () => startLambda(bundle, env))));
    await Promise.all(fleet.map((r) => r.invoke({ op: 'start', id: 'bench', label: 'production', keys: [] })));
    const samples: Record<'CURRENT' | 'label', number[]> = { CURRENT: [], label: [] };
    const slowest: Record<'CURRENT' | 'label', number[]> = { CURRENT: [], label: [] };
    let version = 1;
    for (let round = 0; round < ROUNDS * 2; round++) {
      const kind = round % 2 === 0 ? 'CURRENT' : 'label';
      version++;
      const watching = fleet.map((r) => r.invoke<{ at: number | null }>({ op: 'watch', id: 'bench', label: kind === 'label' ? 'production' : '', version, timeoutMs: 10_000 }));
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (kind === 'CURRENT') await publish(admin, table, 'bench', version, v(version));
      else await writeLabel(admin, table, 'bench', 'production', version, v(version));
      const written = Date.now();
      await stream.drain();
      const at = (await Promise.all(watching)).map((w) => (w.at === null ? Number.POSITIVE_INFINITY : w.at - written));
      samples[kind].push(...at);
      slowest[kind].push(Math.max(...at));
      if (kind === 'label') await publish(admin, table, 'bench', version, v(version)); // keep version items in step
    }
    const row = (kind: 'CURRENT' | 'label') =>
      `| ${kind === 'CURRENT' ? 'CURRENT changed (sync write)' : 'label moved'} | ${p(samples[kind], 0.5)} | ${p(samples[kind], 0.99)} | ${median(slowest[kind])} | ${Math.max(...slowest[kind])} |`;
    return [
      `Propagation with the cache tier, ${READERS} reader processes (default epoch interval 500 ms), ${ROUNDS} changes of each kind, alternating; ms from the table write to each reader serving it:`,
      '',
      '| change | p50 | p99 | slowest reader, median of rounds | slowest reader, worst round |',
      '|---|---:|---:|---:|---:|',
      row('CURRENT'),
      row('label'),
      '',
      `Label vs CURRENT, p50 ratio: ${(p(samples.label, 0.5) / p(samples.CURRENT, 0.5)).toFixed(2)}; p99 ratio: ${(p(samples.label, 0.99) / p(samples.CURRENT, 0.99)).toFixed(2)}.`,
    ];
  } finally {
    await Promise.all(fleet.map((r) => r.stop()));
    stream.close();
    await fn.stop();
    await cache.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    admin.destroy();
  }
}

async function main(): Promise<void> {
  const local = await startDynamoDBLocal();
  process.env.DYNAMODB_LOCAL_ENDPOINT = local.endpoint;
  try {
    const admin = localDynamoDBClient();
    const table = await createServingTable(admin, 'labels-bench');
    const v1 = textContent('Hello v1 {{name}}');
    const v2 = textContent('Hello v2 {{name}}');
    for (const id of ids) {
      await publish(admin, table, id, 1, v1);
      await publish(admin, table, id, 2, v2);
      await writeLabel(admin, table, id, 'production', 1, v1);
      await writeLabel(admin, table, id, 'rolling', 1, v1, { rollout: rolloutMap('r-bench', 2, v2, 5000) });
    }
    await writeCatalog(admin, table, ids);
    client = new PromptClient({ tableName: table, dynamoDBClient: localDynamoDBClient({ maxAttempts: 1 }), maxAgeSeconds: 3600, features: [labels] });
    await preload(client, ids, { labels: ['production', 'rolling'] });
    const cachedOnly = process.argv[4] === 'cached';
    const report = ['## Labels and rollouts', '', `Node ${process.version}, ${os.cpus().length} cores.`, '', ...await cachedReads(), '', ...(cachedOnly ? [] : await propagation())];
    process.stdout.write(report.join('\n') + '\n');
    admin.destroy();
  } finally {
    await client?.close();
    await local.stop();
  }
}

void main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
