/**
 * Runtime client benchmark: PromptClient vs Powertools Parameters `DynamoDBProvider` vs the floor (an awaited
 * `Map` lookup with an expiry check), side by side in one run against a DynamoDB Local started here.
 *
 *   npx tsx bench/client.bench.ts
 *
 * Prints a markdown report (copied into docs/BENCHMARKS.md). Takes about 30 s on 2 cores.
 */
import { DynamoDBProvider } from '@aws-lambda-powertools/parameters/dynamodb';
import { CreateTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { preload, Prompt, PromptClient, PromptClientOptions } from '../src/runtime';
import { logGetItemKeys, publish, textContent, writeCatalog } from '../test/runtime/fixtures';
import { CallCounter } from '../test/support/call-counter';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

const PROMPTS = 8;
const ids = Array.from({ length: PROMPTS }, (_, i) => `prompt-${i}`);
const OPS_PER_ROUND = 200_000;
const ROUNDS = 21;
const CONCURRENT = 1000;

// ----------------------------------------------------------------------------------------------------------
// The three cached reads, each in its own loop so no call site is shared between them.
// ----------------------------------------------------------------------------------------------------------

/** The floor: what a hand-written cache costs (await + Map.get + expiry check). */
const floorCache = new Map<string, { value: unknown; expiresAt: number }>();
async function floorGet(key: string): Promise<unknown> {
  const entry = floorCache.get(key);
  if (entry !== undefined && entry.expiresAt > Date.now()) return entry.value;
  throw new Error(`floor miss ${key}`);
}
async function floorLoop(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await floorGet(ids[i % PROMPTS]);
}

let ours: PromptClient;
async function oursLoop(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await ours.getPrompt(ids[i % PROMPTS]);
}
const PINNED = { version: 1 };
async function oursPinnedLoop(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await ours.getPrompt(ids[i % PROMPTS], PINNED);
}

let powertools: DynamoDBProvider;
const POWERTOOLS_OPTIONS = { maxAge: 3600 };
async function powertoolsLoop(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await powertools.get(ids[i % PROMPTS], POWERTOOLS_OPTIONS);
}

const loops: Record<string, (n: number) => Promise<void>> = {
  'floor: awaited Map.get + expiry check': floorLoop,
  'PromptClient.getPrompt (CURRENT)': oursLoop,
  'PromptClient.getPrompt ({ version })': oursPinnedLoop,
  'Powertools DynamoDBProvider.get': powertoolsLoop,
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function timeLoop(loop: (n: number) => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  await loop(OPS_PER_ROUND);
  return Number(process.hrtime.bigint() - started) / OPS_PER_ROUND;
}

/** Interleaved rounds in a shuffled order; per-round ratios to the floor, medians over rounds. */
async function cachedReads(): Promise<string[]> {
  const names = Object.keys(loops);
  for (const name of names) await loops[name](OPS_PER_ROUND); // warm-up (JIT)
  const nsPerOp: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const ratios: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = [...names].sort(() => Math.random() - 0.5);
    const times: Record<string, number> = {};
    for (const name of order) times[name] = await timeLoop(loops[name]);
    for (const name of names) {
      nsPerOp[name].push(times[name]);
      ratios[name].push(times[name] / times[names[0]]);
    }
  }
  return [
    '| cached read | ns/op (median) | × floor (median of per-round ratios) |',
    '| --- | ---: | ---: |',
    ...names.map((n) => `| ${n} | ${median(nsPerOp[n]).toFixed(0)} | ${median(ratios[n]).toFixed(2)}× |`),
  ];
}

// ----------------------------------------------------------------------------------------------------------
// Counted scenarios (GetItem calls counted with SDK middleware on fresh, cold clients).
// ----------------------------------------------------------------------------------------------------------

interface Setup {
  endpoint: string;
  servingTable: string;
  plainTable: string;
  powertoolsTable: string;
}

function counted(endpoint: string) {
  const counter = new CallCounter();
  const client = counter.attach(localDynamoDBClient({ maxAttempts: 1 }, endpoint));
  const keys = logGetItemKeys(client);
  return { counter, client, keys };
}

function newOurs(setup: Setup, table: string, options: PromptClientOptions = {}) {
  const c = counted(setup.endpoint);
  return { ...c, prompts: new PromptClient({ tableName: table, dynamoDBClient: c.client, ...options }) };
}

function newPowertools(setup: Setup) {
  const c = counted(setup.endpoint);
  const provider = new DynamoDBProvider({ tableName: setup.powertoolsTable, keyAttr: 'prompt_id', valueAttr: 'text', awsSdkV3Client: c.client });
  return { ...c, provider };
}

/** `n` reads: half concurrent, then half one after the other; failures swallowed. */
async function manyReads(read: () => Promise<unknown>, n: number): Promise<void> {
  await Promise.allSettled(Array.from({ length: n / 2 }, read));
  for (let i = 0; i < n / 2; i++) await read().catch(() => undefined);
}

async function counts(setup: Setup): Promise<string[]> {
  const rows: string[] = ['| scenario | PromptClient GetItem | Powertools GetItem |', '| --- | ---: | ---: |'];

  // 1000 concurrent cold reads of one id.
  {
    const a = newOurs(setup, setup.servingTable);
    await Promise.all(Array.from({ length: CONCURRENT }, () => a.prompts.getPrompt('prompt-0')));
    const b = newOurs(setup, setup.servingTable);
    await preload(b.prompts);
    b.counter.reset();
    await Promise.all(Array.from({ length: CONCURRENT }, () => b.prompts.getPrompt('prompt-0')));
    const p = newPowertools(setup);
    await Promise.all(Array.from({ length: CONCURRENT }, () => p.provider.get('prompt-0')));
    const coldIdReads = a.keys.filter((k) => k === 'prompt-0/CURRENT').length;
    const coldCatalogReads = a.keys.filter((k) => k === '#catalog/CURRENT').length;
    rows.push(`| ${CONCURRENT} concurrent cold reads of one id (catalog preloaded) | ${b.counter.count('GetItem')} | ${p.counter.count('GetItem')} |`);
    rows.push(`| … on a client that has not read the catalog yet | ${coldIdReads} + ${coldCatalogReads} catalog read | — |`);
    for (const c of [a, b, p]) c.client.destroy();
  }

  // 1000 reads of an id that does not exist.
  {
    const none = newOurs(setup, setup.plainTable);
    await manyReads(() => none.prompts.getPrompt('no-such-prompt'), CONCURRENT);
    const lazy = newOurs(setup, setup.servingTable);
    await manyReads(() => lazy.prompts.getPrompt('no-such-prompt'), CONCURRENT);
    const preloaded = newOurs(setup, setup.servingTable);
    await preload(preloaded.prompts);
    preloaded.counter.reset();
    await manyReads(() => preloaded.prompts.getPrompt('no-such-prompt'), CONCURRENT);
    const p = newPowertools(setup);
    await manyReads(() => p.provider.get('no-such-prompt'), CONCURRENT);
    const idReads = none.keys.filter((k) => k === 'no-such-prompt/CURRENT').length;
    const probes = none.keys.filter((k) => k === '#catalog/CURRENT').length;
    rows.push(`| ${CONCURRENT} reads of an unknown id, no catalog item in the table | ${idReads} + ${probes} catalog probe | ${p.counter.count('GetItem')} |`);
    rows.push(`| … catalog in the table, read on the first miss | ${lazy.counter.count('GetItem')} (the catalog) | — |`);
    rows.push(`| … catalog preloaded | ${preloaded.counter.count('GetItem')} | — |`);
    for (const c of [none, lazy, preloaded, p]) c.client.destroy();
  }
  return rows;
}

/** Both warmed, the store stopped, the TTL passed: what each serves. */
async function outage(setup: Setup, stop: () => Promise<void>): Promise<string[]> {
  const a = newOurs(setup, setup.servingTable, { maxAgeSeconds: 1, staleWhileRevalidateSeconds: 0, requestTimeoutMs: 1000 });
  const p = newPowertools(setup);
  await a.prompts.getPrompt('prompt-0');
  await p.provider.get('prompt-0', { maxAge: 1 });
  await stop();
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const describe = async (read: () => Promise<unknown>) => {
    const started = performance.now();
    try {
      const value = await read();
      const stale = (value as Prompt).stale === true ? ', flagged `stale: true`' : '';
      return `served the last good copy${stale} (${(performance.now() - started).toFixed(0)} ms)`;
    } catch (e) {
      return `threw \`${(e as Error).name}\` (${(performance.now() - started).toFixed(0)} ms)`;
    }
  };
  const rows = [
    '| store stopped, TTL passed | result |',
    '| --- | --- |',
    `| PromptClient.getPrompt (cached before) | ${await describe(() => a.prompts.getPrompt('prompt-0'))} |`,
    `| … the next read of it | ${await describe(() => a.prompts.getPrompt('prompt-0'))} |`,
    `| PromptClient.getPrompt (never read) | ${await describe(() => a.prompts.getPrompt('prompt-5'))} |`,
    `| Powertools DynamoDBProvider.get | ${await describe(() => p.provider.get('prompt-0', { maxAge: 1 }))} |`,
  ];
  a.client.destroy();
  p.client.destroy();
  return rows;
}

// ----------------------------------------------------------------------------------------------------------

async function seed(endpoint: string): Promise<Setup> {
  const admin = localDynamoDBClient({}, endpoint);
  const [servingTable, plainTable] = await Promise.all([createServingTable(admin), createServingTable(admin, 'plain')]);
  // Powertools' `get` reads `Key: { [keyAttr]: name }` only, so it needs a table keyed on prompt_id alone:
  // a mirror of the CURRENT pointers (same DynamoDB Local, same items' text).
  const powertoolsTable = `powertools-${Date.now()}`;
  await admin.send(new CreateTableCommand({
    TableName: powertoolsTable,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'prompt_id', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'prompt_id', KeyType: 'HASH' }],
  }));
  for (const id of ids) {
    const content = textContent(`You are ${id}. Answer {{question}} for {{customer}}.`);
    await publish(admin, servingTable, id, 1, content);
    await publish(admin, plainTable, id, 1, content);
    await admin.send(new PutItemCommand({ TableName: powertoolsTable, Item: { prompt_id: { S: id }, text: { S: content.text! } } }));
  }
  await writeCatalog(admin, servingTable, ids);
  admin.destroy();
  return { endpoint, servingTable, plainTable, powertoolsTable };
}

