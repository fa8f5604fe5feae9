/**
 * The sync's coordination items (the shared Bedrock budget and the per-prompt claims) cannot
 * stall it. Against DynamoDB Local and the Bedrock stand-in (10 requests/second, 429 above); each engine stands
 * for a separate Lambda invocation. Each test failed before its fix.
 */
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { BUDGET_ID, BUDGET_SORT_KEY, CLAIMS_ID } from '../../src/schema';
import { SyncEngine } from '../../src/sync/engine';
import { SourceReadError } from '../../src/sync/errors';
import { FetchResult, PromptSourceReader } from '../../src/sync/source';
import { BedrockPromptSource } from '../../src/sync/sources/bedrock';
import { SyncClaims, claimKey } from '../../src/write/claims';
import { SharedRateLimiter } from '../../src/write/shared-budget';
import { seedPublished, textDraft } from '../support/bedrock-fixtures';
import { BedrockStandIn } from '../support/bedrock-stand-in';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

/** The configured `maxRequestsPerSecond`. */
const BUDGET = 5;
const YEAR_MS = 365 * 24 * 3600 * 1000;

let counter: CallCounter;
let ddb: DynamoDBClient;
let tableName: string;
let standIn: BedrockStandIn;

beforeEach(async () => {
  counter = new CallCounter();
  ddb = counter.attach(localDynamoDBClient());
  tableName = await createServingTable(ddb, 'coord');
  standIn = new BedrockStandIn({ clock: () => Date.now() - 10_000 });
  await standIn.start();
});

afterEach(async () => {
  await standIn.stop();
  await deleteTable(ddb, tableName);
  ddb.destroy();
});

function limiter(): SharedRateLimiter {
  return new SharedRateLimiter({ dynamoDBClient: ddb, tableName, ratePerSecond: BUDGET });
}

function claims(coalesceWaitMs?: number): SyncClaims {
  return new SyncClaims({ dynamoDBClient: ddb, tableName, leaseMs: 60_000, coalesceWaitMs });
}

function bedrock(limit?: SharedRateLimiter): BedrockPromptSource {
  return new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }), maxRequestsPerSecond: BUDGET, limiter: limit });
}

/** A sync invocation as the handler builds it: shared budget, shared claims. */
function invocation(options: { source?: PromptSourceReader; coalesceWaitMs?: number } = {}): SyncEngine {
  return new SyncEngine({ dynamoDBClient: ddb, tableName, source: options.source ?? bedrock(limiter()), claims: claims(options.coalesceWaitMs) });
}

/** An engine without budget or claims, fast (for the fill before the test proper). */
function unpacedEngine(): SyncEngine {
  const source = new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }), maxRequestsPerSecond: 100_000 });
  return new SyncEngine({ dynamoDBClient: ddb, tableName, source });
}

async function putBudget(nextSlotAt: { N: string } | { S: string }): Promise<void> {
  await ddb.send(new PutItemCommand({
    TableName: tableName, Item: { prompt_id: { S: BUDGET_ID }, version: { S: BUDGET_SORT_KEY }, next_slot_at: nextSlotAt },
  }));
}

async function budgetValue(): Promise<string | undefined> {
  const Key = { prompt_id: { S: BUDGET_ID }, version: { S: BUDGET_SORT_KEY } };
  const out = await ddb.send(new GetItemCommand({ TableName: tableName, Key, ConsistentRead: true }));
  return out.Item?.next_slot_at?.N;
}

/** One published prompt, synced once, then changed at the source. */
async function publishedSyncedAndChanged(count = 1): Promise<string[]> {
  standIn.setRequestsPerSecond(100_000);
  const ids = seedPublished(standIn, count);
  await unpacedEngine().fullSync();
  for (const id of ids) {
    standIn.updateDraft(id, textDraft(id, `Changed ${id} about {{topic}}`));
    standIn.createVersion(id);
  }
  standIn.setRequestsPerSecond(10);
  standIn.reset();
  return ids;
}

