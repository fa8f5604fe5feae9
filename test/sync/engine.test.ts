import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DeleteItemCommand, DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { CATALOG_ID, CURRENT, bloomMightContain, checksum, contentOf } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { ServingTableStore } from '../../src/write/store';
import { CallCounter } from '../support/call-counter';
import { MemorySource, textPrompt } from '../support/memory-source';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let client: DynamoDBClient;
let counter: CallCounter;
let tableName: string;
let dir: string;

beforeEach(async () => {
  counter = new CallCounter();
  client = counter.attach(localDynamoDBClient());
  tableName = await createServingTable(client);
  dir = mkdtempSync(path.join(tmpdir(), 'prompts-'));
  counter.reset();
});

afterEach(async () => {
  await deleteTable(client, tableName);
  client.destroy();
  rmSync(dir, { recursive: true, force: true });
});

function engine(): SyncEngine {
  return new SyncEngine({ dynamoDBClient: client, tableName, source: new DirectoryPromptSource(dir) });
}

function file(name: string, body: string): void {
  writeFileSync(path.join(dir, name), body);
}

async function items(id: string): Promise<Record<string, any>[]> {
  const out = await client.send(new QueryCommand({
    TableName: tableName,
    KeyConditionExpression: 'prompt_id = :id',
    ExpressionAttributeValues: { ':id': { S: id } },
    ConsistentRead: true,
  }));
  return (out.Items ?? []).map(fromItem);
}

async function pointer(id: string): Promise<Record<string, any> | undefined> {
  return (await items(id)).find((i) => i.version === CURRENT);
}

