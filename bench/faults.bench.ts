/**
 * Fault injection against real parts (DynamoDB Local, the real SyncEngine, the real PromptClient), loopback only:
 *
 * 1. DynamoDB Local SIGKILLed and restarted (same port) under 64 concurrent readers: 64 warmed `PromptClient`s
 *    (maxAge 1 s, stale-while-revalidate 0 so every stale serve is stale-if-error, staleIfError 300 s,
 *    requestTimeoutMs 500) read in a loop; the DynamoDB Local JVM is SIGKILLed, reads go on past maxAge, then
 *    DynamoDB Local is restarted on the same port (in memory: the table is re-created and re-synced with new
 *    content), and reads go on until every client serves every prompt fresh from the restarted table.
 * 2. Two million unknown ids with a flat heap: one client, catalog loaded, 2,000,000 distinct unknown ids
 *    (each rejected with `PromptNotFoundError`), heap after a forced GC every 500k, GetItem calls counted.
 *
 *   npx tsx --expose-gc bench/faults.bench.ts   (plain `npx tsx bench/faults.bench.ts` re-runs itself with it)
 *
 * Prints the figures (copied into docs/RELIABILITY.md). Stops by itself (4-minute watchdog); took about 2 minutes on a busy 2-core host.
 */
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { preload, Prompt, PromptClient, PromptNotFoundError } from '../src/runtime';
import { SyncEngine } from '../src/sync/engine';
import { logGetItemKeys } from '../test/runtime/fixtures';
import { CallCounter } from '../test/support/call-counter';
import { DynamoDBLocal, startDynamoDBLocal } from '../test/support/dynamodb-local';
import { MemorySource, textPrompt } from '../test/support/memory-source';
import { createServingTableNamed, localDynamoDBClient } from '../test/support/table';

const READERS = 64;
const PROMPTS = 8;
const ids = Array.from({ length: PROMPTS }, (_, i) => `prompt-${i}`);
const UNKNOWN_IDS = 2_000_000;
const HEAP_EVERY = 500_000;
const BATCH = 1000;

/** Every DynamoDB Local this script started, SIGKILLed on exit so none outlives the run. */
const spawnedLocals = new Set<DynamoDBLocal>();
process.on('exit', () => {
  for (const local of spawnedLocals) if (local.process.exitCode === null && local.process.signalCode === null) local.process.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));
async function startLocal(options: { port?: number; timeoutMs?: number } = {}): Promise<DynamoDBLocal> {
  const local = await startDynamoDBLocal(options);
  spawnedLocals.add(local);
  return local;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Re-run under `--expose-gc` when `global.gc` is missing (tsx passes node flags through). */
function ensureGc(): boolean {
  if (typeof global.gc === 'function') return true;
  if (process.env.FAULTS_BENCH_CHILD === '1') return false;
  const result = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, FAULTS_BENCH_CHILD: '1' },
    timeout: 300_000,
  });
  process.exit(result.status ?? 1);
}

/** Creates the table and syncs `generation` of every prompt with the real SyncEngine; returns the checksums served. */
async function seed(endpoint: string, tableName: string, source: MemorySource, generation: number): Promise<Set<string>> {
  const admin = localDynamoDBClient({}, endpoint);
  try {
    await createServingTableNamed(admin, tableName); // a fixed name: the clients keep theirs across the restart
    for (const id of ids) source.set(id, textPrompt(`You are ${id}, generation ${generation}. Answer the question.`));
    const report = await new SyncEngine({ dynamoDBClient: admin, tableName, source }).fullSync();
    if (!report.catalogUpdated) throw new Error('sync did not write the catalog');
    const probe = new PromptClient({ tableName, dynamoDBClient: admin });
    const checksums = new Set<string>();
    for (const id of ids) checksums.add((await probe.getPrompt(id)).checksum);
    return checksums;
  } finally {
    admin.destroy();
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGKILL the DynamoDB Local JVM (the spawned `java` process itself) and wait until it is gone. */
async function sigkill(local: DynamoDBLocal): Promise<void> {
  const child = local.process;
  const pid = child.pid!;
  const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
  if (child.signalCode !== 'SIGKILL' || pidAlive(pid)) throw new Error(`java pid ${pid} did not die by SIGKILL (${child.signalCode})`);
}

async function restartOnPort(port: number): Promise<DynamoDBLocal> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startLocal({ port, timeoutMs: 30_000 });
    } catch (err) {
      if (attempt >= 5) throw err;
      await sleep(500); // the port may still be held for a moment after the kill
    }
  }
}

