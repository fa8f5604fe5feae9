/**
 * The `cdk-prompt-serving` command: `activate`, `list-versions` and `get` on a serving table (see `USAGE`).
 * `main` takes its output streams as arguments and returns the exit code, so it runs in-process in tests.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PromptAdmin } from '../admin';
import { Invocation, UsageError, parseInvocation } from './args';
import { formatActivation, formatHistory, toJson } from './format';
import { USAGE } from './usage';

export const ExitCode = {
  /** The command did what was asked (including "already current"). */
  ok: 0,
  /** The operation failed: not found, deleted, lost a race, the table could not be used. */
  failed: 1,
  /** The command line is malformed. */
  usage: 2,
} as const;

/** Where the CLI writes (`process.stdout` / `process.stderr` fit). */
export interface CliOutput {
  write(text: string): unknown;
}

export interface CliIo {
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
}

/**
 * Runs one command line and returns its exit code. The DynamoDB client comes from the standard AWS
 * environment (`AWS_REGION`, `AWS_PROFILE`, `AWS_ENDPOINT_URL_DYNAMODB`, …).
 *
 * @example
 * const code = await main(['activate', '--table', 'prompts', '--prompt', 'greeting', '--version', '2'], process);
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let invocation: Invocation;
  try {
    invocation = parseInvocation(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(`error: ${err.message}\n\n${USAGE}`);
    return ExitCode.usage;
  }
  if (invocation.command === 'help') {
    io.stdout.write(USAGE);
    return ExitCode.ok;
  }
  const client = new DynamoDBClient({});
  try {
    io.stdout.write(await run(invocation, new PromptAdmin({ tableName: invocation.table, dynamoDBClient: client })));
    return ExitCode.ok;
  } catch (err) {
    io.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.failed;
  } finally {
    client.destroy();
  }
}

async function run(invocation: Exclude<Invocation, { command: 'help' }>, admin: PromptAdmin): Promise<string> {
  switch (invocation.command) {
    case 'activate':
      return formatActivation(await admin.activate(invocation.prompt, invocation.version, { activatedBy: invocation.by }));
    case 'list-versions': {
      const history = await admin.listVersions(invocation.prompt);
      return invocation.json ? toJson(history) : formatHistory(history);
    }
    case 'get':
      return toJson(await admin.get(invocation.prompt, { version: invocation.version }));
  }
}
