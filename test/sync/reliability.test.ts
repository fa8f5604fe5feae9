/**
 * Sync regressions, against DynamoDB Local and the Bedrock stand-in: prompts that never came back, listings
 * trusted blindly, ids over the key limit, hand-broken catalogs and pointers. Each test failed before its fix.
 */
import { DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CATALOG_ID, CURRENT, MAX_PROMPT_ID_BYTES, bloomMightContain, isValidPromptId } from '../../src/schema';
import { fromItem, toItem } from '../../src/schema/ddb-codec';
import { SyncEngine } from '../../src/sync/engine';
import { FetchResult, SourceListing } from '../../src/sync/source';
import { BedrockPromptSource } from '../../src/sync/sources/bedrock';
import { ServingTableStore } from '../../src/write/store';
import { seedPublished } from '../support/bedrock-fixtures';
import { BedrockStandIn } from '../support/bedrock-stand-in';
import { CallCounter } from '../support/call-counter';
import { MemorySource, textPrompt } from '../support/memory-source';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let client: DynamoDBClient;
let counter: CallCounter;
let tableName: string;
let standIn: BedrockStandIn | undefined;

beforeEach(async () => {
  counter = new CallCounter();
  client = counter.attach(localDynamoDBClient());
  tableName = await createServingTable(client, 'reliability');
  counter.reset();
});

afterEach(async () => {
  await standIn?.stop();
  standIn = undefined;
  await deleteTable(client, tableName);
  client.destroy();
});

function engineOver(source: ConstructorParameters<typeof SyncEngine>[0]['source']): SyncEngine {
  return new SyncEngine({ dynamoDBClient: client, tableName, source });
}

async function startStandIn(): Promise<BedrockStandIn> {
  standIn = new BedrockStandIn({ requestsPerSecond: 1000 });
  await standIn.start();
  return standIn;
}

function bedrock(promptIds?: string[]): BedrockPromptSource {
  return new BedrockPromptSource({ client: standIn!.client({ maxAttempts: 1 }), maxRequestsPerSecond: 1000, promptIds });
}

async function raw(id: string): Promise<Record<string, any> | undefined> {
  const Key = { prompt_id: { S: id }, version: { S: CURRENT } };
  const out = await client.send(new GetItemCommand({ TableName: tableName, Key, ConsistentRead: true }));
  return out.Item && fromItem(out.Item);
}

async function setRaw(id: string, attributes: Record<string, any>): Promise<void> {
  const sets = Object.keys(attributes).map((_, i) => `#a${i} = :v${i}`);
  await client.send(new UpdateItemCommand({
    TableName: tableName,
    Key: { prompt_id: { S: id }, version: { S: CURRENT } },
    UpdateExpression: `SET ${sets.join(', ')}`,
    ExpressionAttributeNames: Object.fromEntries(Object.keys(attributes).map((k, i) => [`#a${i}`, k])),
    ExpressionAttributeValues: Object.fromEntries(Object.values(attributes).map((v, i) => [`:v${i}`, v])),
  }));
}

async function removeRaw(id: string, ...attributes: string[]): Promise<void> {
  await client.send(new UpdateItemCommand({
    TableName: tableName,
    Key: { prompt_id: { S: id }, version: { S: CURRENT } },
    UpdateExpression: `REMOVE ${attributes.map((_, i) => `#a${i}`).join(', ')}`,
    ExpressionAttributeNames: Object.fromEntries(attributes.map((k, i) => [`#a${i}`, k])),
  }));
}

/** A source whose listing can be made to come back short (one page missing), as a flaky API would. */
class ShortListingSource extends MemorySource {
  omit = new Set<string>();
  async list(): Promise<SourceListing> {
    const full = await super.list();
    return { ...full, prompts: full.prompts.filter((p) => !this.omit.has(p.id)) };
  }
}

