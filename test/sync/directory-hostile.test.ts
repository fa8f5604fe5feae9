/**
 * Every way a hand-edited prompts directory can be odd fails alone with a clear reason (or is
 * read as meant), against DynamoDB Local through the engine.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { contentOf } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource, scanPromptDirectory } from '../../src/sync/sources/directory';
import { checkPromptDirectory } from '../../src/sync/sources/directory-check';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let client: DynamoDBClient;
let tableName: string;
let dir: string;

beforeEach(async () => {
  client = localDynamoDBClient();
  tableName = await createServingTable(client, 'dir');
  dir = mkdtempSync(path.join(tmpdir(), 'hostile-prompts-'));
});

afterEach(async () => {
  await deleteTable(client, tableName);
  client.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const sync = () => new SyncEngine({ dynamoDBClient: client, tableName, source: new DirectoryPromptSource(dir) }).fullSync();
const file = (name: string, body: string | Buffer) => writeFileSync(path.join(dir, name), body);

async function items(id: string): Promise<Record<string, any>[]> {
  const out = await client.send(new QueryCommand({
    TableName: tableName, KeyConditionExpression: 'prompt_id = :id', ExpressionAttributeValues: { ':id': { S: id } }, ConsistentRead: true,
  }));
  return (out.Items ?? []).map(fromItem);
}

test('a UTF-8 byte order mark before the front matter is ignored', async () => {
  file('bom.md', '\ufeff---\nid: with-bom\nmodel_id: m\n---\nHello {{name}}');
  const report = await sync();
  expect(report).toMatchObject({ written: 1, failed: 0 });
  expect(contentOf((await items('with-bom')).find((i) => i.version === 'CURRENT')!)).toMatchObject({ text: 'Hello {{name}}', model_id: 'm' });
});

test.each(['status', 'source', 'version', 'checksum', 'version_number', 'synced_at', 'revision'])(
  'a key named %s fails that prompt with the reason, and never reaches a version item', async (key) => {
    file('bad.md', `---\n${key}: DELETED\n---\nHi`);
    file('good.md', 'Fine');
    const report = await sync();
    expect(report.writtenIds).toEqual(['good']);
    expect(report.failures).toEqual([{ id: 'bad', reason: expect.stringContaining(`the key \`${key}\` is reserved: an attribute the table`), retryable: false }]);
    expect(await items('bad')).toEqual([]);
  });

test('keys named like Object.prototype members are kept as ordinary keys', async () => {
  file('proto.yaml', 'text: Hi\ntoString: a\nconstructor: b\nhasOwnProperty: c\nvalueOf: d\n');
  const report = await sync();
  expect(report).toMatchObject({ written: 1, failed: 0 });
  const pointer = (await items('proto')).find((i) => i.version === 'CURRENT')!;
  expect(contentOf(pointer)).toMatchObject({ toString: 'a', constructor: 'b', hasOwnProperty: 'c', valueOf: 'd', text: 'Hi' });
});

test('a __proto__ key fails that prompt instead of replacing a prototype', async () => {
  file('evil.json', '{"text": "Hi", "__proto__": {"polluted": true}}');
  const report = await sync();
  expect(report.failures).toEqual([{ id: 'evil', reason: expect.stringContaining('the key `__proto__` is not allowed'), retryable: false }]);
  expect(({} as any).polluted).toBeUndefined();
});

test('binary files fail as not text instead of being served as replacement characters', async () => {
  file('image.md', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe, 0x00]));
  file('nul.md', Buffer.from('Hello\u0000world'));
  file('ok.md', 'Fine');
  const report = await sync();
  expect(report.writtenIds).toEqual(['ok']);
  const reasons = Object.fromEntries(report.failures.map((f) => [f.id, f.reason]));
  expect(reasons.image).toMatch(/not UTF-8 text/);
  expect(reasons.nul).toMatch(/NUL characters/);
});

test('dangling symlinks, symlink loops and links back to a parent are reported; the rest sync', async () => {
  // GIVEN
  file('ok.md', 'Fine');
  mkdirSync(path.join(dir, 'sub'));
  writeFileSync(path.join(dir, 'sub', 'inner.md'), 'Inner');
  symlinkSync(path.join(dir, 'missing.md'), path.join(dir, 'dangling.md'));
  symlinkSync(path.join(dir, 'loop-a.md'), path.join(dir, 'loop-b.md'));
  symlinkSync(path.join(dir, 'loop-b.md'), path.join(dir, 'loop-a.md'));
  symlinkSync(dir, path.join(dir, 'sub', 'up'));
  // WHEN
  const scan = scanPromptDirectory(dir);
  const report = await sync();
  // THEN
  expect(scan.files).toEqual(['ok.md', 'sub/inner.md']);
  const reasons = Object.fromEntries(scan.problems.map((f) => [f.file, f.reason]));
  expect(reasons['dangling.md']).toMatch(/dangling symbolic link/);
  expect(reasons['loop-a.md']).toMatch(/symbolic link loop/);
  expect(reasons['sub/up']).toMatch(/leads back to a folder already read/);
  expect(report.writtenIds.sort()).toEqual(['ok', 'sub/inner']);
  expect(report.complete).toBe(false); // an unreadable entry may hide an id: no deletions from this listing
  expect(report.failures.map((f) => f.id).sort()).toEqual(['dangling.md', 'loop-a.md', 'loop-b.md', 'sub/up']);
  expect(checkPromptDirectory(dir).problems.map((p) => p.file)).toEqual(['dangling.md', 'loop-a.md', 'loop-b.md', 'sub/up']);
});
