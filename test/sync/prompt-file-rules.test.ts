/**
 * A hostile prompt file fails alone, with the same reason, in `validate` (the CLI), at synth
 * (`PromptSource.fromDirectory`) and in the sync (the engine over DynamoDB Local); the other files keep syncing.
 * Each case failed before its fix in at least one of the three.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { PromptSource } from '../../src';
import { validateDirectory } from '../../src/cli/commands';
import { SyncEngine } from '../../src/sync/engine';
import { BedrockPromptSource } from '../../src/sync/sources/bedrock';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { newServingTable, newStack, tempDirectory } from '../construct/util';
import { seedPublished } from '../support/bedrock-fixtures';
import { BedrockStandIn } from '../support/bedrock-stand-in';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  client = localDynamoDBClient();
});

afterAll(() => client.destroy());

beforeEach(async () => {
  tableName = await createServingTable(client, 'rules');
});

afterEach(async () => {
  await deleteTable(client, tableName);
});

let nested = 'leaf: 1\n';
for (let i = 0; i < 40; i++) nested = `d:\n${nested.replace(/^/gm, '  ')}`;

/** Each case: the bad file, its content (or a symlink target), the prompt id the sync reports, the reason. */
const CASES: [string, string, { file: string; text?: string; link?: string }, string, RegExp][] = [
  ['a nested __proto__ key (JSON)', 'proto', { file: 'proto.json', text: '{"text": "Hi", "inference_config": {"__proto__": {"polluted": true}}}' }, 'proto', /`inference_config\.__proto__`.*not allowed/],
  ['a __proto__ key in a message (YAML)', 'proto-msg', { file: 'proto-msg.yaml', text: 'messages:\n  - role: user\n    content: Hi\n    __proto__:\n      polluted: true\n' }, 'proto-msg', /`messages\[0\]\.__proto__`.*not allowed/],
  ['an empty key deep inside', 'empty-key', { file: 'empty-key.yaml', text: 'text: Hi\nmetadata:\n  "": x\n' }, 'empty-key', /`metadata` holds an empty key/],
  ['a dangling symbolic link', 'dangling', { file: 'dangling.md', link: 'missing.md' }, 'dangling.md', /dangling symbolic link/],
  ['a symbolic link loop', 'loop', { file: 'loop.md', link: 'loop.md' }, 'loop.md', /symbolic link loop/],
  ['`id` and `prompt_id` that disagree', 'ambiguous', { file: 'ambiguous.yaml', text: 'id: one\nprompt_id: other\ntext: Hi\n' }, 'ambiguous', /`id` \("one"\) and `prompt_id` \("other"\) disagree/],
  ['two spellings of one key', 'spellings', { file: 'spellings.yaml', text: 'text: Hi\ninputVariables: [a]\ninput_variables: [b]\n' }, 'spellings', /`inputVariables` and `input_variables` both give `input_variables`/],
  ['a future sync timestamp', 'future', { file: 'future.md', text: '---\nsource_read_at: "2099-01-01T00:00:00.000000Z"\n---\nHi' }, 'future', /the key `source_read_at` is reserved: an attribute the table/],
  ['an activation stamped in the future', 'activated', { file: 'activated.yaml', text: 'text: Hi\nactivated_at: 2999-01-01T00:00:00Z\n' }, 'activated', /the key `activated_at` is reserved: an attribute the table/],
  ['an absurd version number', 'vn', { file: 'vn.yaml', text: 'text: Hi\nversion_number: 1e400\n' }, 'vn', /the key `version_number` is reserved: an attribute the table/],
  ['a number above DynamoDB\'s range', 'huge-number', { file: 'huge-number.yaml', text: 'text: Hi\ninference_config:\n  maxTokens: 1e200\n' }, 'huge-number', /`inference_config\.maxTokens`.*1e\+200.*DynamoDB/],
  ['a number below DynamoDB\'s range', 'tiny-number', { file: 'tiny-number.json', text: '{"text": "Hi", "inference_config": {"topP": 1e-200}}' }, 'tiny-number', /`inference_config\.topP`.*1e-200.*DynamoDB/],
  ['an infinite number', 'inf', { file: 'inf.yaml', text: 'text: Hi\nweights: [1, .inf]\n' }, 'inf', /`weights\[1\]`.*Infinity/],
  ['nesting deeper than DynamoDB stores', 'deep', { file: 'deep.yaml', text: `text: Hi\n${nested}` }, 'deep', /nested more than 31 levels deep/],
];

describe.each(CASES)('%s', (_name, _key, bad, syncId, reason) => {
  let dir: string;

  beforeEach(() => {
    dir = tempDirectory({ 'good.md': 'Hello {{name}}', ...(bad.text !== undefined ? { [bad.file]: bad.text } : {}) });
    if (bad.link !== undefined) fs.symlinkSync(path.join(dir, bad.link), path.join(dir, bad.file));
  });

  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('validate reports it, and only it', async () => {
    const result = await validateDirectory(dir);
    expect(result.problems).toEqual([expect.stringMatching(new RegExp(`^${escape(bad.file)}: .*${reason.source}`))]);
  });

  test('synth fails naming it; with allowInvalidPromptFiles the rest deploys with one warning', () => {
    expect(() => PromptSource.fromDirectory(dir)).toThrow(new RegExp(`1 prompt file\\(s\\) cannot be synced:\\n {2}${escape(bad.file)}: .*${reason.source}`));
    const stack = newStack();
    newServingTable(stack, { source: PromptSource.fromDirectory(dir, { allowInvalidPromptFiles: true }) });
    Template.fromStack(stack); // stages the prompts layer: no raw ELOOP/ENOENT
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp(escape(bad.file)));
    expect(warnings).toHaveLength(1);
  });

  test('the sync fails it alone, with the reason, and writes the others', async () => {
    const report = await new SyncEngine({ dynamoDBClient: client, tableName, source: new DirectoryPromptSource(dir) }).fullSync();
    expect(report.writtenIds).toEqual(['good']);
    expect(report.failures).toEqual([{ id: syncId, reason: expect.stringMatching(reason), retryable: false }]);
    expect(({} as any).polluted).toBeUndefined();
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

test('a Bedrock prompt with a nested __proto__ key fails alone with the same reason, instead of losing the key', async () => {
  // GIVEN a published prompt whose variant carries `{"__proto__": …}` in a document field, beside a good one
  const standIn = new BedrockStandIn({ requestsPerSecond: 1000 });
  await standIn.start();
  try {
    const [good] = seedPublished(standIn, 1);
    const hostile = standIn.createPrompt({
      name: 'proto',
      variants: [{
        name: 'main',
        templateType: 'TEXT',
        templateConfiguration: { text: { text: 'hi' } },
        additionalModelRequestFields: JSON.parse('{"__proto__": {"polluted": true}}'),
      } as any],
    });
    standIn.createVersion(hostile);
    // WHEN
    const source = new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }), maxRequestsPerSecond: 1000 });
    const report = await new SyncEngine({ dynamoDBClient: client, tableName, source }).fullSync();
    // THEN
    expect(report.writtenIds).toEqual([good]);
    expect(report.failures).toEqual([{
      id: hostile, reason: expect.stringMatching(/the key `additional_model_request_fields\.__proto__` is not allowed/), retryable: false,
    }]);
  } finally {
    await standIn.stop();
  }
});