describe('shared budget', () => {
  test.each([
    ['1E+125 (every increment overflows DynamoDB numbers)', { N: '1E+125' }],
    ['-1E+125', { N: '-1E+125' }],
    ['a year ahead (a host with a wrong clock)', { N: String(Date.now() + YEAR_MS) }],
    ['a fraction far ahead', { N: String(Date.now() + 10 * YEAR_MS + 0.5) }],
    ['a string', { S: '1E+125' }],
  ])('a budget item at %s heals on the next call instead of failing or stalling every sync', async (_, value) => {
    await putBudget(value);
    const started = performance.now();
    await limiter().acquire();
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(Number(await budgetValue())).toBeLessThan(Date.now() + 5_000);
  });

  test('a legitimate queue longer than 5 minutes is honoured, not reset (two calls never share a slot)', async () => {
    // GIVEN a queue 6 minutes long, what 1000 concurrent syncs at 5 calls/second can legitimately build
    const end = Date.now() + 6 * 60_000;
    await putBudget({ N: String(end) });
    // WHEN two syncs take a slot each
    const [a, b] = [await limiter().take(1), await limiter().take(1)];
    // THEN they queue behind it, one interval apart, and the item moved on by two slots
    expect(a).toBe(end);
    expect(b).toBeGreaterThan(a);
    expect(Number(await budgetValue())).toBe(b + (b - a));
  });

  test('a batch of slots costs one conditional write', async () => {
    const l = limiter();
    await l.take(1); // the bucket is now busy
    counter.reset();
    const first = await l.take(8);
    expect(counter.count('UpdateItem')).toBe(1);
    expect(Number(await budgetValue()) - first).toBe(8 * l.intervalMs);
  });
});