async function main(): Promise<void> {
  const started = performance.now();
  const local = await startDynamoDBLocal();
  try {
    const setup = await seed(local.endpoint);

    // Cached-read clients: warmed, then only memory is exercised.
    const a = newOurs(setup, setup.servingTable, { maxAgeSeconds: 3600 });
    ours = a.prompts;
    await preload(ours, ids);
    for (const id of ids) await ours.getPrompt(id, PINNED);
    const p = newPowertools(setup);
    powertools = p.provider;
    for (const id of ids) {
      await powertools.get(id, POWERTOOLS_OPTIONS);
      floorCache.set(id, { value: await ours.getPrompt(id), expiresAt: Date.now() + 3_600_000 });
    }
    a.counter.reset();
    p.counter.reset();
    const cached = await cachedReads();
    const storeReadsDuringCachedRuns = a.counter.count('GetItem') + p.counter.count('GetItem');

    const countRows = await counts(setup);
    const down = await outage(setup, () => local.stop());

    const report = [
      `Node ${process.version}, ${process.platform}/${process.arch}; ${ROUNDS} interleaved rounds × ${OPS_PER_ROUND.toLocaleString('en')} `
        + `reads over ${PROMPTS} prompts per implementation; `
        + `GetItem calls during those rounds: ${storeReadsDuringCachedRuns} (all served from memory).`,
      '',
      ...cached,
      '',
      ...countRows,
      '',
      ...down,
      '',
      `Total run: ${((performance.now() - started) / 1000).toFixed(1)} s.`,
    ];
    console.log(report.join('\n'));
  } finally {
    await local.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
