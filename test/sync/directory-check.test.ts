/**
 * The synth-time check (and `validate`) and the sync apply the same rules: over one directory of good and bad
 * prompt files, the files the check rejects are exactly the files the real sync fails, and the rest sync.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource, scanPromptDirectory } from '../../src/sync/sources/directory';
import { checkPromptFiles } from '../../src/sync/sources/directory-check';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const FILES: Record<string, string> = {
  'good.md': 'Hello {{name}}',
  'chat.yaml': 'messages:\n  - role: user\n    content: Hi {{name}}\n',
  'broken.yaml': 'text: [unclosed\n',
  'broken.json': '{ nope',
  'voice.yaml': 'template_type: VOICE\ntext: hi\n',
  'empty-chat.json': '{"messages": []}',
  'bad-vars.yaml': 'text: hi\ninput_variables: 3\n',
  'front.md': '---\n- a list, not a mapping\n---\nBody',
  'huge.md': 'x'.repeat(410 * 1024),
};

const ddb = localDynamoDBClient();
let dir: string;
let tableName: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-rules-'));
  for (const [file, text] of Object.entries(FILES)) fs.writeFileSync(path.join(dir, file), text);
  tableName = await createServingTable(ddb, 'rules');
});

afterAll(async () => {
  await deleteTable(ddb, tableName);
  ddb.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the check rejects exactly the files the sync fails', async () => {
  // WHEN
  const files = scanPromptDirectory(dir).files;
  const rejected = checkPromptFiles(dir, files).map((p) => p.file).sort();
  const report = await new SyncEngine({ dynamoDBClient: ddb, tableName, source: new DirectoryPromptSource(dir) }).fullSync();
  // THEN
  const failedIds = report.failures.map((f) => f.id).sort();
  expect(rejected).toEqual(['bad-vars.yaml', 'broken.json', 'broken.yaml', 'empty-chat.json', 'front.md', 'huge.md', 'voice.yaml']);
  expect(failedIds).toEqual(rejected.map((f) => f.replace(/\.[^.]+$/, '')).sort());
  expect(report.writtenIds.sort()).toEqual(['chat', 'good']);
});
