import { unlinkSync } from 'node:fs';
import * as path from 'node:path';
import { bin, cli, useLocalEndpoint } from './cli-runner';
import { fullSync, readCurrent, syncVersions, useServingTable, versionItems } from './fixture';
import { ExitCode } from '../../src/cli/main';

const fx = useServingTable();
useLocalEndpoint();

describe('cdk-prompt-serving command line', () => {
  test('activate rolls a prompt back, records who did it, and says what it replaced', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two']);
    // WHEN
    const run = await cli('activate', '--table', fx.tableName, '--prompt', 'greeting', '--version', '1', '--by', 'alice');
    const again = await cli('activate', '--table', fx.tableName, '--prompt', 'greeting', '--version=1');
    // THEN
    expect(run).toEqual({
      code: ExitCode.ok,
      stdout: "Activated version 1 of prompt 'greeting' (replacing version 2; the latest version is 2).\n",
      stderr: '',
    });
    expect(again).toEqual({ code: ExitCode.ok, stdout: "Version 1 of prompt 'greeting' is already current; nothing was written.\n", stderr: '' });
    expect(await readCurrent(fx, 'greeting')).toMatchObject({ text: 'one', version_number: 1, activated_by: 'alice' });
  });

  test('a failed operation exits 1 with the reason on stderr', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one']);
    // WHEN
    const unknownVersion = await cli('activate', '--table', fx.tableName, '--prompt', 'greeting', '--version', '9');
    const noTable = await cli('get', '--table', 'no-such-table', '--prompt', 'greeting');
    // THEN
    expect(unknownVersion).toEqual({ code: ExitCode.failed, stdout: '', stderr: "error: version 9 of prompt 'greeting' not found\n" });
    expect(noTable).toMatchObject({ code: ExitCode.failed, stdout: '' });
    expect(noTable.stderr).toMatch(/^error: reading prompt 'greeting' in table 'no-such-table' failed: ResourceNotFoundException: .+\n$/);
  });

  test('list-versions prints the history as a table, marking the version CURRENT copies', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two']);
    await fx.admin.activate('greeting', 1, { activatedBy: 'alice' });
    const [v1, v2] = [...(await versionItems(fx, 'greeting')).values()];
    const { activated_at: activatedAt } = (await readCurrent(fx, 'greeting'))!;
    // WHEN
    const run = await cli('list-versions', '--table', fx.tableName, '--prompt', 'greeting');
    // THEN
    expect(run).toMatchObject({ code: ExitCode.ok, stderr: '' });
    const lines = run.stdout.split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toBe(`Prompt 'greeting': serving version 1, activated ${activatedAt} by alice; latest version 2.`);
    expect(lines[1]).toBe('');
    expect(lines[2]).toMatch(/^ {3}VERSION {2}CHECKSUM +SOURCE VERSION +SYNCED AT$/);
    expect(lines[3]).toMatch(row('*', v1));
    expect(lines[4]).toMatch(row(' ', v2));
    expect(lines[5]).toBe('');
  });

  test('list-versions says when a prompt was deleted at the source and is served to nobody', async () => {
    // GIVEN
    await syncVersions(fx, 'gone', ['one']);
    unlinkSync(path.join(fx.dir, 'gone.md'));
    await fullSync(fx);
    // WHEN
    const run = await cli('list-versions', '--table', fx.tableName, '--prompt', 'gone');
    // THEN
    expect(run).toMatchObject({ code: ExitCode.ok, stderr: '' });
    expect(run.stdout.split('\n')[0]).toBe("Prompt 'gone': DELETED at the source, served to nobody (CURRENT copies version 1); latest version 1.");
  });

  test('list-versions --json prints what the admin API returns', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two']);
    // WHEN
    const run = await cli('list-versions', '--table', fx.tableName, '--prompt', 'greeting', '--json');
    // THEN
    expect(run).toMatchObject({ code: ExitCode.ok, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual(await fx.admin.listVersions('greeting'));
  });

  test('get prints the pointer, or one version with --version, as JSON', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two']);
    // WHEN
    const current = await cli('get', '--table', fx.tableName, '--prompt', 'greeting');
    const first = await cli('get', '--table', fx.tableName, '--prompt', 'greeting', '--version', '1');
    // THEN
    expect(current).toMatchObject({ code: ExitCode.ok, stderr: '' });
    expect(JSON.parse(current.stdout)).toEqual(await readCurrent(fx, 'greeting'));
    expect(first).toMatchObject({ code: ExitCode.ok, stderr: '' });
    expect(JSON.parse(first.stdout)).toEqual((await versionItems(fx, 'greeting')).get('v000001'));
  });

  test('the executable sets its exit code and reads the endpoint from the environment', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two']);
    // WHEN
    const [listed, misused] = await Promise.all([
      bin('list-versions', '--table', fx.tableName, '--prompt', 'greeting', '--json'),
      bin('activate'),
    ]);
    // THEN
    expect(listed.code).toBe(ExitCode.ok);
    expect(JSON.parse(listed.stdout)).toMatchObject({ promptId: 'greeting', currentVersionNumber: 2 });
    expect(misused.code).toBe(ExitCode.usage);
    expect(misused.stderr).toContain('error: activate needs --table');
  });
});

/** A version-table row: the CURRENT mark, then number, short checksum, source version and sync time. */
function row(mark: string, v: Record<string, any>): RegExp {
  const cells = [String(v.version_number), v.checksum.slice(0, 'sha256:'.length + 12), v.source_version, v.synced_at];
  return new RegExp(`^\\${mark === '*' ? '*' : ' '} {2}${cells.map(escape).join(' +')}$`);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
