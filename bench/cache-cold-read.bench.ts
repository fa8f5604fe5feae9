/**
 * Cold-read latency: 1,000 fresh PromptClients each serve their first read, with every
 * DynamoDB request delayed by STORE_LATENCY_MS (a slow store makes the round trips visible). Before: the catalog
 * read, then the prompt read (two round trips, as a client that awaits the catalog first). After: one
 * BatchGetItem of both. Side by side in one run against DynamoDB Local started here.
 *
 *   npx tsx bench/cache-cold-read.bench.ts
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { preload, PromptClient } from '../src/runtime';
import { publish, textContent, writeCatalog } from '../test/runtime/fixtures';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

const CLIENTS = 1000;
const STORE_LATENCY_MS = 200;

function slow(client: DynamoDBClient): DynamoDBClient {
  client.middlewareStack.add((next) => async (args) => {
    await new Promise((resolve) => setTimeout(resolve, STORE_LATENCY_MS));
    return next(args);
  }, { step: 'initialize', name: 'storeLatency' });
  return client;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

async function main(): Promise<void> {
  const ddb = await startDynamoDBLocal();
  process.env.DYNAMODB_LOCAL_ENDPOINT = ddb.endpoint;
  const admin = localDynamoDBClient();
  const table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}'));
  await writeCatalog(admin, table, ['greeting']);
  const sdk = slow(localDynamoDBClient({ maxAttempts: 1 }));
  const run = async (label: string, read: (c: PromptClient) => Promise<unknown>) => {
    const clients = Array.from({ length: CLIENTS }, () => new PromptClient({ tableName: table, dynamoDBClient: sdk, requestTimeoutMs: 10_000 }));
    const times = await Promise.all(clients.map(async (c) => {
      const started = performance.now();
      await read(c);
      return (performance.now() - started) / 1000;
    }));
    return `| ${label} | ${pct(times, 0.5).toFixed(3)} s | ${pct(times, 0.99).toFixed(3)} s |`;
  };
  const rows = [
    await run('before: catalog, then prompt (two round trips)', async (c) => { await preload(c); await c.getPrompt('greeting'); }),
    await run('after: one BatchGetItem of catalog and prompt', (c) => c.getPrompt('greeting')),
  ];
  console.log([`| first read of ${CLIENTS} cold clients, store latency ${STORE_LATENCY_MS / 1000} s per request | p50 | p99 |`, '|---|---|---|', ...rows].join('\n'));
  await ddb.stop();
  process.exit(0);
}

void main();