describe('full sync from a prompts directory into DynamoDB Local', () => {
  test('writes a pointer and an immutable v000001 per prompt, in the wire contract', async () => {
    // GIVEN
    file('greeting.md', '---\nmodel_id: anthropic.claude-3-haiku\ninference_config: { temperature: 0.2 }\n---\nHello {{name}}, welcome to {{place}}.\n');
    file('support.yaml', 'id: support-chat\nsystem: You are helpful.\nmessages:\n  - role: user\n    content: "Question: {{question}}"\n');
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report).toMatchObject({ mode: 'full', scanned: 2, written: 2, unchanged: 0, failed: 0, catalogUpdated: true });
    const [current, v1] = [await pointer('greeting'), (await items('greeting')).find((i) => i.version === 'v000001')];
    expect(contentOf(current!)).toEqual({
      template_type: 'TEXT',
      text: 'Hello {{name}}, welcome to {{place}}.',
      input_variables: ['name', 'place'],
      model_id: 'anthropic.claude-3-haiku',
      inference_config: { temperature: 0.2 },
    });
    expect(current).toMatchObject({
      version_number: 1, latest_version_number: 1, status: 'ACTIVE', source: 'directory', schema_version: 2,
    });
    expect(current!.checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(current!.checksum).toBe(checksum(contentOf(current!)));
    expect(current!.source_checksum).toBe(current!.checksum);
    expect(Date.parse(current!.synced_at)).not.toBeNaN();
    expect(contentOf(v1!)).toEqual(contentOf(current!));
    expect(v1).toMatchObject({ version_number: 1, checksum: current!.checksum });
    expect(v1!.status).toBeUndefined();
    expect(contentOf((await pointer('support-chat'))!)).toEqual({
      template_type: 'CHAT',
      system: [{ text: 'You are helpful.' }],
      messages: [{ role: 'user', content: [{ text: 'Question: {{question}}' }] }],
      input_variables: ['question'],
    });
  });

  test('a second sync with nothing changed makes no DynamoDB write', async () => {
    // GIVEN
    for (let i = 0; i < 25; i++) file(`p${i}.md`, `Prompt ${i} for {{user}}`);
    await engine().fullSync();
    counter.reset();
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report).toMatchObject({ written: 0, unchanged: 25, deleted: 0, catalogUpdated: false });
    expect(counter.writes()).toBe(0);
    expect(counter.count('Scan')).toBe(0);
  });

  test('a changed prompt costs exactly one transaction and keeps its history', async () => {
    // GIVEN
    file('a.md', 'Version one');
    file('b.md', 'Unchanged');
    await engine().fullSync();
    file('a.md', 'Version two');
    counter.reset();
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report).toMatchObject({ written: 1, writtenIds: ['a'], unchanged: 1 });
    expect(counter.count('TransactWriteItems')).toBe(1);
    expect(counter.writes()).toBe(1);
    const all = await items('a');
    expect(all.map((i) => [i.version, i.text])).toEqual([
      ['CURRENT', 'Version two'], ['v000001', 'Version one'], ['v000002', 'Version two'],
    ]);
    expect(await pointer('a')).toMatchObject({ version_number: 2, latest_version_number: 2 });
  });

  test('a file rewritten with identical content updates the source revision only', async () => {
    // GIVEN
    file('a.json', '{"text": "Same"}');
    await engine().fullSync();
    file('a.json', '{\n  "text": "Same"\n}\n');
    counter.reset();
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report).toMatchObject({ written: 0, unchanged: 1 });
    expect(counter.count('TransactWriteItems')).toBe(0);
    expect(counter.count('UpdateItem')).toBe(1);
    expect(await pointer('a')).toMatchObject({ version_number: 1 });
  });

  test('a prompt removed from the source is marked DELETED, history kept, catalog rebuilt', async () => {
    // GIVEN
    file('keep.md', 'Keep me');
    file('drop.md', 'Drop me');
    await engine().fullSync();
    unlinkSync(path.join(dir, 'drop.md'));
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report).toMatchObject({ deleted: 1, deletedIds: ['drop'], catalogUpdated: true });
    expect(await pointer('drop')).toMatchObject({ status: 'DELETED', version_number: 1 });
    expect((await items('drop')).map((i) => i.version)).toEqual(['CURRENT', 'v000001']);
    const catalog = await new ServingTableStore(client, tableName).catalog.read();
    expect(catalog!.count).toBe(1);
    expect(bloomMightContain(catalog!.bloom, catalog!.bits, catalog!.hashes, 'keep')).toBe(true);
  });

  test('a prompt re-added after deletion becomes ACTIVE again as the next version', async () => {
    // GIVEN
    file('back.md', 'First life');
    await engine().fullSync();
    unlinkSync(path.join(dir, 'back.md'));
    await engine().fullSync();
    file('back.md', 'Second life');
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report.writtenIds).toEqual(['back']);
    expect(await pointer('back')).toMatchObject({ status: 'ACTIVE', version_number: 2, text: 'Second life' });
  });

  test('an oversized and a malformed prompt fail alone, with reasons, while the rest are written', async () => {
    // GIVEN
    file('huge.md', 'x'.repeat(410 * 1024));
    file('bad-type.yaml', 'template_type: AUDIO\ntext: hi\n');
    file('broken.yaml', 'text: [unclosed\n');
    file('ok-1.md', 'Fine {{a}}');
    file('ok-2.md', 'Also fine');
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report.written).toBe(2);
    expect(report.failed).toBe(3);
    const reasons = Object.fromEntries(report.failures.map((f) => [f.id, f.reason]));
    expect(reasons.huge).toMatch(/over DynamoDB's 409600-byte \(400 KB\) item limit/);
    expect(reasons['bad-type']).toMatch(/`template_type` must be TEXT or CHAT, got "AUDIO"/);
    expect(reasons.broken).toMatch(/^broken\.yaml: /);
    expect(report.failures.every((f) => !f.retryable)).toBe(true);
    expect(await pointer('huge')).toBeUndefined();
    expect(await pointer('ok-1')).toMatchObject({ status: 'ACTIVE' });
  });

  test('a prompt whose file becomes unreadable keeps serving its last good version', async () => {
    // GIVEN
    file('fragile.yaml', 'text: good\n');
    await engine().fullSync();
    file('fragile.yaml', 'text: [broken\n');
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report).toMatchObject({ failed: 1, deleted: 0 });
    expect(await pointer('fragile')).toMatchObject({ status: 'ACTIVE', text: 'good' });
  });

  test('the catalog holds every ACTIVE id and not the reserved catalog id itself', async () => {
    // GIVEN
    for (const id of ['alpha', 'beta', 'gamma']) file(`${id}.md`, id);
    // WHEN
    await engine().fullSync();
    // THEN
    const catalog = (await items(CATALOG_ID))[0];
    expect(catalog).toMatchObject({ version: CURRENT, count: 3, bloom_bits: 1024, bloom_hashes: 16 });
    for (const id of ['alpha', 'beta', 'gamma']) {
      expect(bloomMightContain(catalog.bloom, catalog.bloom_bits, catalog.bloom_hashes, id)).toBe(true);
    }
  });

  test('past its deadline a full sync defers the remaining prompts, and the next sync takes them', async () => {
    // GIVEN
    for (const id of ['a', 'b', 'c']) file(`${id}.md`, id);
    const late = new SyncEngine({ dynamoDBClient: client, tableName, source: new DirectoryPromptSource(dir), deadline: Date.now() - 1 });
    // WHEN
    const partial = await late.fullSync();
    const scansOfPartial = counter.count('Scan');
    const next = await engine().fullSync();
    // THEN
    expect(partial).toMatchObject({ scanned: 3, written: 0, deferred: 3, complete: false, catalogUpdated: false });
    expect(scansOfPartial).toBe(0); // deletions are left to the next complete sync
    expect(next).toMatchObject({ written: 3, deferred: 0, complete: true, catalogUpdated: true });
  });
});