describe('a prompt marked DELETED comes back when the source lists it again (LATEST mode)', () => {
  test('removed from promptIds and added back, with its latest version unchanged: served again', async () => {
    // GIVEN two published prompts, synced
    const bedrockStandIn = await startStandIn();
    const [a, b] = seedPublished(bedrockStandIn, 2);
    await engineOver(bedrock([a, b])).fullSync();
    // WHEN a is dropped from promptIds (marked DELETED), then added back
    const dropped = await engineOver(bedrock([b])).fullSync();
    expect(dropped.deletedIds).toEqual([a]);
    expect(await raw(a)).toMatchObject({ status: 'DELETED', source_version: '1' });
    const back = await engineOver(bedrock([a, b])).fullSync();
    // THEN it is ACTIVE again, in the catalog
    expect(back.writtenIds).toEqual([a]);
    expect(await raw(a)).toMatchObject({ status: 'ACTIVE', source_version: '1' });
    const catalog = await new ServingTableStore(client, tableName).catalog.read();
    expect(catalog!.count).toBe(2);
    expect(bloomMightContain(catalog!.bloom, catalog!.bits, catalog!.hashes, a)).toBe(true);
  });

  test('a targeted sync of a wrongly DELETED prompt brings it back', async () => {
    // GIVEN a synced prompt marked DELETED (by a bad listing, say) while Bedrock still has it
    const bedrockStandIn = await startStandIn();
    const [a] = seedPublished(bedrockStandIn, 1);
    await engineOver(bedrock()).fullSync();
    await setRaw(a, { status: { S: 'DELETED' } });
    // WHEN
    const report = await engineOver(bedrock()).syncPrompt(a);
    // THEN
    expect(report).toMatchObject({ written: 1, failed: 0 });
    expect(await raw(a)).toMatchObject({ status: 'ACTIVE' });
  });
});

describe('a listing is not proof of absence', () => {
  test('a listing page that came back short deletes nothing the source still has', async () => {
    // GIVEN three synced prompts
    const source = new ShortListingSource();
    for (const id of ['a', 'b', 'c']) source.set(id, textPrompt(id));
    await engineOver(source).fullSync();
    // WHEN the next listing leaves out b and c (a short page), while c really is gone
    source.omit = new Set(['b', 'c']);
    source.delete('c');
    const report = await engineOver(source).fullSync();
    // THEN b, confirmed by id, stays ACTIVE; only c is DELETED
    expect(report.deletedIds).toEqual(['c']);
    expect(await raw('b')).toMatchObject({ status: 'ACTIVE' });
    expect(await raw('c')).toMatchObject({ status: 'DELETED' });
  });

  test('an empty listing deletes nothing the source confirms', async () => {
    const source = new ShortListingSource();
    for (const id of ['a', 'b']) source.set(id, textPrompt(id));
    await engineOver(source).fullSync();
    source.omit = new Set(['a', 'b']);
    const report = await engineOver(source).fullSync();
    expect(report).toMatchObject({ deleted: 0, failed: 0 });
    expect((await raw('a'))!.status).toBe('ACTIVE');
    expect((await raw('b'))!.status).toBe('ACTIVE');
  });
});

describe('ids are limited in bytes of UTF-8', () => {
  const cjk = '提'.repeat(700); // 700 characters, 2,100 bytes: over DynamoDB's 2,048-byte key limit

  test('the schema rule counts bytes and rejects lone surrogates', () => {
    expect(isValidPromptId(cjk)).toBe(false);
    expect(isValidPromptId('提'.repeat(Math.floor(MAX_PROMPT_ID_BYTES / 3)))).toBe(true);
    expect(isValidPromptId('a'.repeat(MAX_PROMPT_ID_BYTES))).toBe(true);
    expect(isValidPromptId('a'.repeat(MAX_PROMPT_ID_BYTES + 1))).toBe(false);
    expect(isValidPromptId('😀'.repeat(MAX_PROMPT_ID_BYTES / 4))).toBe(true);
    expect(isValidPromptId('x\ud800y')).toBe(false);
  });

  test('a listed id over the limit fails alone; the others sync and deletions are still checked', async () => {
    // GIVEN a source listing a hostile id beside good ones, and a prompt gone since the last sync
    const source = new MemorySource();
    source.set('good', textPrompt('good'));
    source.set('leaving', textPrompt('bye'));
    await engineOver(source).fullSync();
    source.delete('leaving');
    source.set(cjk, textPrompt('hostile'));
    // WHEN
    const report = await engineOver(source).fullSync();
    // THEN
    expect(report.failures).toEqual([{ id: cjk, reason: expect.stringMatching(/at most 1024 bytes of UTF-8, got 2100/), retryable: false }]);
    expect(report).toMatchObject({ deletedIds: ['leaving'], complete: true });
    expect((await raw('good'))!.status).toBe('ACTIVE');
  });

  test('a targeted sync of such an id fails without any DynamoDB call', async () => {
    const report = await engineOver(new MemorySource()).syncPrompt(cjk);
    expect(report.failures[0]).toMatchObject({ retryable: false, reason: expect.stringMatching(/bytes of UTF-8/) });
    expect(counter.snapshot()).toEqual({});
  });
});

