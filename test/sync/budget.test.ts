/**
 * One Bedrock budget for all syncs: concurrent syncs share the table's token bucket and
 * coalesce on per-prompt claims, against the Bedrock stand-in (10 requests/second per operation, 429 above)
 * and DynamoDB Local. Each engine stands for a separate Lambda invocation: nothing is shared in memory.
 */
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { SyncEngine } from '../../src/sync/engine';
import { BedrockPromptSource } from '../../src/sync/sources/bedrock';
import { SyncClaims } from '../../src/write/claims';
import { SharedRateLimiter } from '../../src/write/shared-budget';
import { seedPublished, textDraft } from '../support/bedrock-fixtures';
import { BedrockStandIn } from '../support/bedrock-stand-in';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

/** The configured `maxRequestsPerSecond`: the sum over every concurrent sync must stay within it. */
const BUDGET = 5;
/** Changes are stamped this long before the syncs run (CloudTrail delivers events after the fact). */
const EVENT_DELAY_MS = 10_000;

let ddb: DynamoDBClient;
let tableName: string;
let standIn: BedrockStandIn;

beforeEach(async () => {
  limiters = [];
  ddb = localDynamoDBClient();
  tableName = await createServingTable(ddb, 'budget');
  standIn = new BedrockStandIn({ clock: () => Date.now() - EVENT_DELAY_MS });
  await standIn.start();
});

afterEach(async () => {
  await standIn.stop();
  await deleteTable(ddb, tableName);
  ddb.destroy();
});

/** Every shared limiter made by {@link invocation} in the current test. */
let limiters: SharedRateLimiter[] = [];

/** A sync invocation as the handler builds it: shared budget, shared claims, its own clients. */
function invocation(shared = true): SyncEngine {
  const limiter = shared ? new SharedRateLimiter({ dynamoDBClient: ddb, tableName, ratePerSecond: BUDGET }) : undefined;
  if (limiter) limiters.push(limiter);
  const source = new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }), maxRequestsPerSecond: BUDGET, limiter });
  const claims = shared ? new SyncClaims({ dynamoDBClient: ddb, tableName, leaseMs: 60_000 }) : undefined;
  return new SyncEngine({ dynamoDBClient: ddb, tableName, source, claims });
}

async function publishedAndSynced(count: number): Promise<string[]> {
  standIn.setRequestsPerSecond(100_000);
  const ids = seedPublished(standIn, count);
  await new SyncEngine({
    dynamoDBClient: ddb, tableName, source: new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }), maxRequestsPerSecond: 100_000 }),
  }).fullSync();
  standIn.setRequestsPerSecond(10);
  for (const id of ids) {
    standIn.updateDraft(id, textDraft(id, `Changed ${id} about {{topic}}`));
    standIn.createVersion(id);
  }
  standIn.reset();
  return ids;
}