describe('targeted sync of one prompt', () => {
  test('syncs only that prompt and reports not-found ids as skipped', async () => {
    // GIVEN
    file('one.md', 'One');
    file('two.md', 'Two');
    // WHEN
    const report = await engine().syncPrompt('one');
    const missing = await engine().syncPrompt('nope');
    // THEN
    expect(report).toMatchObject({ mode: 'prompt', written: 1, writtenIds: ['one'], catalogUpdated: true });
    expect(await pointer('two')).toBeUndefined();
    expect(missing).toMatchObject({ written: 0, skipped: [{ id: 'nope' }] });
  });
});

describe('bad listings and concurrent writers never take a served prompt away', () => {
  test('two files with the same prompt id: the first is served, the second fails with the reason', async () => {
    // GIVEN
    file('a.md', 'From Markdown');
    file('a.yaml', 'text: From YAML\n');
    file('b.md', 'Other');
    // WHEN
    const report = await engine().fullSync();
    // THEN
    expect(report).toMatchObject({ written: 2, failed: 1 });
    expect(report.failures[0].reason).toBe('a.yaml: prompt id "a" is already used by a.md');
    expect(await pointer('a')).toMatchObject({ text: 'From Markdown' });
  });

  test('a file whose id lives in its broken front matter keeps serving, and nothing is deleted meanwhile', async () => {
    // GIVEN a prompt whose id comes from its front matter, and one that left the source
    file('greet.md', '---\nid: support-greeting\n---\nHello {{name}}');
    file('leaving.md', 'Bye');
    await engine().fullSync();
    file('greet.md', '---\nid: support-greeting\nmodel_id: [broken\n---\nHello {{name}}');
    unlinkSync(path.join(dir, 'leaving.md'));
    // WHEN
    const report = await engine().fullSync();
    // THEN the unreadable file is reported, and no deletion is decided from an incomplete listing
    expect(report).toMatchObject({ failed: 1, deleted: 0 });
    expect(report.failures[0].id).toBe('greet');
    expect(await pointer('support-greeting')).toMatchObject({ status: 'ACTIVE', text: 'Hello {{name}}' });
    expect(await pointer('leaving')).toMatchObject({ status: 'ACTIVE' });
    // AND once the file is fixed, the next sync catches up on the deletion
    file('greet.md', '---\nid: support-greeting\n---\nHello {{name}}');
    expect(await engine().fullSync()).toMatchObject({ failed: 0, deletedIds: ['leaving'] });
  });

  test('a prompt created while a full sync runs is not deleted by it', async () => {
    // GIVEN a table holding "a" and "gone" (gone from the source since, so the full sync scans for deletions)
    const source = new MemorySource();
    source.set('a', textPrompt('a v1'));
    source.set('gone', textPrompt('bye'));
    const memoryEngine = () => new SyncEngine({ dynamoDBClient: client, tableName, source });
    await memoryEngine().fullSync();
    source.delete('gone');
    source.set('a', textPrompt('a v2'));
    // WHEN, while the full sync is between its listing and its deletion scan, "x" is created and synced
    // on its own (as a CloudTrail event would)
    let created = false;
    source.beforeFetchReturns = async () => {
      if (created) return;
      created = true;
      source.set('x', textPrompt('new'));
      await memoryEngine().syncPrompt('x');
    };
    const report = await memoryEngine().fullSync();
    // THEN "gone" is deleted, "x" stays ACTIVE and in the catalog
    expect(report.deletedIds).toEqual(['gone']);
    expect(await pointer('x')).toMatchObject({ status: 'ACTIVE', text: 'new' });
    const catalog = await new ServingTableStore(client, tableName).catalog.read();
    expect(bloomMightContain(catalog!.bloom, catalog!.bits, catalog!.hashes, 'x')).toBe(true);
    expect(catalog!.count).toBe(2);
  });

  test('a targeted sync repairs a catalog that misses an ACTIVE prompt (an earlier rebuild was cut short)', async () => {
    // GIVEN
    file('a.md', 'A');
    await engine().fullSync();
    await client.send(new DeleteItemCommand({ TableName: tableName, Key: { prompt_id: { S: CATALOG_ID }, version: { S: CURRENT } } }));
    // WHEN
    const report = await engine().syncPrompt('a');
    // THEN
    expect(report).toMatchObject({ unchanged: 1, catalogUpdated: true });
    const catalog = await new ServingTableStore(client, tableName).catalog.read();
    expect(catalog).toMatchObject({ count: 1 });
  });
});
