import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { CATALOG_ID, CURRENT } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { SyncEngine } from '../../src/sync/engine';
import { BedrockPromptSource, DEFAULT_LATEST_CHECKS_PER_SYNC } from '../../src/sync/sources/bedrock';
import { seedPublished, textDraft } from '../support/bedrock-fixtures';
import { BedrockStandIn } from '../support/bedrock-stand-in';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let ddb: DynamoDBClient;
let counter: CallCounter;
let tableName: string;
let standIn: BedrockStandIn;

afterEach(async () => {
  await standIn.stop();
  await deleteTable(ddb, tableName);
  ddb.destroy();
});

async function setUp(requestsPerSecond: number): Promise<void> {
  counter = new CallCounter();
  ddb = counter.attach(localDynamoDBClient());
  tableName = await createServingTable(ddb, 'bedrock');
  standIn = new BedrockStandIn({ requestsPerSecond });
  await standIn.start();
}

function engine(maxRequestsPerSecond: number): SyncEngine {
  const source = new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }), maxRequestsPerSecond });
  return new SyncEngine({ dynamoDBClient: ddb, tableName, source });
}

async function scanAll(): Promise<Record<string, any>[]> {
  const items: Record<string, any>[] = [];
  let ExclusiveStartKey: any;
  do {
    const out = await ddb.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey }));
    items.push(...(out.Items ?? []).map(fromItem));
    ExclusiveStartKey = out.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items.filter((i) => i.prompt_id !== CATALOG_ID);
}

test('1000 prompts: fill, then 0 writes and 0 GetPrompt when nothing changed, then exactly 10 transactions for 10 changes', async () => {
  // GIVEN 1000 published prompts (the quota is raised for this volume test only; pacing is tested below)
  await setUp(100_000);
  const ids = seedPublished(standIn, 1000);

  // WHEN the table is filled
  const fill = await engine(100_000).fullSync();
  // THEN 1000 pointers and 1000 version items
  expect(fill).toMatchObject({ scanned: 1000, written: 1000, failed: 0 });
  const items = await scanAll();
  expect(items.filter((i) => i.version === CURRENT)).toHaveLength(1000);
  expect(items.filter((i) => i.version === 'v000001')).toHaveLength(1000);

  // WHEN nothing changed
  counter.reset();
  standIn.reset();
  const noChange = await engine(100_000).fullSync();
  // THEN a compare only: 0 DynamoDB writes, 0 GetPrompt
  expect(noChange).toMatchObject({ unchanged: 1000, written: 0 });
  expect(counter.writes()).toBe(0);
  expect(standIn.stats().served.GetPrompt).toBe(0);
  // one account-wide listing, plus the LATEST-mode re-check of a bounded sample (a deleted version is
  // invisible in the listing)
  expect(standIn.stats().served.ListPrompts).toBe(1 + DEFAULT_LATEST_CHECKS_PER_SYNC);

  // WHEN 10 prompts get a new published version
  const changed = ids.slice(0, 10);
  for (const id of changed) {
    standIn.updateDraft(id, textDraft(`changed-${id}`, `New text about {{topic}} for ${id}`));
    standIn.createVersion(id);
  }
  counter.reset();
  standIn.reset();
  const ten = await engine(100_000).fullSync();
  // THEN exactly 10 transactions and at most 10 GetPrompt
  expect(ten).toMatchObject({ written: 10, unchanged: 990 });
  expect(ten.writtenIds.sort()).toEqual([...changed].sort());
  expect(counter.count('TransactWriteItems')).toBe(10);
  expect(counter.writes()).toBe(10);
  expect(standIn.stats().served.GetPrompt).toBeLessThanOrEqual(10);
}, 180_000);

test('with the stand-in throttling at 10 req/s, a sync that pushes 20 req/s completes with no prompt lost', async () => {
  // GIVEN Bedrock's real quota and a reader configured above it
  await setUp(10);
  seedPublished(standIn, 30);
  // WHEN
  const report = await engine(20).fullSync();
  // THEN throttles happened, were retried, and every prompt is served
  expect(standIn.stats().throttled.GetPrompt + standIn.stats().throttled.ListPrompts).toBeGreaterThan(0);
  expect(report.sourceThrottles).toBeGreaterThan(0);
  expect(report).toMatchObject({ written: 30, failed: 0 });
  expect((await scanAll()).filter((i) => i.version === CURRENT && i.status === 'ACTIVE')).toHaveLength(30);
}, 60_000);

test('the default pace (5 req/s, half the quota) causes no throttling', async () => {
  // GIVEN
  await setUp(10);
  seedPublished(standIn, 8);
  // WHEN
  const report = await engine(5).fullSync();
  // THEN
  expect(report).toMatchObject({ written: 8, failed: 0, sourceThrottles: 0 });
  expect(standIn.stats().throttled).toEqual({ ListPrompts: 0, GetPrompt: 0 });
}, 60_000);

test('a malformed Bedrock prompt fails alone with a reason; a deleted one is marked DELETED', async () => {
  // GIVEN
  await setUp(100_000);
  const [bad, gone, ok] = seedPublished(standIn, 3);
  await engine(100_000).fullSync();
  standIn.updateDraft(bad, textDraft('bad', 'changed'));
  standIn.createVersion(bad);
  standIn.setRawGetPromptBody(bad, '{"id": "not a prompt"');
  standIn.deletePrompt(gone);
  // WHEN
  const report = await engine(100_000).fullSync();
  // THEN
  expect(report.failures).toEqual([expect.objectContaining({ id: bad, reason: expect.stringContaining(bad) })]);
  expect(report.deletedIds).toEqual([gone]);
  const pointers = Object.fromEntries((await scanAll()).filter((i) => i.version === CURRENT).map((i) => [i.prompt_id, i]));
  expect(pointers[bad]).toMatchObject({ status: 'ACTIVE', version_number: 1 });
  expect(pointers[gone]).toMatchObject({ status: 'DELETED' });
  expect(pointers[ok]).toMatchObject({ status: 'ACTIVE' });
}, 60_000);