describe('a catalog that cannot be verified is rebuilt, never trusted', () => {
  async function syncedTable(): Promise<MemorySource> {
    const source = new MemorySource();
    for (const id of ['a', 'b', 'c']) source.set(id, textPrompt(id));
    await engineOver(source).fullSync();
    return source;
  }

  test.each([
    ['revision removed', async () => removeRaw(CATALOG_ID, 'revision')],
    ['revision string-typed', async () => setRaw(CATALOG_ID, { revision: { S: '4' } })],
    ['revision a map', async () => setRaw(CATALOG_ID, { revision: { M: { n: { N: '1' } } } })],
    ['bloom_hashes 1e8', async () => setRaw(CATALOG_ID, { bloom_hashes: { N: '100000000' } })],
    ['bits beyond the bytes', async () => setRaw(CATALOG_ID, { bloom_bits: { N: '999999' } })],
    ['all-zero filter with a positive count', async () => setRaw(CATALOG_ID, { bloom: { B: new Uint8Array(128) } })],
    ['count a string', async () => setRaw(CATALOG_ID, { count: { S: '3' } })],
  ])('%s: the next membership change rewrites it, guarded (no endless conflicts)', async (_name, breakIt) => {
    // GIVEN
    const source = await syncedTable();
    await breakIt();
    source.set('d', textPrompt('d'));
    // WHEN
    const report = await engineOver(source).fullSync();
    // THEN a consistent catalog of the four ids
    expect(report).toMatchObject({ failed: 0, catalogUpdated: true });
    const catalog = await new ServingTableStore(client, tableName).catalog.read();
    expect(catalog!.problem).toBeUndefined();
    expect(catalog!.count).toBe(4);
    expect(catalog!.revision).toBeGreaterThan(0);
    for (const id of ['a', 'b', 'c', 'd']) expect(bloomMightContain(catalog!.bloom, catalog!.bits, catalog!.hashes, id)).toBe(true);
    // AND the next sync leaves it alone
    expect(await engineOver(source).fullSync()).toMatchObject({ catalogUpdated: false });
  });

  test('an unverifiable catalog is repaired by a full sync even when nothing else changed', async () => {
    const source = await syncedTable();
    await setRaw(CATALOG_ID, { bloom_hashes: { N: '100000000' } });
    expect(await engineOver(source).fullSync()).toMatchObject({ catalogUpdated: true });
    expect((await new ServingTableStore(client, tableName).catalog.read())!.problem).toBeUndefined();
  });

  test('a targeted sync repairs an unverifiable catalog too', async () => {
    const source = await syncedTable();
    await setRaw(CATALOG_ID, { bloom_hashes: { N: '100000000' } });
    expect(await engineOver(source).syncPrompt('a')).toMatchObject({ catalogUpdated: true });
    expect((await new ServingTableStore(client, tableName).catalog.read())!.problem).toBeUndefined();
  });
});

