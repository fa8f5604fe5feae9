/**
 * Runs the REAL sync engine with a prompts-as-code directory source into a serving table, for the Python
 * tests (python/tests): `tsx test/conformance/sync-directory.ts <endpoint> <table> <directory>`.
 * Prints the sync report as one JSON line; exits 1 if any prompt failed.
 */
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { localDynamoDBClient } from '../support/table';

async function main(): Promise<void> {
  const [endpoint, tableName, directory] = process.argv.slice(2);
  if (!endpoint || !tableName || !directory) {
    throw new Error('usage: sync-directory.ts <dynamodb endpoint> <table name> <prompts directory>');
  }
  const client = localDynamoDBClient({ maxAttempts: 3 }, endpoint);
  try {
    const report = await new SyncEngine({ dynamoDBClient: client, tableName, source: new DirectoryPromptSource(directory) }).fullSync();
    process.stdout.write(JSON.stringify(report) + '\n');
    if (report.failed > 0) process.exitCode = 1;
  } finally {
    client.destroy();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 2;
});