interface Reader {
  readonly client: PromptClient;
  readonly ddb: DynamoDBClient;
  /** Ids this reader has served fresh from the restarted table. */
  readonly freshAfterRestart: Set<string>;
  allFreshAt?: number;
}

type Phase = 'warm' | 'down' | 'restarting' | 'up';

async function sigkillUnderReaders(): Promise<string[]> {
  const started = performance.now();
  let local = await startLocal();
  const port = local.port;
  const tableName = 'faults-bench';
  const source = new MemorySource();
  const before = await seed(local.endpoint, tableName, source, 1);
  const counter = new CallCounter();
  const readers: Reader[] = Array.from({ length: READERS }, () => {
    const ddb = counter.attach(localDynamoDBClient({ maxAttempts: 1 }, local.endpoint));
    const client = new PromptClient({
      tableName,
      dynamoDBClient: ddb,
      maxAgeSeconds: 1,
      staleWhileRevalidateSeconds: 0,
      staleIfErrorSeconds: 300,
      requestTimeoutMs: 500,
    });
    return { client, ddb, freshAfterRestart: new Set<string>() };
  });
  // Warm in groups of 8, retried: 576 concurrent cold reads on a busy 2-core host can exceed the 500 ms timeout.
  for (let g = 0; g < READERS; g += 8) {
    for (let attempt = 1; ; attempt++) {
      try {
        await Promise.all(readers.slice(g, g + 8).map((r) => preload(r.client, ids)));
        break;
      } catch (err) {
        if (attempt >= 5) throw err;
      }
    }
  }

  let phase: Phase = 'warm';
  let running = true;
  let after = new Set<string>();
  let resyncedAt = 0;
  const reads: Record<Phase, number> = { warm: 0, down: 0, restarting: 0, up: 0 };
  const staleReads: Record<Phase, number> = { warm: 0, down: 0, restarting: 0, up: 0 };
  const failures: Record<string, number> = {};
  let wrongContent = 0;
  let slowest = 0;

  const observe = (r: Reader, p: Prompt, at: number) => {
    if (p.stale) {
      staleReads[phase]++;
      if (!before.has(p.checksum) && !after.has(p.checksum)) wrongContent++;
      return;
    }
    if (after.has(p.checksum)) {
      r.freshAfterRestart.add(p.id);
      if (r.allFreshAt === undefined && r.freshAfterRestart.size === PROMPTS) r.allFreshAt = at;
    } else if (!before.has(p.checksum)) {
      wrongContent++;
    }
  };
  const loop = async (r: Reader) => {
    for (let i = 0; running; i++) {
      const id = ids[i % PROMPTS];
      const t0 = performance.now();
      const current = phase;
      try {
        const p = await r.client.getPrompt(id);
        reads[current]++;
        observe(r, p, performance.now());
      } catch (err) {
        reads[current]++;
        const key = `${current}: ${(err as Error).name}`;
        failures[key] = (failures[key] ?? 0) + 1;
      }
      slowest = Math.max(slowest, performance.now() - t0);
      if (i % PROMPTS === PROMPTS - 1) await yieldToIo(); // 64 loops of settled promises would starve I/O and timers
    }
  };
  const loops = readers.map(loop);

  await sleep(2000);
  const javaPid = local.process.pid;
  phase = 'down';
  const killedAt = performance.now();
  await sigkill(local);
  await sleep(4000); // past maxAge (1 s): every read must be served stale
  const downMs = performance.now() - killedAt;

  phase = 'restarting';
  const restartAt = performance.now();
  local = await restartOnPort(port);
  const upAt = performance.now();
  after = await seed(local.endpoint, tableName, source, 2);
  resyncedAt = performance.now();
  phase = 'up';
  const deadline = performance.now() + 30_000;
  while (readers.some((r) => r.allFreshAt === undefined) && performance.now() < deadline) await sleep(20);
  await sleep(500);
  running = false;
  await Promise.all(loops);
  for (const r of readers) r.ddb.destroy();
  await local.stop();

  const lagging = readers.filter((r) => r.allFreshAt === undefined).length;
  const allFresh = Math.max(...readers.map((r) => r.allFreshAt ?? Number.NaN));
  const total = Object.values(reads).reduce((a, b) => a + b, 0);
  const failed = Object.values(failures).reduce((a, b) => a + b, 0);
  const stale = Object.values(staleReads).reduce((a, b) => a + b, 0);
  return [
    `### 1. DynamoDB Local SIGKILLed and restarted under ${READERS} concurrent readers`,
    '',
    `${READERS} PromptClients (one DynamoDBClient each, maxAttempts 1), ${PROMPTS} prompts synced by SyncEngine, `
      + 'maxAgeSeconds 1, staleWhileRevalidateSeconds 0, staleIfErrorSeconds 300, requestTimeoutMs 500.',
    `java pid ${javaPid} SIGKILLed on port ${port} (exit confirmed); down ${(downMs / 1000).toFixed(1)} s; `
      + `restarted on the same port, answering after ${((upAt - restartAt) / 1000).toFixed(1)} s; `
      + `table re-created and re-synced ${((resyncedAt - upAt) / 1000).toFixed(2)} s later.`,
    '',
    '| figure | value |',
    '| --- | ---: |',
    `| total reads | ${total.toLocaleString('en')} |`,
    `| … before the kill / while down / while restarting / after the re-sync | ${reads.warm.toLocaleString('en')} / ${reads.down.toLocaleString('en')} / ${reads.restarting.toLocaleString('en')} / ${reads.up.toLocaleString('en')} |`,
    `| failed reads of cached prompts | ${failed}${failed ? ` (${JSON.stringify(failures)})` : ''} |`,
    `| reads served stale (flagged) | ${stale.toLocaleString('en')} (down ${staleReads.down.toLocaleString('en')}, restarting ${staleReads.restarting.toLocaleString('en')}, after ${staleReads.up.toLocaleString('en')}) |`,
    `| reads with content from neither table | ${wrongContent} |`,
    `| slowest single read | ${slowest.toFixed(0)} ms |`,
    `| all ${READERS} clients serving every prompt fresh from the restarted table, after the re-sync | ${lagging ? `${lagging} clients never did (30 s)` : `${(allFresh - resyncedAt).toFixed(0)} ms`} |`,
    `| … after the restart began / after the kill | ${lagging ? '—' : `${((allFresh - restartAt) / 1000).toFixed(2)} s / ${((allFresh - killedAt) / 1000).toFixed(2)} s`} |`,
    `| GetItem sent by the ${READERS} clients (whole run) | ${counter.count('GetItem').toLocaleString('en')} |`,
    '',
    `Scenario time: ${((performance.now() - started) / 1000).toFixed(1)} s.`,
  ];
}

