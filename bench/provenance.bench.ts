/**
 * Read provenance: what a cached `getPrompt` costs now that every prompt carries its provenance
 * and the client has an `onRead` hook, side by side in one run with the client as it was before (the runtime of
 * commit `BASE`, taken from git), and what each hook helper adds per read.
 *
 *   node --expose-gc --min-semi-space-size=64 --max-semi-space-size=64 --import tsx bench/provenance.bench.ts
 *
 * Then the same for the Python client (Debian's `/usr/bin/python3` with boto3; before and now loaded side by side in
 * one interpreter, 50,000 reads per round).
 *
 * (`npx tsx bench/provenance.bench.ts` runs the timings alone; the flags let it count bytes allocated per read: with
 * a 64 MB young generation no scavenge runs inside a measured window, and a window a GC did run in is measured again.)
 * `PROVENANCE_BENCH_BASE` picks another baseline commit. Starts its own DynamoDB Local; prints markdown.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { combineReadHooks, emfReadMetrics, logReads, preload, PromptClient } from '../src/runtime';
import { publish, textContent } from '../test/runtime/fixtures';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

/** The last commit before strict rendering and read provenance: "today's" client. */
const BASE = process.env.PROVENANCE_BENCH_BASE ?? '2cc5fe1';
const PROMPTS = 8;
const ids = Array.from({ length: PROMPTS }, (_, i) => `prompt-${i}`);
const OPS_PER_ROUND = 100_000;
const ROUNDS = 15;
const ALLOC_OPS = 50_000;

type Reader = { getPrompt(id: string): Promise<unknown> };

const root = path.resolve(__dirname, '..');