describe('hand-broken pointers are reported for what they are and repaired from the source', () => {
  async function syncedPrompt(): Promise<MemorySource> {
    const source = new MemorySource();
    source.set('p', textPrompt('served'));
    await engineOver(source).fullSync();
    source.set('p', textPrompt('served v2'));
    await engineOver(source).fullSync(); // history v000001, v000002
    return source;
  }

  const future = new Date(Date.now() + 365 * 86_400_000).toISOString().replace('Z', '000Z');
  test.each([
    ['version_number missing', () => removeRaw('p', 'version_number'), /`version_number` must be a whole number/],
    ['latest_version_number missing and version_number a string', async () => {
      await removeRaw('p', 'latest_version_number');
      await setRaw('p', { version_number: { S: '2' } });
    }, /`version_number` must be a whole number/],
    ['latest_version_number below version_number', () => setRaw('p', { latest_version_number: { N: '1' } }), /must not be below/],
    ['status missing', () => removeRaw('p', 'status'), /`status` must be ACTIVE or DELETED/],
    ['status lower-case', () => setRaw('p', { status: { S: 'active' } }), /`status` must be ACTIVE or DELETED/],
    ['status a boolean', () => setRaw('p', { status: { BOOL: true } }), /`status` must be ACTIVE or DELETED/],
    ['revision a string', () => setRaw('p', { revision: { S: 'x' } }), /`revision` must be a whole number/],
    ['source_read_at in the future', () => setRaw('p', { source_read_at: { S: future } }), /must not be in the future/],
    ['source_read_at a number', () => setRaw('p', { source_read_at: { N: '5' } }), /`source_read_at` must be an ISO-8601/],
    ['checksum missing', () => removeRaw('p', 'checksum'), /`checksum` must be 'sha256:'/],
  ])('%s', async (_name, breakIt, reason) => {
    // GIVEN
    const source = await syncedPrompt();
    await breakIt();
    source.set('p', textPrompt('served v3'));
    // WHEN
    const report = await engineOver(source).fullSync();
    // THEN the real reason is reported, the pointer is rewritten from the source as the next free version
    expect(report.failures).toEqual([]);
    expect(report.repaired).toEqual([{ id: 'p', reason: expect.stringMatching(reason) }]);
    const pointer = await raw('p');
    expect(pointer).toMatchObject({ status: 'ACTIVE', text: 'served v3', version_number: 3, latest_version_number: 3 });
    expect(typeof pointer!.revision).toBe('number');
    expect(pointer!.source_read_at < new Date(Date.now() + 1000).toISOString().replace('Z', '000Z')).toBe(true);
    // AND the repaired pointer is healthy: the next sync changes nothing
    counter.reset();
    expect(await engineOver(source).fullSync()).toMatchObject({ written: 0, repaired: [] });
    expect(counter.writes()).toBe(0);
  });

  test('a broken pointer whose prompt is gone at the source is marked DELETED, not left broken', async () => {
    const source = await syncedPrompt();
    await setRaw('p', { status: { S: 'weird' } });
    source.delete('p');
    const report = await engineOver(source).syncPrompt('p');
    expect(report).toMatchObject({ deleted: 1, failures: [] });
    expect(await raw('p')).toMatchObject({ status: 'DELETED' });
  });

  test('a pointer whose numbers are behind its history continues after the highest version item', async () => {
    // GIVEN a pointer claiming version 1 of 1 while v000002 exists (hand-edited numbers, consistent types)
    const source = await syncedPrompt();
    await setRaw('p', { version_number: { N: '1' }, latest_version_number: { N: '1' } });
    source.set('p', textPrompt('served v3'));
    // WHEN
    const report = await engineOver(source).fullSync();
    // THEN v000003, not a lost race over v000002
    expect(report).toMatchObject({ written: 1, failed: 0 });
    expect(await raw('p')).toMatchObject({ version_number: 3, text: 'served v3' });
  });
});

