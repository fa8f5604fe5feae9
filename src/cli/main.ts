/**
 * The `cdk-prompt-serving` command: `activate`, `list-versions`, `get`, `list` and `sync` on a serving table, and
 * `validate` of a prompts-as-code directory (see `USAGE`).
 * `main` takes its output streams as arguments and returns the exit code, so it runs in-process in tests.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PromptAdmin } from '../admin';
import { Invocation, ReleaseMove, UsageError, parseInvocation } from './args';
import { listPrompts, syncDirectory, validateDirectory } from './commands';
import { formatActivation, formatAudit, formatHistory, formatRelease, formatListing, formatSyncReport, formatValidation, toJson, toSortedJson } from './format';
import { CliIo, printable, printableBlock } from './terminal';
import { runTypes } from './types';
import { USAGE } from './usage';

export const ExitCode = {
  /** The command did what was asked (including "already current"). */
  ok: 0,
  /** The operation failed: not found, deleted, lost a race, the table could not be used. */
  failed: 1,
  /** The command line is malformed. */
  usage: 2,
} as const;

export type { CliIo, CliOutput } from './terminal';

/**
 * Runs one command line and returns its exit code. The DynamoDB client comes from the standard AWS
 * environment (`AWS_REGION`, `AWS_PROFILE`, `AWS_ENDPOINT_URL_DYNAMODB`, …).
 *
 * @example
 * const code = await main(['activate', '--table', 'prompts', '--prompt', 'greeting', '--version', '2'], process);
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv[0] === 'types') return runTypes(argv.slice(1), io); // typed prompts: src/cli/types.ts
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
  if (invocation.command === 'validate') {
    const result = await validateDirectory(invocation.directory);
    (result.problems.length > 0 ? io.stderr : io.stdout).write(formatValidation(invocation.directory, result));
    return result.problems.length > 0 ? ExitCode.failed : ExitCode.ok;
  }
  if (isReleaseMove(invocation)) {
    // One token per intent: printed before the call, so a run that dies or times out can be retried with it
    // (a retry of a move that had committed answers that move and moves nothing).
    const clientToken = invocation.clientToken ?? randomUUID();
    io.stderr.write(`client token: ${clientToken} (to retry this move, pass --client-token ${clientToken})\n`);
    invocation = { ...invocation, clientToken };
  }
  const client = new DynamoDBClient({});
  try {
    const { text, ok } = await run(invocation, client);
    io.stdout.write(printableBlock(text));
    return ok ? ExitCode.ok : ExitCode.failed;
  } catch (err) {
    io.stderr.write(`error: ${printable(err instanceof Error ? err.message : String(err))}\n`);
    return ExitCode.failed;
  } finally {
    client.destroy();
  }
}

type TableInvocation = Exclude<Invocation, { command: 'help' | 'validate' }>;

function isReleaseMove(invocation: Invocation): invocation is Extract<Invocation, ReleaseMove> {
  return invocation.command === 'label set' || invocation.command.startsWith('rollout ');
}

async function run(invocation: TableInvocation, client: DynamoDBClient): Promise<{ text: string; ok: boolean }> {
  switch (invocation.command) {
    case 'list': {
      const rows = await listPrompts(client, invocation.table);
      return { text: invocation.json ? toJson(rows) : formatListing(rows), ok: true };
    }
    case 'sync': {
      const report = await syncDirectory(client, invocation.table, invocation.directory);
      return { text: formatSyncReport(report), ok: report.failed === 0 && report.complete };
    }
    default:
      return {
        text: await runAdmin(invocation, new PromptAdmin({ tableName: invocation.table, dynamoDBClient: client, releaseUrl: 'url' in invocation ? invocation.url : undefined })),
        ok: true,
      };
  }
}

async function runAdmin(invocation: Extract<TableInvocation, { prompt: string }>, admin: PromptAdmin): Promise<string> {
  switch (invocation.command) {
    case 'history': {
      const records = await admin.listAudit(invocation.prompt, { limit: invocation.limit });
      return invocation.json ? toJson(records) : formatAudit(invocation.prompt, records);
    }
    case 'label set':
      return formatRelease(await admin.setLabel(invocation.prompt, invocation.label, invocation.version, moveOptions(invocation)));
    case 'rollout start':
      return formatRelease(await admin.startRollout(invocation.prompt, invocation.label, invocation.version, {
        ...moveOptions(invocation),
        percentBp: invocation.percentBp,
        stepsBp: invocation.stepsBp,
        stepIntervalSeconds: invocation.interval,
        alarms: invocation.alarms,
      }));
    case 'rollout step':
      return formatRelease(await admin.stepRollout(invocation.prompt, invocation.label, {
        ...moveOptions(invocation),
        percentBp: invocation.percentBp,
      }));
    case 'rollout promote':
      return formatRelease(await admin.promoteRollout(invocation.prompt, invocation.label, moveOptions(invocation)));
    case 'rollout abort':
      return formatRelease(await admin.abortRollout(invocation.prompt, invocation.label, moveOptions(invocation)));
    case 'activate':
      return formatActivation(await admin.activate(invocation.prompt, invocation.version, { activatedBy: invocation.by }));
    case 'list-versions': {
      const history = await admin.listVersions(invocation.prompt);
      return invocation.json ? toJson(history) : formatHistory(history);
    }
    case 'get':
      return toSortedJson(await admin.get(invocation.prompt, { version: invocation.version }));
  }
}

function moveOptions(move: ReleaseMove): { reason?: string; clientToken?: string } {
  return { reason: move.reason, clientToken: move.clientToken };
}
