/**
 * End to end, sync → table → runtime client: a prompt changed, deleted or created by the SYNC becomes visible
 * to a `PromptClient` within the bounds the client documents. A real `SyncEngine` reads a prompts directory into
 * DynamoDB Local; only `Date` is faked, so the clients' clocks move without sleeping.
 *
 * The documented bounds (docs/RUNTIME.md "How a read is served", `PromptClientOptions`):
 * - a copy younger than `maxAgeSeconds` is served from memory;
 * - for `staleWhileRevalidateSeconds` after that, the old copy may still be returned (`stale: true`) while one
 *   background read refreshes it; so a read at `maxAgeSeconds + staleWhileRevalidateSeconds` or later waits for
 *   the table and sees what the sync wrote;
 * - a prompt created at the source becomes visible within `catalogMaxAgeSeconds`.
 */
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fakeDate, logGetItemKeys } from './fixtures';
import { preload, Prompt, PromptClient, PromptNotFoundError } from '../../src/runtime';
import { checksum } from '../../src/schema';
import { SyncEngine, SyncReport } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const MAX_AGE_MS = 30_000;
const STALE_WHILE_REVALIDATE_MS = 15_000;
/** The last moment an old copy may be served: past it, a read waits for the table. */
const CHANGE_BOUND_MS = MAX_AGE_MS + STALE_WHILE_REVALIDATE_MS;
/** Apart from `CHANGE_BOUND_MS`, so the catalog is not re-read in the change and deletion tests. */
const CATALOG_MAX_AGE_MS = 60_000;

let admin: DynamoDBClient;
let tableName: string;
let dir: string;
const opened: DynamoDBClient[] = [];

beforeAll(() => {
  admin = localDynamoDBClient();
});

beforeEach(async () => {
  tableName = await createServingTable(admin);
  dir = mkdtempSync(path.join(tmpdir(), 'prompts-visibility-'));
});

afterEach(async () => {
  jest.useRealTimers();
  for (const client of opened.splice(0)) client.destroy();
  await deleteTable(admin, tableName);
  rmSync(dir, { recursive: true, force: true });
});

afterAll(() => admin.destroy());

function file(name: string, body: string): void {
  writeFileSync(path.join(dir, name), body);
}

/** One full sync of the prompts directory, as the scheduled sync function runs it. */
function sync(): Promise<SyncReport> {
  return new SyncEngine({ dynamoDBClient: admin, tableName, source: new DirectoryPromptSource(dir) }).fullSync();
}

/** A client (one Lambda instance) on its own SDK client, with the keys of its GetItem calls logged. */
function newInstance() {
  const dynamoDBClient = new CallCounter().attach(localDynamoDBClient({ maxAttempts: 1 }));
  opened.push(dynamoDBClient);
  const keys = logGetItemKeys(dynamoDBClient);
  const prompts = new PromptClient({
    tableName,
    dynamoDBClient,
    maxAgeSeconds: MAX_AGE_MS / 1000,
    staleWhileRevalidateSeconds: STALE_WHILE_REVALIDATE_MS / 1000,
    catalogMaxAgeSeconds: CATALOG_MAX_AGE_MS / 1000,
  });
  return { prompts, reads: (id: string) => keys.filter((k) => k === `${id}/CURRENT`).length };
}

/** Fakes `Date` and returns a function that sets it to `ms` after now (the instant the clients first read). */
function clockFromNow(): (ms: number) => void {
  fakeDate();
  const t0 = Date.now();
  return (ms) => jest.setSystemTime(t0 + ms);
}

async function notFound(read: Promise<Prompt>): Promise<PromptNotFoundError> {
  const error = await read.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(PromptNotFoundError);
  return error as PromptNotFoundError;
}

test('a prompt changed by the sync: the cached copy before maxAgeSeconds, the new version once maxAgeSeconds + staleWhileRevalidateSeconds have passed', async () => {
  // GIVEN the sync wrote v1, and three instances read it at the same instant
  file('summary.md', 'Summarise in {{n}} sentences.');
  expect(await sync()).toMatchObject({ written: 1, writtenIds: ['summary'] });
  const at = clockFromNow();
  const [watched, lastStale, atBound] = [newInstance(), newInstance(), newInstance()];
  const v1 = await watched.prompts.getPrompt('summary');
  await lastStale.prompts.getPrompt('summary');
  await atBound.prompts.getPrompt('summary');

  // WHEN the file changes and the sync runs again
  file('summary.md', 'Summarise in {{n}} bullet points.');
  const report = await sync();

  // THEN the sync wrote version 2
  expect(report).toMatchObject({ written: 1, writtenIds: ['summary'] });
  const v2Checksum = checksum({ template_type: 'TEXT', text: 'Summarise in {{n}} bullet points.', input_variables: ['n'] });
  expect(v2Checksum).not.toBe(v1.checksum);
  // AND just before maxAgeSeconds the cached copy is served from memory, fresh
  at(MAX_AGE_MS - 1);
  await expect(watched.prompts.getPrompt('summary')).resolves.toMatchObject({ checksum: v1.checksum, stale: false, provenance: { source: 'l1' } });
  expect(v1).toMatchObject({ version: 1, stale: false });
  expect(watched.reads('summary')).toBe(1);
  // AND from maxAgeSeconds on, the old copy is returned at once, flagged stale, while one background read refreshes it
  at(MAX_AGE_MS);
  await expect(watched.prompts.getPrompt('summary')).resolves.toMatchObject({ version: 1, checksum: v1.checksum, stale: true });
  await preload(watched.prompts, ['summary']); // joins the background read
  await expect(watched.prompts.getPrompt('summary')).resolves.toMatchObject({ version: 2, checksum: v2Checksum, stale: false });
  // AND an instance that read nothing since may be served the old copy up to the last millisecond of the window
  at(CHANGE_BOUND_MS - 1);
  await expect(lastStale.prompts.getPrompt('summary')).resolves.toMatchObject({ version: 1, checksum: v1.checksum, stale: true });
  // AND once maxAgeSeconds + staleWhileRevalidateSeconds have passed, a read waits for the table and gets version 2
  at(CHANGE_BOUND_MS);
  const seen = await atBound.prompts.getPrompt('summary');
  expect(seen).toMatchObject({ id: 'summary', version: 2, checksum: v2Checksum, stale: false });
  expect(seen.content.text).toBe('Summarise in {{n}} bullet points.');
  expect(atBound.reads('summary')).toBe(2);
});

