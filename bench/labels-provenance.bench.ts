/**
 * Labeled reads with provenance: a cached labeled read, a rollout-assigned read with a stickiness key
 * and one without, each against the same read of the client of commit `BASE` (the merge of labels and provenance
 * before their semantics were joined: hits returned the load's copy), side by side in one process, interleaved rounds
 * in shuffled order, medians of the per-round ratios. `onRead` unset, as in production without a hook.
 *
 *   npx tsx bench/labels-provenance.bench.ts
 *
 * `LABELS_BENCH_BASE` picks another baseline commit (its `src/runtime` and `src/schema`, taken with `git archive` into
 * `.tmp/bench-baseline/`). Starts its own DynamoDB Local; prints markdown.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { labels, PromptClient } from '../src/runtime';
import { publish, textContent, writeCatalog } from '../test/runtime/fixtures';
import { rolloutMap, writeLabel } from '../test/runtime/labels-fixtures';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

const BASE = process.env.LABELS_BENCH_BASE ?? '71139a1';
const ROUNDS = 15;
const OPS_PER_ROUND = 200_000;
const ids = Array.from({ length: 8 }, (_, i) => `prompt-${i}`);
const keys = Array.from({ length: 1024 }, (_, i) => `user-${i}`);
const root = path.resolve(__dirname, '..');

type Reader = Pick<PromptClient, 'getPrompt' | 'stats' | 'close'>;

/** The runtime at `BASE`, extracted under .tmp (inside the repository, so its imports resolve). */
function baselineDir(): string {
  const sha = execFileSync('git', ['rev-parse', '--short', BASE], { cwd: root, encoding: 'utf8' }).trim();
  const dir = path.join(root, '.tmp', 'bench-baseline', sha);
  if (!fs.existsSync(path.join(dir, 'src/runtime/index.ts'))) {
    fs.mkdirSync(dir, { recursive: true });
    const archive = execFileSync('git', ['archive', sha, 'src/runtime', 'src/schema'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    execFileSync('tar', ['-x', '-C', dir], { input: archive });
  }
  return dir;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const reads: Record<string, (c: Reader, n: number) => Promise<void>> = {
  'getPrompt(id, { label })': async (c, n) => {
    for (let i = 0; i < n; i++) await c.getPrompt(ids[i % ids.length], { label: 'production' });
  },
  'getPrompt(id, { label, stickinessKey }), rollout at 50 %': async (c, n) => {
    for (let i = 0; i < n; i++) await c.getPrompt(ids[i % ids.length], { label: 'rolling', stickinessKey: keys[i % keys.length] });
  },
  'getPrompt(id, { label }), rollout at 50 %, no key': async (c, n) => {
    for (let i = 0; i < n; i++) await c.getPrompt(ids[i % ids.length], { label: 'rolling' });
  },
};

async function main(): Promise<void> {
  const local = await startDynamoDBLocal();
  try {
    const admin = localDynamoDBClient({}, local.endpoint);
    const table = await createServingTable(admin);
    for (const id of ids) {
      const [v1, v2] = [textContent(`${id} v1 {{name}}`), textContent(`${id} v2 {{name}}`)];
      await publish(admin, table, id, 1, v1);
      await publish(admin, table, id, 2, v2);
      await writeLabel(admin, table, id, 'production', 1, v1);
      await writeLabel(admin, table, id, 'rolling', 1, v1, { rollout: rolloutMap('r-bench', 2, v2, 5000) });
    }
    await writeCatalog(admin, table, ids);
    const baseline = (await import(path.join(baselineDir(), 'src/runtime/index.ts'))) as { PromptClient: new (o: object) => Reader };
    const options = () => ({ tableName: table, dynamoDBClient: localDynamoDBClient({ maxAttempts: 1 }, local.endpoint), maxAgeSeconds: 3600 });
    const clients: Record<string, Reader> = {
      before: new baseline.PromptClient(options()), now: new PromptClient({ ...options(), features: [labels] }),
    };
    const names = Object.keys(reads);
    for (const c of Object.values(clients)) for (const n of names) await reads[n](c, OPS_PER_ROUND); // warm-up
    const ns: Record<string, number[]> = {};
    const ratios: Record<string, number[]> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const t: Record<string, number> = {};
      const order = names.flatMap((n) => ['before', 'now'].map((c) => [n, c] as const)).sort(() => Math.random() - 0.5);
      for (const [n, c] of order) {
        const started = process.hrtime.bigint();
        await reads[n](clients[c], OPS_PER_ROUND);
        t[`${n}/${c}`] = Number(process.hrtime.bigint() - started) / OPS_PER_ROUND;
        (ns[`${n}/${c}`] ??= []).push(t[`${n}/${c}`]);
      }
      for (const n of names) (ratios[n] ??= []).push(t[`${n}/now`] / t[`${n}/before`]);
    }
    console.log(`Node ${process.version}, ${ROUNDS} interleaved rounds of ${OPS_PER_ROUND.toLocaleString('en-US')} cached reads over ${ids.length} ids (medians):\n`);
    console.log(`| cached read | before (commit ${BASE}), ns/op | now, ns/op | now × before |`);
    console.log('|---|---:|---:|---:|');
    for (const n of names) console.log(`| ${n} | ${median(ns[`${n}/before`]).toFixed(0)} | ${median(ns[`${n}/now`]).toFixed(0)} | ${median(ratios[n]).toFixed(2)}× |`);
    const s = clients.now.stats();
    console.log(`\nNow: ${s.misses} misses (all before the timed rounds), ${s.rolloutFaults} rollout faults.`);
    for (const c of Object.values(clients)) await c.close();
    admin.destroy();
  } finally {
    await local.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