/** Both clients' sources at `BASE`, extracted under .tmp (inside the repository, so the Node one's imports resolve). */
function baselineDir(): string {
  const sha = execFileSync('git', ['rev-parse', '--short', BASE], { cwd: root, encoding: 'utf8' }).trim();
  const dir = path.join(root, '.tmp', 'bench-baseline', sha);
  if (!fs.existsSync(path.join(dir, 'python/base/cdk_prompt_serving_runtime_base/__init__.py'))) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    const archive = execFileSync('git', ['archive', sha, 'src/runtime', 'src/schema', 'python/cdk_prompt_serving_runtime'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    execFileSync('tar', ['-x', '-C', dir], { input: archive });
    // The Python package under another name (its imports are relative), so both load in one interpreter.
    fs.mkdirSync(path.join(dir, 'python/base'), { recursive: true });
    fs.renameSync(path.join(dir, 'python/cdk_prompt_serving_runtime'), path.join(dir, 'python/base/cdk_prompt_serving_runtime_base'));
  }
  return dir;
}

/** The Python client's cached read, before and now, in one interpreter (Debian's python3 with boto3). */
const PYTHON_BENCH = `
import json, os, sys, time, random, statistics
sys.path[:0] = [os.environ["BASE_PY"], os.environ["NOW_PY"]]
import boto3
from cdk_prompt_serving_runtime_base import PromptClient as Before
from cdk_prompt_serving_runtime import PromptClient as Now, emf_read_metrics
ids = json.loads(os.environ["IDS"])
def client(cls, **kw):
    ddb = boto3.client("dynamodb", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1")
    c = cls(table_name=os.environ["TABLE"], dynamodb_client=ddb, max_age_seconds=3600, **kw)
    preload(c, ids)
    return c
emf = emf_read_metrics(write=lambda line: None, flush_interval_seconds=3600)
readers = {"before": client(Before), "now, on_read unset": client(Now), "now, on_read: emf_read_metrics().on_read": client(Now, on_read=emf.on_read)}
n = int(os.environ["OPS"])
def loop(c):
    get = c.get_prompt
    started = time.perf_counter_ns()
    for i in range(n):
        get(ids[i % 8])
    return (time.perf_counter_ns() - started) / n
for c in readers.values(): loop(c)
ns = {k: [] for k in readers}; ratio = {k: [] for k in readers}
for _ in range(int(os.environ["ROUNDS"])):
    order = list(readers); random.shuffle(order)
    t = {k: loop(readers[k]) for k in order}
    for k in readers:
        ns[k].append(t[k]); ratio[k].append(t[k] / t["before"])
print(json.dumps({k: [statistics.median(ns[k]), statistics.median(ratio[k])] for k in readers}))
`;

function pythonRows(endpoint: string, table: string): string[] {
  const dir = baselineDir();
  const run = spawnSync('/usr/bin/python3', ['-c', PYTHON_BENCH], {
    encoding: 'utf8',
    timeout: 600_000,
    env: {
      ...process.env,
      BASE_PY: path.join(dir, 'python/base'),
      NOW_PY: path.join(root, 'python'),
      ENDPOINT: endpoint,
      TABLE: table,
      IDS: JSON.stringify(ids),
      OPS: '50000',
      ROUNDS: String(ROUNDS),
    },
  });
  if (run.status !== 0) return [`(Python part failed: ${run.stderr.trim().split('\n').at(-1)})`];
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, [number, number]>;
  return Object.entries(result).map(([name, [ns, ratio]]) => `| Python: ${name} | ${ns.toFixed(0)} | ${ratio.toFixed(2)}× | |`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Each reader in its own loop (no shared call site). */
function loopOf(reader: Reader): (n: number) => Promise<void> {
  return new Function('reader', 'ids', 'P', `return async function loop(n) {
    for (let i = 0; i < n; i++) await reader.getPrompt(ids[i % P]);
  };`)(reader, ids, PROMPTS) as (n: number) => Promise<void>;
}

async function timeLoop(loop: (n: number) => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  await loop(OPS_PER_ROUND);
  return Number(process.hrtime.bigint() - started) / OPS_PER_ROUND;
}

let gcRuns = 0;
new PerformanceObserver((list) => { gcRuns += list.getEntries().length; }).observe({ entryTypes: ['gc'] });

/** Bytes allocated per read (young generation, no GC inside the window), or undefined without --expose-gc. */
async function bytesPerRead(loop: (n: number) => Promise<void>): Promise<number | undefined> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return undefined;
  const samples: number[] = [];
  for (let attempt = 0; attempt < 20 && samples.length < 5; attempt++) {
    gc();
    await new Promise((r) => setTimeout(r, 20)); // the observer reports this GC before the window opens
    const runs = gcRuns;
    const before = process.memoryUsage().heapUsed;
    await loop(ALLOC_OPS);
    const after = process.memoryUsage().heapUsed;
    await new Promise((r) => setTimeout(r, 20)); // let the observer report a GC that ran inside the window
    if (gcRuns === runs) samples.push((after - before) / ALLOC_OPS);
  }
  return samples.length > 0 ? median(samples) : Number.NaN;
}

async function main(): Promise<void> {
  const local = await startDynamoDBLocal();
  try {
    const admin = localDynamoDBClient({}, local.endpoint);
    const table = await createServingTable(admin, 'provenance-bench');
    for (const id of ids) await publish(admin, table, id, 1, textContent(`Hello {{name}} from ${id}`));
    const options = () => ({ tableName: table, dynamoDBClient: localDynamoDBClient({ maxAttempts: 1 }, local.endpoint), maxAgeSeconds: 3600 });

    const baseline = (await import(path.join(baselineDir(), 'src/runtime/index.ts'))) as { PromptClient: new (o: object) => Reader & { preload(ids: string[]): Promise<void> } };
    const today = new baseline.PromptClient(options());
    const unset = new PromptClient(options());
    const noop = new PromptClient({ ...options(), onRead: () => undefined });
    const emf = emfReadMetrics({ write: () => undefined, flushIntervalSeconds: 3600 });
    const withEmf = new PromptClient({ ...options(), onRead: emf.onRead });
    const lines: string[] = [];
    const withLog = new PromptClient({ ...options(), onRead: logReads({ write: (l) => { lines[0] = l; } }) });
    const all = emfReadMetrics({ write: () => undefined, flushIntervalSeconds: 3600 });
    const withBoth = new PromptClient({ ...options(), onRead: combineReadHooks(all.onRead, logReads({ write: () => undefined })) });
    const readers: Record<string, Reader> = {
      [`before provenance (commit ${BASE})`]: today,
      'now, onRead unset': unset,
      'now, onRead: a no-op function': noop,
      'now, onRead: emfReadMetrics().onRead': withEmf,
      'now, onRead: logReads() (to a no-op writer)': withLog,
      'now, onRead: EMF + log combined': withBoth,
    };
    // The client of BASE still has the method; this one has the module's function.
    for (const r of Object.values(readers)) {
      await (r instanceof PromptClient ? preload(r, ids) : (r as unknown as { preload(ids: string[]): Promise<void> }).preload(ids));
    }
    const names = Object.keys(readers);
    const loops = Object.fromEntries(names.map((n) => [n, loopOf(readers[n])]));
    for (const n of names) await loops[n](OPS_PER_ROUND); // warm-up

    const nsPerOp: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    const ratios: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = [...names].sort(() => Math.random() - 0.5);
      const t: Record<string, number> = {};
      for (const n of order) t[n] = await timeLoop(loops[n]);
      for (const n of names) {
        nsPerOp[n].push(t[n]);
        ratios[n].push(t[n] / t[names[0]]);
      }
    }
    const bytes: Record<string, number | undefined> = {};
    for (const n of names) bytes[n] = await bytesPerRead(loops[n]);

    // One EMF flush (what the helper writes once per interval), timed over many flushes with counts in each.
    const flushes = 2000;
    let written = 0;
    const timed = emfReadMetrics({ write: (l) => { written += l.length; }, flushIntervalSeconds: 3600 });
    const info = { tableName: table, promptId: 'p', version: 1, requestedVersion: undefined, checksum: 'c', source: 'l1' as const, stale: false, ageSeconds: 0, label: undefined, rolloutId: undefined, arm: undefined };
    const started = process.hrtime.bigint();
    for (let i = 0; i < flushes; i++) {
      timed.onRead(info, unset);
      timed.flush();
    }
    const flushUs = Number(process.hrtime.bigint() - started) / flushes / 1000;

    console.log(`Node ${process.version}, ${OPS_PER_ROUND.toLocaleString('en')} cached reads per round over ${PROMPTS} ids, ${ROUNDS} rounds, order shuffled each round.\n`);
    console.log('| cached read | ns/op (median) | × before (median of per-round ratios) | bytes allocated per read |');
    console.log('| --- | ---: | ---: | ---: |');
    for (const n of names) {
      const b = bytes[n];
      console.log(`| ${n} | ${median(nsPerOp[n]).toFixed(0)} | ${median(ratios[n]).toFixed(2)}× | ${b === undefined ? 'n/a (run with --expose-gc)' : Number.isNaN(b) ? 'n/a (a GC ran in every window)' : b.toFixed(1)} |`);
    }
    for (const row of pythonRows(local.endpoint, table)) console.log(row);
    console.log(`\nEMF flush (one line, all seven metrics): ${flushUs.toFixed(1)} µs each, ${Math.round(written / flushes)} bytes; written once per flushIntervalSeconds (default 60).`);
    for (const r of [unset, noop, withEmf, withLog, withBoth]) await r.close();
    admin.destroy();
  } finally {
    await local.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
