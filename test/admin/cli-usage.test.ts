import { cli } from './cli-runner';
import { ExitCode } from '../../src/cli/main';
import { USAGE } from '../../src/cli/usage';

describe('cdk-prompt-serving command line: usage', () => {
  test.each([
    [[], 'missing command'],
    [['rollback'], "unknown command 'rollback'"],
    [['activate', '--table', 't', '--prompt', 'p'], 'activate needs --version'],
    [['activate', '--table', 't', '--prompt', 'p', '--version', 'two'], "--version must be a whole number from 1 to 999999, got 'two'"],
    [['activate', '--table', 't', '--prompt', 'p', '--version=0'], "--version must be a whole number from 1 to 999999, got '0'"],
    [['get', '--table'], '--table needs a value'],
    [['get', '--table', '--prompt', 'p'], "--table needs a value, got the option-like '--prompt' (write --table=--prompt if that is the value)"],
    [['get', '--table', 't', '--prompt', '-h'], "--prompt needs a value, got the option-like '-h' (write --prompt=-h if that is the value)"],
    [['validate'], 'validate needs a DIRECTORY'],
    [['validate', 'a', 'b'], "unexpected argument 'b'"],
    [['sync', '--table', 't'], 'sync needs --directory'],
    [['get', '--table', 't', '--table', 'u', '--prompt', 'p'], '--table is given twice'],
    [['get', '--table', 't', '--prompt', 'p', 'extra'], "unexpected argument 'extra'"],
    [['list-versions', '--table', 't', '--prompt', 'p', '--by', 'x'], 'list-versions does not take --by'],
    [['list-versions', '--table', 't', '--prompt', 'p', '--json=yes'], '--json takes no value'],
  ])('%j is a usage error: exit 2, the reason and the usage on stderr', async (argv, reason) => {
    // GIVEN a command line, and no table: nothing is sent anywhere
    // WHEN
    const run = await cli(...argv);
    // THEN
    expect(run).toEqual({ code: ExitCode.usage, stdout: '', stderr: `error: ${reason}\n\n${USAGE}` });
  });

  test.each([[['--help']], [['-h']], [['help']], [['activate', '--help']], [['list', '--table', 't', '-h']]])('%j prints the usage on stdout and exits 0', async (argv) => {
    // GIVEN a request for help
    // WHEN
    const run = await cli(...argv);
    // THEN
    expect(run).toEqual({ code: ExitCode.ok, stdout: USAGE, stderr: '' });
  });
});