describe('reports tell the truth', () => {
  test('a Bedrock prompt DynamoDB cannot store (nested 40 deep) fails, not retryable, and the rest sync', async () => {
    // GIVEN
    const bedrockStandIn = await startStandIn();
    const [good] = seedPublished(bedrockStandIn, 1);
    let deep: any = { leaf: 1 };
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const hostile = bedrockStandIn.createPrompt({
      name: 'deep',
      variants: [{
        name: 'main',
        templateType: 'TEXT',
        templateConfiguration: { text: { text: 'hi' } },
        additionalModelRequestFields: deep,
      } as any],
    });
    bedrockStandIn.createVersion(hostile);
    // WHEN
    const report = await engineOver(bedrock()).fullSync();
    // THEN
    expect(report.writtenIds).toEqual([good]);
    expect(report.failures).toEqual([{ id: hostile, reason: expect.any(String), retryable: false }]);
  });

  test('a full sync whose listing had unreadable entries is not complete', async () => {
    class FailingListing extends MemorySource {
      async list(): Promise<SourceListing> {
        const l = await super.list();
        return { ...l, failures: [{ id: 'broken', reason: 'unreadable' }] };
      }
      async fetch(id: string): Promise<FetchResult> {
        return super.fetch(id);
      }
    }
    const source = new FailingListing();
    source.set('a', textPrompt('a'));
    const report = await engineOver(source).fullSync();
    expect(report).toMatchObject({ complete: false, written: 1 });
  });
});

test('the catalog item keeps its key and wire shape after a repair', async () => {
  const source = new MemorySource();
  source.set('a', textPrompt('a'));
  await engineOver(source).fullSync();
  await client.send(new PutItemCommand({ TableName: tableName, Item: toItem({ prompt_id: CATALOG_ID, version: CURRENT, bloom: 'text', count: 1 }) }));
  await engineOver(source).fullSync();
  expect(await raw(CATALOG_ID)).toMatchObject({ bloom_bits: 1024, bloom_hashes: expect.any(Number), count: 1, schema_version: 2 });
});

describe('LATEST mode notices a deleted latest version on reconcile', () => {
  test('the served version deleted at the source: the reconcile serves the highest remaining one', async () => {
    // GIVEN a prompt with versions 1 and 2, serving 2
    const bedrockStandIn = await startStandIn();
    const [id] = seedPublished(bedrockStandIn, 1);
    bedrockStandIn.updateDraft(id, { variants: [{ ...bedrockStandIn_textVariant('second {{topic}}') }] });
    bedrockStandIn.createVersion(id);
    await engineOver(bedrock()).fullSync();
    expect(await raw(id)).toMatchObject({ source_version: '2' });
    // WHEN version 2 is deleted (the draft, all the listing shows, is unchanged) and a reconcile runs
    bedrockStandIn.deleteVersion(id, '2');
    const report = await engineOver(bedrock()).fullSync();
    // THEN Bedrock's version 1 is served again, as the next version of the table's history
    expect(report.writtenIds).toEqual([id]);
    expect(await raw(id)).toMatchObject({ status: 'ACTIVE', source_version: '1', version_number: 2 });
  });

  test('every numbered version deleted: the reconcile marks it DELETED', async () => {
    const bedrockStandIn = await startStandIn();
    const [id] = seedPublished(bedrockStandIn, 1);
    await engineOver(bedrock()).fullSync();
    bedrockStandIn.deleteVersion(id, '1');
    const report = await engineOver(bedrock()).fullSync();
    expect(report.deletedIds).toEqual([id]);
    expect(await raw(id)).toMatchObject({ status: 'DELETED' });
  });

  test('re-checks are bounded: a reconcile of 30 unchanged prompts makes at most latestChecksPerSync extra calls, no GetPrompt', async () => {
    const bedrockStandIn = await startStandIn();
    seedPublished(bedrockStandIn, 30);
    await engineOver(bedrock()).fullSync();
    bedrockStandIn.reset();
    counter.reset();
    const source = new BedrockPromptSource({ client: standIn!.client({ maxAttempts: 1 }), maxRequestsPerSecond: 1000, latestChecksPerSync: 5 });
    const report = await engineOver(source).fullSync();
    expect(report).toMatchObject({ written: 0, unchanged: 30 });
    expect(bedrockStandIn.stats().served).toEqual({ ListPrompts: 1 + 5, GetPrompt: 0 });
    expect(counter.writes()).toBe(0);
  });
});

function bedrockStandIn_textVariant(text: string): any {
  return {
    name: 'main',
    templateType: 'TEXT',
    templateConfiguration: { text: { text, inputVariables: [{ name: 'topic' }] } },
    modelId: 'anthropic.claude-3-haiku-20240307-v1:0',
  };
}
