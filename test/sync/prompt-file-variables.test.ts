/**
 * Prompt files declare their variables (front matter `variables:`, or `input_variables` in any file) and may opt
 * variables in to JSON values (`json_variables:`). A placeholder the declaration misses fails the file in `validate`,
 * at synth and in the sync alike; a declared name the template never uses, and a CHAT variable placed before a cache
 * point, are warnings (`validate` prints them and exits 0; synth adds a warning annotation).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { PromptServingTable, PromptSource } from '../../src';
import { ExitCode } from '../../src/cli/main';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource, scanPromptDirectory } from '../../src/sync/sources/directory';
import { checkPromptDirectory, checkPromptFiles } from '../../src/sync/sources/directory-check';
import { cli } from '../admin/cli-runner';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const CACHED_CHAT = [
  'system:',
  '  - You answer questions about the attached handbook.',
  '  - cachePoint: { type: default }',
  'messages:',
  '  - role: user',
  '    content:',
  '      - "Handbook: ..."',
  '      - cachePoint: { type: default }',
  '      - "{{question}}"',
  '',
].join('\n');

const LATE_CACHE_POINT = [
  'system:',
  '  - You help {{customer}}.',
  '  - cachePoint: { type: default }',
  'messages:',
  '  - role: user',
  '    content: "{{question}}"',
  '',
].join('\n');

const FILES: Record<string, string> = {
  'declared.md': '---\nvariables: [name, product]\njson_variables: [product]\n---\nHi {{name}}, about {{product}}',
  'undeclared.md': '---\nvariables: [name]\n---\nHi {{name}} {{nmae}} {{other}}',
  'unused.md': '---\nvariables: [name, tone]\n---\nHi {{name}}',
  'bad-json-vars.md': '---\njson_variables: product\n---\nHi {{product}}',
  'cached-chat.yaml': CACHED_CHAT,
  'late-cache-point.yaml': LATE_CACHE_POINT,
};

const ddb = localDynamoDBClient();
let dir: string;
let tableName: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-variables-'));
  for (const [file, text] of Object.entries(FILES)) fs.writeFileSync(path.join(dir, file), text);
  tableName = await createServingTable(ddb, 'vars');
});

afterAll(async () => {
  await deleteTable(ddb, tableName);
  ddb.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a placeholder the declaration misses fails the file, with the same reason in the check and the sync', async () => {
  // WHEN
  const problems = checkPromptFiles(dir, scanPromptDirectory(dir).files);
  const report = await new SyncEngine({ dynamoDBClient: ddb, tableName, source: new DirectoryPromptSource(dir) }).fullSync();
  // THEN
  expect(problems).toEqual([
    { file: 'bad-json-vars.md', reason: '`json_variables` must be a list of names' },
    { file: 'undeclared.md', reason: 'the template uses {{nmae}}, {{other}} but `variables` does not declare them: add them to `variables`, or fix the placeholder' },
  ]);
  expect(report.failures.map((f) => [f.id, f.reason]).sort()).toEqual(problems.map((p) => [p.file.replace(/\.md$/, ''), `${p.file}: ${p.reason}`]));
  expect(report.writtenIds.sort()).toEqual(['cached-chat', 'declared', 'late-cache-point', 'unused']);
});

test('declared variables and json_variables are stored as the file gives them', () => {
  // WHEN
  const source = new DirectoryPromptSource(dir);
  return source.fetch('declared').then((result) => {
    // THEN
    expect(result.kind === 'prompt' && result.prompt.content).toMatchObject({ input_variables: ['name', 'product'], json_variables: ['product'] });
  });
});

test('warnings: a declared name never used, and a variable before a cache point; a CHAT prompt with variables after its cache points has none', () => {
  // WHEN
  const { warnings } = checkPromptDirectory(dir);
  // THEN
  expect(warnings).toEqual([
    {
      file: 'late-cache-point.yaml',
      reason: 'the cache point at system[1] follows the variable {{customer}} in system[0]: Bedrock\'s prompt cache then misses whenever that variable '
        + 'changes; move variables after the last cache point, or the cache point before the first variable',
    },
    { file: 'unused.md', reason: '`variables` declares \'tone\' but the template never uses it (render accepts it without requiring it)' },
  ]);
});

test('validate prints the problems, then the warnings', async () => {
  // WHEN
  const run = await cli('validate', dir);
  // THEN
  expect(run.code).toBe(ExitCode.failed);
  expect(run.stderr).toContain('undeclared.md: the template uses {{nmae}}');
  expect(run.stderr).toContain('warning: late-cache-point.yaml: the cache point at system[1] follows the variable {{customer}}');
  expect(run.stderr).toContain('warning: unused.md: `variables` declares \'tone\'');
});

test('validate exits 0 on warnings alone, and prints them', async () => {
  // GIVEN
  const clean = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-variables-clean-'));
  fs.writeFileSync(path.join(clean, 'late-cache-point.yaml'), LATE_CACHE_POINT);
  fs.writeFileSync(path.join(clean, 'cached-chat.yaml'), CACHED_CHAT);
  try {
    // WHEN
    const run = await cli('validate', clean);
    // THEN
    expect(run.code).toBe(ExitCode.ok);
    expect(run.stdout).toBe('warning: late-cache-point.yaml: the cache point at system[1] follows the variable {{customer}} in system[0]: Bedrock\'s '
      + 'prompt cache then misses whenever that variable changes; move variables after the last cache point, or the cache point before the first '
      + `variable\n${clean}: 2 prompt file(s), all valid.\n`);
  } finally {
    fs.rmSync(clean, { recursive: true, force: true });
  }
});

test('synth warns about a variable before a cache point (and still deploys)', () => {
  // GIVEN
  const clean = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-variables-synth-'));
  fs.writeFileSync(path.join(clean, 'late-cache-point.yaml'), LATE_CACHE_POINT);
  try {
    const stack = new Stack(new App(), 'Stack');
    // WHEN
    new PromptServingTable(stack, 'Prompts', { source: PromptSource.fromDirectory(clean) });
    // THEN
    const warnings = Annotations.fromStack(stack).findWarning('*',
      Match.stringLikeRegexp('late-cache-point\\.yaml: the cache point at system\\[1\\] follows the variable \\{\\{customer\\}\\}'));
    expect(warnings).toHaveLength(1);
  } finally {
    fs.rmSync(clean, { recursive: true, force: true });
  }
});

test('the sync sees the placeholders render fills: a tab or line breaks inside the braces count, object keys do not', async () => {
  // GIVEN placeholders with a tab and with line breaks inside the braces, and a placeholder-like object key
  const odd = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-variables-odd-'));
  fs.writeFileSync(path.join(odd, 'spaced.yaml'), [
    'variables: [question]',
    'system: ["Answer as {{\\ttone}}."]',
    'messages:',
    '  - role: user',
    '    content: "{{\\n  question\\n}}"',
    '',
  ].join('\n'));
  fs.writeFileSync(path.join(odd, 'keyed.yaml'), [
    'variables: [question, keyname]',
    'messages:',
    '  - role: user',
    '    content:',
    '      - text: "{{question}}"',
    '        "{{keyname}}": x',
    '',
  ].join('\n'));
  fs.writeFileSync(path.join(odd, 'defaults.yaml'), [
    'system: ["Answer as {{\\ttone}}."]',
    'messages:',
    '  - role: user',
    '    content: "{{\\n  question\\n}} {{tone}}"',
    '',
  ].join('\n'));
  try {
    // WHEN
    const { problems, warnings } = checkPromptDirectory(odd);
    const defaults = await new DirectoryPromptSource(odd).fetch('defaults');
    // THEN the tab-spaced {{tone}} is undeclared; the key {{keyname}} is no use of `keyname`
    expect(problems).toEqual([
      { file: 'spaced.yaml', reason: 'the template uses {{tone}} but `variables` does not declare it: add it to `variables`, or fix the placeholder' },
    ]);
    expect(warnings).toEqual([
      { file: 'keyed.yaml', reason: '`variables` declares \'keyname\' but the template never uses it (render accepts it without requiring it)' },
    ]);
    // AND the default input_variables are the placeholders in render's order: system, then messages
    expect(defaults.kind === 'prompt' && defaults.prompt.content.input_variables).toEqual(['tone', 'question']);
  } finally {
    fs.rmSync(odd, { recursive: true, force: true });
  }
});