test('20 change events at once plus a reconcile: within the budget, 0 throttles, each prompt fetched once', async () => {
  // GIVEN 20 synced prompts, each changed (new draft and version) since
  const ids = await publishedAndSynced(20);
  const eventTime = new Date(Date.now() - EVENT_DELAY_MS + 1).toISOString();
  // WHEN 20 CloudTrail-triggered syncs and a scheduled reconcile start at once, each its own invocation
  const started = performance.now();
  const reports = await Promise.all([
    ...ids.map((id) => invocation().syncPrompt(id, { changedAt: eventTime })),
    invocation().fullSync(),
  ]);
  const seconds = (performance.now() - started) / 1000;
  // THEN every change is served
  const written = reports.flatMap((r) => r.writtenIds).sort();
  expect(written).toEqual([...ids].sort());
  expect(reports.flatMap((r) => r.failures)).toEqual([]);
  // AND Bedrock saw at most BUDGET requests in any second, none throttled
  const requests = standIn.requests();
  expect(requests.filter((r) => r.throttled)).toHaveLength(0);
  // (as the limiters started them: strictly; as Bedrock saw them arrive: the same, give or take one call
  // that the client's own scheduling delayed between its slot and the wire)
  const starts = limiters.flatMap((l) => l.starts).sort((a, b) => a - b);
  expect(starts).toHaveLength(requests.length);
  expect(peakPerSecond(starts)).toBeLessThanOrEqual(BUDGET);
  expect(standIn.peakRequestsPerSecond()).toBeLessThanOrEqual(BUDGET + 1);
  expect(requests.length / seconds).toBeLessThanOrEqual(BUDGET);
  // AND each prompt was fetched once: the reconcile left every one to the event's sync already reading it
  const gets = requests.filter((r) => r.operation === 'GetPrompt').map((r) => r.promptId).sort();
  expect(gets).toEqual([...ids].sort());
  expect(reports[20].coalescedIds.sort()).toEqual([...ids].sort());
  // eslint-disable-next-line no-console
  console.log(`budget: ${requests.length} Bedrock requests in ${seconds.toFixed(1)} s (${(requests.length / seconds).toFixed(2)}/s), `
    + `peak ${peakPerSecond(starts)}/s as started, ${standIn.peakRequestsPerSecond()}/s as received, `
    + `${standIn.stats().throttled.GetPrompt + standIn.stats().throttled.ListPrompts} throttled`);
}, 60_000);

test('without the shared budget the same burst multiplies the rate (the defect this fixes)', async () => {
  // GIVEN
  const ids = await publishedAndSynced(20);
  // WHEN each invocation paces only itself
  await Promise.all([...ids.map((id) => invocation(false).syncPrompt(id)), invocation(false).fullSync()]);
  // THEN the stand-in saw more than the budget in some second (and the quota threw some back)
  expect(standIn.peakRequestsPerSecond()).toBeGreaterThan(BUDGET);
}, 60_000);

test('events for one prompt coalesce: 10 events, one fetch', async () => {
  const [id] = await publishedAndSynced(1);
  const eventTime = new Date(Date.now() - EVENT_DELAY_MS + 1).toISOString();
  const reports = await Promise.all(Array.from({ length: 10 }, () => invocation().syncPrompt(id, { changedAt: eventTime })));
  expect(reports.flatMap((r) => r.writtenIds)).toEqual([id]);
  expect(reports.flatMap((r) => r.coalescedIds)).toHaveLength(9);
  expect(standIn.requests().filter((r) => r.operation === 'GetPrompt')).toHaveLength(1);
});

test('a change made after a claim was taken is not left to that claim', async () => {
  // GIVEN a prompt claimed by a sync that started before the change
  const [id] = await publishedAndSynced(1);
  const claims = new SyncClaims({ dynamoDBClient: ddb, tableName, leaseMs: 60_000 });
  const early = await claims.claim(id, Date.now() - 60_000);
  expect(early.kind).toBe('claimed');
  // WHEN an event for a change made after that claim arrives
  const report = await invocation().syncPrompt(id, { changedAt: new Date(Date.now() + 5_000).toISOString() });
  // THEN it syncs the prompt itself
  expect(report.writtenIds).toEqual([id]);
});

test('a hand-broken budget item (string-typed, far in the future) heals instead of stopping every sync', async () => {
  const limiter = new SharedRateLimiter({ dynamoDBClient: ddb, tableName, ratePerSecond: BUDGET });
  for (const next of [{ S: 'soon' }, { N: String(Date.now() + 86_400_000) }]) {
    await ddb.send(new PutItemCommand({ TableName: tableName, Item: { prompt_id: { S: '#bedrock-budget' }, version: { S: 'BUCKET' }, next_slot_at: next } }));
    const t = performance.now();
    await limiter.acquire();
    expect(performance.now() - t).toBeLessThan(1_000);
  }
});

/** Most of `times` (sorted, ms) within any one second. */
function peakPerSecond(times: readonly number[]): number {
  let peak = 0;
  for (let start = 0, end = 0; end < times.length; end++) {
    while (times[end] - times[start] >= 1000) start++;
    peak = Math.max(peak, end - start + 1);
  }
  return peak;
}
