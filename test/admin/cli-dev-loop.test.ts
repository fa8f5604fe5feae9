/** The dev-loop commands (`list`, `sync --directory`, `validate`) and the CLI's output hygiene, on DynamoDB Local. */
import { unlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { bin, cli, useLocalEndpoint } from './cli-runner';
import { fullSync, readCurrent, syncVersions, useServingTable, writePrompt } from './fixture';
import { ExitCode } from '../../src/cli/main';

const fx = useServingTable();
useLocalEndpoint();

const ISO = /\d{4}-\d{2}-\d{2}T[\d:.]+Z/;

describe('cdk-prompt-serving sync --directory', () => {
  test('runs the real engine: writes new prompts, then nothing while unchanged, then marks removed ones DELETED', async () => {
    // GIVEN
    writePrompt(fx, 'greeting', 'Hello {{name}}');
    writePrompt(fx, 'farewell', 'Bye {{name}}');
    // WHEN
    const first = await cli('sync', '--table', fx.tableName, '--directory', fx.dir);
    const again = await cli('sync', '--table', fx.tableName, '--directory', fx.dir);
    writePrompt(fx, 'greeting', 'Hi {{name}}');
    const changed = await cli('sync', '--table', fx.tableName, '--directory', fx.dir);
    unlinkSync(path.join(fx.dir, 'farewell.md'));
    const removed = await cli('sync', '--table', fx.tableName, '--directory', fx.dir);
    // THEN
    expect(first).toEqual({ code: ExitCode.ok, stdout: 'Synced 2 prompt(s): 2 written, 0 unchanged, 0 marked deleted, 0 failed.\n', stderr: '' });
    expect(again.stdout).toBe('Synced 2 prompt(s): 0 written, 2 unchanged, 0 marked deleted, 0 failed.\n');
    expect(changed.stdout).toBe('Synced 2 prompt(s): 1 written, 1 unchanged, 0 marked deleted, 0 failed.\n');
    expect(removed.stdout).toBe('Synced 1 prompt(s): 0 written, 1 unchanged, 1 marked deleted, 0 failed.\n');
    expect(await readCurrent(fx, 'greeting')).toMatchObject({ text: 'Hi {{name}}', version_number: 2, status: 'ACTIVE' });
    expect(await readCurrent(fx, 'farewell')).toMatchObject({ status: 'DELETED' });
  });

  test('a file that cannot be synced fails the command (exit 1) with the file and the reason; the rest are written', async () => {
    // GIVEN
    writePrompt(fx, 'greeting', 'Hello');
    writeFileSync(path.join(fx.dir, 'broken.json'), '{ nope');
    // WHEN
    const run = await cli('sync', '--table', fx.tableName, '--directory', fx.dir);
    // THEN
    expect(run.code).toBe(ExitCode.failed);
    // (an unreadable file may hold any id, so the sync checks no deletions this run: said, and the next run heals)
    expect(run.stdout).toMatch(/^Synced 1 prompt\(s\): 1 written, 0 unchanged, 0 marked deleted, 1 failed \(incomplete: deletions were not checked\)\.\nfailed: broken: broken\.json: .+\n$/);
    expect(await readCurrent(fx, 'greeting')).toMatchObject({ text: 'Hello' });
  });
});

describe('cdk-prompt-serving list', () => {
  test('lists every prompt with its serving version, status and sync time, sorted by id, without the catalog', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two']);
    writePrompt(fx, 'answer', 'Answer {{q}}');
    await fullSync(fx);
    // WHEN
    const run = await cli('list', '--table', fx.tableName);
    const json = await cli('list', '--table', fx.tableName, '--json');
    // THEN
    expect(run.code).toBe(ExitCode.ok);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^PROMPT\s+VERSION\s+STATUS\s+SYNCED AT$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3))).toEqual([['answer', '1', 'ACTIVE'], ['greeting', '2', 'ACTIVE']]);
    expect(JSON.parse(json.stdout)).toEqual([
      { promptId: 'answer', versionNumber: 1, status: 'ACTIVE', syncedAt: expect.stringMatching(ISO) },
      { promptId: 'greeting', versionNumber: 2, status: 'ACTIVE', syncedAt: expect.stringMatching(ISO) },
    ]);
  });

  test('an empty table says so', async () => {
    expect(await cli('list', '--table', fx.tableName)).toEqual({ code: ExitCode.ok, stdout: 'No prompts in this table.\n', stderr: '' });
  });
});

