import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { CATALOG_ID, CURRENT, bloomMightContain } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { SyncEngine } from '../../src/sync/engine';
import { ServingTableStore } from '../../src/write/store';
import { MemorySource, textPrompt } from '../support/memory-source';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

/** Deterministic pseudo-random numbers (mulberry32), so a failing seed can be replayed. */
/* eslint-disable no-bitwise -- 32-bit integer mixing is the algorithm */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
/* eslint-enable no-bitwise */

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  client = localDynamoDBClient();
  tableName = await createServingTable(client, 'race');
});

afterAll(async () => {
  await deleteTable(client, tableName);
  client.destroy();
});

test('200 randomized racing syncs while the source changes, deletes and re-creates prompts: 0 version regressions', async () => {
  // GIVEN a source of 12 prompts whose content carries its source revision ("rev N"); the last 3 churn
  const seed = Number(process.env.RACE_SEED ?? 20261130);
  const random = rng(seed);
  const source = new MemorySource();
  const ids = Array.from({ length: 12 }, (_, i) => `prompt-${i}`);
  for (const id of ids) source.set(id, textPrompt(`${id} rev 1`));
  // Each source read returns a snapshot, then stalls for a random while before the sync uses it,
  // so slow syncs routinely try to write what the source held several revisions ago.
  source.beforeFetchReturns = () => sleep(random() * 25);

  // WHEN 200 syncs (a quarter full, the rest single-prompt, each its own engine as separate Lambda
  // invocations would be) run 20 at a time while a writer keeps changing the source
  let changes = 0;
  const churning = ids.slice(-3);
  let deletions = 0;
  const writer = (async () => {
    for (let i = 0; i < 150; i++) {
      const id = ids[Math.floor(random() * ids.length)];
      if (churning.includes(id) && source.has(id) && random() < 0.4) {
        source.delete(id);
        deletions++;
      } else {
        source.set(id, textPrompt(`${id} rev ${source.rev(id)! + 1}`));
      }
      changes++;
      await sleep(1 + random() * 4);
    }
  })();
  const syncs = Array.from({ length: 200 }, (_, i) => async () => {
    const engine = new SyncEngine({ dynamoDBClient: client, tableName, source });
    if (i % 4 === 0) await engine.fullSync();
    else await engine.syncPrompt(ids[Math.floor(random() * ids.length)]);
  });
  const reports: Promise<void>[] = [];
  for (let i = 0; i < 20; i++) {
    reports.push((async () => {
      for (let next = i; next < syncs.length; next += 20) await syncs[next]();
    })());
  }
  await Promise.all([writer, ...reports]);
  source.beforeFetchReturns = undefined;
  await new SyncEngine({ dynamoDBClient: client, tableName, source }).fullSync();

  // THEN every prompt's history is strictly increasing in source revision, gap-free, and its pointer
  // serves the source's latest revision (or is DELETED when the source no longer has it)
  const out = await client.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }));
  const byId = new Map<string, Record<string, any>[]>();
  for (const item of (out.Items ?? []).map(fromItem)) {
    if (item.prompt_id === CATALOG_ID) continue;
    byId.set(item.prompt_id as string, [...(byId.get(item.prompt_id as string) ?? []), item]);
  }
  let regressions = 0;
  let versions = 0;
  for (const id of ids) {
    if (!byId.has(id)) {
      // deleted at the source before any sync read it: nothing to serve, nothing written
      expect(source.has(id)).toBe(false);
      continue;
    }
    const history = byId.get(id)!.filter((i) => i.version !== CURRENT).sort((a, b) => a.version_number - b.version_number);
    const pointer = byId.get(id)!.find((i) => i.version === CURRENT)!;
    const revs = history.map((v) => Number(/rev (\d+)$/.exec(v.text)![1]));
    versions += history.length;
    for (let k = 1; k < revs.length; k++) if (revs[k] <= revs[k - 1]) regressions++;
    expect(history.map((v) => v.version_number)).toEqual(history.map((_, k) => k + 1));
    expect(pointer).toMatchObject({ version_number: history.length, latest_version_number: history.length });
    if (source.has(id)) {
      expect(pointer.status).toBe('ACTIVE');
      expect(pointer.text).toBe(`${id} rev ${source.rev(id)}`);
    } else {
      expect(pointer.status).toBe('DELETED');
    }
  }
  expect(changes).toBe(150);
  expect(deletions).toBeGreaterThan(0);
  expect(versions).toBeGreaterThan(ids.length); // the race really wrote successive versions
  expect(regressions).toBe(0);
  const catalog = await new ServingTableStore(client, tableName).catalog.read();
  const active = ids.filter((id) => source.has(id));
  expect(catalog!.count).toBe(active.length);
  expect(active.every((id) => bloomMightContain(catalog!.bloom, catalog!.bits, catalog!.hashes, id))).toBe(true);
}, 120_000);