async function unknownIds(gcAvailable: boolean): Promise<string[]> {
  const started = performance.now();
  const local = await startLocal();
  try {
    const tableName = 'faults-bench-unknown';
    await seed(local.endpoint, tableName, new MemorySource(), 1);
    const counter = new CallCounter();
    const ddb = counter.attach(localDynamoDBClient({ maxAttempts: 1 }, local.endpoint));
    const keys = logGetItemKeys(ddb);
    const client = new PromptClient({ tableName, dynamoDBClient: ddb });
    await preload(client, ids);
    const afterCatalog = keys.length;
    const heap = () => {
      if (gcAvailable) {
        global.gc!();
        global.gc!();
      }
      return process.memoryUsage().heapUsed;
    };
    const samples: Array<{ calls: number; heapUsed: number }> = [{ calls: 0, heapUsed: heap() }];
    let rejected = 0;
    let other = 0;
    const ask = (n: number) => client.getPrompt(`unknown-${n}`).then(
      () => { other++; },
      (err: unknown) => { if (err instanceof PromptNotFoundError) rejected++; else other++; },
    );
    const batch: Array<Promise<void>> = new Array(BATCH);
    for (let n = 0; n < UNKNOWN_IDS; n += BATCH) {
      for (let j = 0; j < BATCH; j++) batch[j] = ask(n + j);
      await Promise.all(batch);
      if ((n + BATCH) % HEAP_EVERY === 0) samples.push({ calls: n + BATCH, heapUsed: heap() });
    }
    const idReads = keys.slice(afterCatalog);
    const stats = client.stats();
    ddb.destroy();
    const mb = (b: number) => (b / 1024 / 1024).toFixed(2);
    const heaps = samples.map((s) => s.heapUsed);
    return [
      `### 2. ${UNKNOWN_IDS.toLocaleString('en')} distinct unknown ids, one client, catalog loaded`,
      '',
      `Batches of ${BATCH} concurrent getPrompt calls, each awaited; heapUsed ${gcAvailable ? 'after global.gc() (twice)' : 'WITHOUT a forced GC (global.gc unavailable)'}.`,
      '',
      '| getPrompt calls | heapUsed (MiB) |',
      '| ---: | ---: |',
      ...samples.map((s) => `| ${s.calls.toLocaleString('en')} | ${mb(s.heapUsed)} |`),
      '',
      '| figure | value |',
      '| --- | ---: |',
      `| rejected with PromptNotFoundError | ${rejected.toLocaleString('en')} |`,
      `| other outcomes (resolved or other error) | ${other} |`,
      `| heap growth 0 → ${UNKNOWN_IDS.toLocaleString('en')} / max − min over samples | ${mb(heaps[heaps.length - 1] - heaps[0])} MiB / ${mb(Math.max(...heaps) - Math.min(...heaps))} MiB |`,
      `| GetItem after the catalog (ids / catalog re-reads) | ${idReads.length} (${idReads.filter((k) => !k.startsWith('#catalog/')).length} / ${idReads.filter((k) => k.startsWith('#catalog/')).length}) |`,
      `| GetItem total (preload: catalog + ${PROMPTS} prompts) | ${counter.count('GetItem')} |`,
      `| stats: catalogRejections / negativeHits / misses / entries | ${stats.catalogRejections.toLocaleString('en')} / ${stats.negativeHits} / ${stats.misses.toLocaleString('en')} / ${stats.entries} |`,
      '',
      `Scenario time: ${((performance.now() - started) / 1000).toFixed(1)} s.`,
    ];
  } finally {
    await local.stop();
  }
}

async function main(): Promise<void> {
  const gcAvailable = ensureGc();
  const started = performance.now();
  const watchdog = setTimeout(() => {
    console.error('faults bench: over 4 minutes, giving up');
    process.exit(2);
  }, 240_000);
  watchdog.unref();
  const first = await sigkillUnderReaders();
  const second = await unknownIds(gcAvailable);
  console.log([
    `Node ${process.version}, ${process.platform}/${process.arch}.`,
    '',
    ...first,
    '',
    ...second,
    '',
    `Total run: ${((performance.now() - started) / 1000).toFixed(1)} s.`,
  ].join('\n'));
}

main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1); // the 'exit' handler SIGKILLs any DynamoDB Local still running
});