test('a prompt deleted at the source is not found once maxAgeSeconds + staleWhileRevalidateSeconds have passed', async () => {
  // GIVEN the sync wrote "retired", and two instances read it at the same instant
  file('retired.md', 'Old instructions for {{user}}.');
  file('kept.md', 'Still here.');
  await sync();
  const at = clockFromNow();
  const [lastStale, atBound] = [newInstance(), newInstance()];
  await lastStale.prompts.getPrompt('retired');
  const v1 = await atBound.prompts.getPrompt('retired');

  // WHEN the file is removed and the sync runs again
  unlinkSync(path.join(dir, 'retired.md'));
  const report = await sync();

  // THEN the sync marked it deleted
  expect(report).toMatchObject({ deleted: 1, deletedIds: ['retired'], catalogUpdated: true });
  // AND before maxAgeSeconds the cached copy is still served
  at(MAX_AGE_MS - 1);
  await expect(atBound.prompts.getPrompt('retired')).resolves.toMatchObject({ checksum: v1.checksum, stale: false, provenance: { source: 'l1' } });
  // AND up to the end of the stale-while-revalidate window the old copy may be returned, flagged stale
  at(CHANGE_BOUND_MS - 1);
  await expect(lastStale.prompts.getPrompt('retired')).resolves.toMatchObject({ version: 1, stale: true });
  // AND once maxAgeSeconds + staleWhileRevalidateSeconds have passed, it is not found, from the table's tombstone
  at(CHANGE_BOUND_MS);
  const error = await notFound(atBound.prompts.getPrompt('retired'));
  expect(error.message).toBe("prompt 'retired' not found: deleted");
  expect(atBound.reads('retired')).toBe(2);
  // AND stays not found (now from memory)
  await notFound(atBound.prompts.getPrompt('retired'));
  expect(atBound.prompts.stats().negativeHits).toBe(1);
});

/**
 * The sync wrote only "existing"; an instance loaded the catalog then and was told "fresh" does not exist;
 * then "fresh.md" was added and synced.
 */
async function createdAfterCatalogLoad() {
  file('existing.md', 'I was here first.');
  await sync();
  const at = clockFromNow();
  const instance = newInstance();
  await preload(instance.prompts, ['existing']);
  const before = await instance.prompts.getPrompt('fresh').then(() => undefined, (e: unknown) => e);
  file('fresh.md', 'Brand new {{thing}}.');
  const report = await sync();
  return { at, instance, before, report };
}

test('a prompt created by the sync: ruled out by the catalog an instance loaded before it existed, until that catalog is re-read', async () => {
  // GIVEN an instance that loaded the catalog before "fresh" existed
  // WHEN the sync creates "fresh"
  const { at, instance, before, report } = await createdAfterCatalogLoad();

  // THEN the sync wrote it and rebuilt the catalog
  expect(report).toMatchObject({ written: 1, writtenIds: ['fresh'], catalogUpdated: true });
  expect(before).toEqual(new PromptNotFoundError('fresh', undefined, 'not in the catalog'));
  // AND before catalogMaxAgeSeconds the loaded catalog still rules it out, without a read
  at(CATALOG_MAX_AGE_MS - 1);
  await notFound(instance.prompts.getPrompt('fresh'));
  expect(instance.reads('fresh')).toBe(0);
  expect(instance.prompts.stats()).toMatchObject({ catalogRejections: 2, catalogLoads: 1 });
  // AND from catalogMaxAgeSeconds on, reads under way get it once the catalog has been re-read
  at(CATALOG_MAX_AGE_MS);
  const prompt = await readUntilFound(instance.prompts, 'fresh');
  expect(prompt).toMatchObject({ id: 'fresh', version: 1, stale: false });
  expect(instance.prompts.stats().catalogLoads).toBe(2);
  expect(instance.reads('fresh')).toBe(1);
});

/**
 * Regression: past `catalogMaxAgeSeconds` an id the old filter rules out waits for the catalog's re-read instead
 * of being rejected by the stale filter, so a prompt created since is served by the very first read.
 */
test('a prompt created by the sync is served by the first read at catalogMaxAgeSeconds (documented bound)', async () => {
  // GIVEN an instance that loaded the catalog before "fresh" existed, and read nothing since
  // WHEN the sync creates "fresh"
  const { at, instance } = await createdAfterCatalogLoad();

  // THEN once catalogMaxAgeSeconds have passed, it is served
  at(CATALOG_MAX_AGE_MS);
  await expect(instance.prompts.getPrompt('fresh')).resolves.toMatchObject({ id: 'fresh', version: 1, stale: false });
});

/** Reads `id` until it is found: each read at the same (fake) instant, in real time at most 2 s. */
async function readUntilFound(prompts: PromptClient, id: string): Promise<Prompt> {
  const deadline = performance.now() + 2000;
  for (;;) {
    try {
      return await prompts.getPrompt(id);
    } catch (err) {
      if (!(err instanceof PromptNotFoundError) || performance.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