describe('claims', () => {
  test('a claim written by a host whose clock is a year ahead does not block the prompt', async () => {
    // GIVEN a live-looking claim stamped a year from now
    const [id] = await publishedSyncedAndChanged();
    const future = Date.now() + YEAR_MS;
    await ddb.send(new PutItemCommand({
      TableName: tableName,
      Item: {
        prompt_id: { S: CLAIMS_ID },
        version: { S: claimKey(id) },
        claimed_at: { N: String(future) },
        expires_at: { N: String(Math.ceil((future + 60_000) / 1000)) },
        claim_token: { S: 'from-the-future' },
      },
    }));
    // WHEN the change's event is synced
    const report = await invocation().syncPrompt(id, { changedAt: new Date(Date.now() - 5_000).toISOString() });
    // THEN the prompt is written, not left to the "future" claim
    expect(report.coalescedIds).toEqual([]);
    expect(report.writtenIds).toEqual([id]);
  });

  test.each([
    ['claimed_at as a string', { claimed_at: { S: 'soon' } }],
    ['expires_at at 1E+125', { expires_at: { N: '1E+125' } }],
    ['an outcome this code never writes', { claim_outcome: { S: 'maybe' } }],
    ['an outcome of another type', { claim_outcome: { N: '1' } }],
  ])('a claim item with %s heals', async (_, attrs) => {
    const [id] = await publishedSyncedAndChanged();
    await ddb.send(new PutItemCommand({
      TableName: tableName,
      Item: {
        prompt_id: { S: CLAIMS_ID },
        version: { S: claimKey(id) },
        claimed_at: { N: String(Date.now()) },
        expires_at: { N: String(Math.ceil(Date.now() / 1000) + 60) },
        claim_token: { S: 'x' },
        ...attrs,
      },
    }));
    const report = await invocation().syncPrompt(id, { changedAt: new Date(Date.now() - 5_000).toISOString() });
    expect(report.writtenIds).toEqual([id]);
  });

  test('a change coalesced into a claimant that crashed is recovered by the waiting sync once the claimant held it a whole wait', async () => {
    // GIVEN a claim taken after the change by a sync that then died without releasing it (its lease: 60 s)
    const [id] = await publishedSyncedAndChanged();
    const changedAt = new Date(Date.now() - 5_000).toISOString();
    expect((await claims().claim(id, Date.parse(changedAt))).kind).toBe('claimed');
    // WHEN the change's event is synced, waiting at most 1 s for the claimant
    const report = await invocation({ coalesceWaitMs: 1_000 }).syncPrompt(id, { changedAt });
    // THEN the claimant is presumed dead: the waiting sync takes the claim over and syncs the change itself, long
    // before the dead claimant's lease would lapse
    expect(report.failures).toEqual([]);
    expect(report.writtenIds).toEqual([id]);
  });

  test('a wait cut short by the sync\'s own deadline, before the claimant held it a whole wait, is a retryable failure', async () => {
    // GIVEN a claim held by a sync that has not finished
    const [id] = await publishedSyncedAndChanged();
    const changedAt = Date.now() - 5_000;
    expect((await claims().claim(id, changedAt)).kind).toBe('claimed');
    // WHEN another sync may wait 10 s but its deadline is 300 ms away
    const result = await claims(10_000).claim(id, changedAt, Date.now() + 300);
    // THEN the change is not reported as done and the claim is left to its holder
    expect(result).toEqual({ kind: 'unfinished', reason: expect.stringMatching(/did not finish/) });
  });

  test('a change coalesced into a claimant whose Bedrock read was throttled is synced by the coalescing sync', async () => {
    // GIVEN a claimant whose source read is throttled after a while
    const [id] = await publishedSyncedAndChanged();
    const changedAt = new Date(Date.now() - 5_000).toISOString();
    const throttled: PromptSourceReader = {
      name: 'bedrock',
      list: async () => ({ prompts: [], failures: [] }),
      fetch: async (): Promise<FetchResult> => {
        await new Promise((r) => setTimeout(r, 500));
        throw new SourceReadError(id, 'ThrottlingException: Rate exceeded', { retryable: true });
      },
      stats: () => ({ calls: {}, throttles: 1 }),
    };
    const claimant = invocation({ source: throttled }).syncPrompt(id, { changedAt });
    await new Promise((r) => setTimeout(r, 100));
    // WHEN a second event's sync finds the claim
    const coalescing = await invocation({ coalesceWaitMs: 10_000 }).syncPrompt(id, { changedAt });
    // THEN the claimant failed, and the change was synced by the second sync all the same
    expect((await claimant).failures).toEqual([expect.objectContaining({ id, retryable: true })]);
    expect(coalescing.writtenIds).toEqual([id]);
    expect(coalescing.failures).toEqual([]);
  });

  test('a change coalesced into a claimant that succeeds is coalesced (one fetch)', async () => {
    const [id] = await publishedSyncedAndChanged();
    const changedAt = new Date(Date.now() - 5_000).toISOString();
    const reports = await Promise.all([0, 1, 2].map(() => invocation().syncPrompt(id, { changedAt })));
    expect(reports.flatMap((r) => r.writtenIds)).toEqual([id]);
    expect(reports.flatMap((r) => r.coalescedIds)).toHaveLength(2);
    expect(reports.flatMap((r) => r.failures)).toEqual([]);
    expect(standIn.requests().filter((r) => r.operation === 'GetPrompt')).toHaveLength(1);
  });
});

test('a no-change reconcile of 40 prompts makes at most one coordination write per Bedrock call', async () => {
  // GIVEN 40 published prompts, synced
  standIn.setRequestsPerSecond(100_000);
  seedPublished(standIn, 40);
  await unpacedEngine().fullSync();
  standIn.setRequestsPerSecond(10);
  standIn.reset();
  counter.reset();
  // WHEN a scheduled reconcile runs as the handler builds it (shared budget, claims)
  const report = await invocation().fullSync();
  // THEN nothing changed, and DynamoDB saw no more writes than Bedrock saw calls
  const calls = standIn.requests().length;
  expect(report.written).toBe(0);
  expect(report.failures).toEqual([]);
  expect(calls).toBeGreaterThan(20);
  // eslint-disable-next-line no-console
  console.log(`no-change reconcile of 40: ${calls} Bedrock calls, ${counter.writes()} coordination writes`, counter.snapshot());
  expect(counter.writes()).toBeLessThanOrEqual(calls);
  expect(counter.count('PutItem')).toBe(0); // no claim for a read-only re-check
}, 60_000);