describe('cdk-prompt-serving validate', () => {
  test('exit 1 and one line per bad file, by the synth rules', async () => {
    // GIVEN
    writePrompt(fx, 'greeting', 'Hello');
    writeFileSync(path.join(fx.dir, 'broken.yaml'), 'text: [unclosed\n');
    writeFileSync(path.join(fx.dir, 'voice.yaml'), 'template_type: VOICE\ntext: hi\n');
    // WHEN
    const run = await bin('validate', fx.dir);
    // THEN
    expect(run.code).toBe(ExitCode.failed);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^broken\.yaml: \S/);
    expect(lines[1]).toBe('voice.yaml: `template_type` must be TEXT or CHAT, got "VOICE"');
  });

  test('a valid directory passes (exit 0); a missing or empty one fails', async () => {
    writePrompt(fx, 'greeting', 'Hello');
    expect(await cli('validate', fx.dir)).toEqual({ code: ExitCode.ok, stdout: `${fx.dir}: 1 prompt file(s), all valid.\n`, stderr: '' });
    expect(await cli('validate', path.join(fx.dir, 'nope'))).toEqual({ code: ExitCode.failed, stdout: '', stderr: `${path.join(fx.dir, 'nope')}: not a directory\n` });
  });

  test('the examples shipped in the repository are valid', async () => {
    expect((await cli('validate', path.join(__dirname, '../../examples/prompts'))).code).toBe(ExitCode.ok);
  });
});

describe('output hygiene', () => {
  test('terminal escapes stored in the table are printed as visible \\u escapes, never raw', async () => {
    // GIVEN an operator name and a prompt id carrying escape sequences (clear screen, OSC title, C1 CSI, bidi override)
    await syncVersions(fx, 'greeting', ['one', 'two']);
    const hostile = 'mallory\u001b[2J\u001b]0;pwned\u0007\u009b31m\u202e';
    await cli('activate', '--table', fx.tableName, '--prompt', 'greeting', '--version', '1', `--by=${hostile}`);
    await fx.client.send(new PutItemCommand({
      TableName: fx.tableName,
      Item: { prompt_id: { S: 'evil\u001b[31m' }, version: { S: 'CURRENT' }, version_number: { N: '1' }, status: { S: 'ACTIVE' }, synced_at: { S: 'x\u001b[0m' } },
    }));
    // WHEN
    const outputs = [
      await cli('list-versions', '--table', fx.tableName, '--prompt', 'greeting'),
      await cli('list-versions', '--table', fx.tableName, '--prompt', 'greeting', '--json'),
      await cli('get', '--table', fx.tableName, '--prompt', 'greeting'),
      await cli('list', '--table', fx.tableName),
      await cli('list', '--table', fx.tableName, '--json'),
    ];
    // THEN
    for (const run of outputs) {
      expect(run.code).toBe(ExitCode.ok);
      expect(run.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    }
    expect(outputs[0].stdout).toContain('by mallory\\u001b[2J\\u001b]0;pwned\\u0007\\u009b31m\\u202e');
    expect(JSON.parse(outputs[2].stdout).activated_by).toBe(hostile); // JSON stays valid and lossless
    expect(outputs[3].stdout).toContain('evil\\u001b[31m');
    expect(JSON.parse(outputs[4].stdout)[0].promptId).toBe('evil\u001b[31m');
  });

  test('get prints keys in sorted order, the same every time', async () => {
    await syncVersions(fx, 'greeting', ['Hello {{name}}']);
    const run = await cli('get', '--table', fx.tableName, '--prompt', 'greeting');
    const keys = Object.keys(JSON.parse(run.stdout));
    expect(keys).toEqual([...keys].sort());
    expect(keys).toContain('version_number');
  });
});
