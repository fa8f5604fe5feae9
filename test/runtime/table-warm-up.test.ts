/**
 * The cache tier's warm-up of the table's request path (src/runtime/cache-tier.ts `warmTableReads`): a reader the L2
 * serves runs `GetItem` and `BatchGetItem` through its own SDK client once, answered by a canned response, so its first
 * table read (when the cache fails) is not its SDK's first. Nothing reaches DynamoDB: the SDK's HTTP handler (what
 * sends) is counted, against real DynamoDB Local for the reads that do go out.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { publish, textContent, writeCatalog } from './fixtures';
import { cacheTier, preload, PromptCacheL2, PromptClient } from '../../src/runtime';
import { warmTableReads } from '../../src/runtime/cache-tier';
import { TableItemReader } from '../../src/runtime/store';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}'));
  await writeCatalog(admin, table, ['greeting']);
});

afterAll(async () => {
  for (const client of opened.splice(0)) client.destroy();
  await deleteTable(admin, table);
  admin.destroy();
});

/** An SDK client whose commands are counted (`counter`) and whose HTTP requests are counted (`sent()`). */
function sdkClient() {
  const counter = new CallCounter();
  let credentialsAsked = 0;
  const dynamoDBClient = counter.attach(localDynamoDBClient({
    maxAttempts: 1,
    credentials: async () => {
      credentialsAsked++;
      return { accessKeyId: 'local', secretAccessKey: 'local' };
    },
  }));
  opened.push(dynamoDBClient);
  const handler = dynamoDBClient.config.requestHandler as { handle: (...args: unknown[]) => Promise<unknown> };
  const handle = handler.handle;
  let sent = 0;
  handler.handle = function (...args: unknown[]) {
    sent++;
    return handle.apply(this, args);
  };
  return { dynamoDBClient, counter, sent: () => sent, credentialsAsked: () => credentialsAsked };
}

/** A shared in-memory store with a first connection to wait for. */
function memoryStore(): PromptCacheL2 {
  const values = new Map<string, string>();
  return {
    get: async (key) => values.get(key) ?? null,
    set: async (key, value) => values.set(key, value),
    ready: () => Promise.resolve(),
  };
}

test('runs GetItem and BatchGetItem to a deserialized answer through the client, signing included, sending nothing', async () => {
  // GIVEN a table reader over a fresh SDK client
  const { dynamoDBClient, counter, sent, credentialsAsked } = sdkClient();
  const reader = new TableItemReader(dynamoDBClient, table, 1000, 1, {} as never);
  // WHEN the warm-up runs
  const answered = await warmTableReads({ dynamoDB: dynamoDBClient, table: reader });
  // THEN both operations went through the client's middleware to a deserialized answer, credentials resolved for signing,
  // and the HTTP handler was never called
  expect(answered).toBe(2);
  expect(counter.warmUps()).toEqual({ GetItem: 1, BatchGetItem: 1 });
  expect(counter.snapshot()).toEqual({});
  expect(credentialsAsked()).toBeGreaterThanOrEqual(1);
  expect(sent()).toBe(0);
  // AND the client's own reads are not answered by it: a real read after it reaches the table
  expect((await reader.getRawItem('greeting', 'CURRENT'))?.prompt_id?.S).toBe('greeting');
  expect(sent()).toBe(1);
});

test('a failing warm-up is silent', async () => {
  // GIVEN a client whose credentials cannot be resolved
  const dynamoDBClient = localDynamoDBClient({ maxAttempts: 1, credentials: async () => { throw new Error('no credentials'); } });
  opened.push(dynamoDBClient);
  const reader = new TableItemReader(dynamoDBClient, table, 1000, 1, {} as never);
  // WHEN the warm-up runs THEN it resolves, with nothing answered
  await expect(warmTableReads({ dynamoDB: dynamoDBClient, table: reader })).resolves.toBe(0);
  // AND so it does when the core hands it no command classes (a core and a layer that disagree)
  const skewed = Object.assign(Object.create(reader) as TableItemReader, { commands: [] });
  await expect(warmTableReads({ dynamoDB: dynamoDBClient, table: skewed })).resolves.toBe(0);
});

test('a fleet reader the L2 serves warms its table path after the L2 connects, and reads 0 keys from the table', async () => {
  // GIVEN an L2 filled by a first reader
  const store = memoryStore();
  const first = sdkClient();
  const filler = new PromptClient({ tableName: table, dynamoDBClient: first.dynamoDBClient, l2: cacheTier(store) });
  await preload(filler, ['greeting']);
  await filler.getPrompt('greeting');
  await new Promise((resolve) => setTimeout(resolve, 100)); // the fills are in the background
  // WHEN a second reader starts and reads from the L2
  const { dynamoDBClient, counter, sent } = sdkClient();
  const prompts = new PromptClient({ tableName: table, dynamoDBClient, l2: cacheTier(store) });
  await preload(prompts, ['greeting']);
  expect((await prompts.getPrompt('greeting')).version).toBe(1);
  for (let i = 0; i < 100 && counter.warmUps().BatchGetItem === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  await new Promise((resolve) => setTimeout(resolve, 20));
  // THEN its SDK ran both table operations once (the warm-up), and nothing was sent or counted as a table read
  expect(counter.warmUps()).toEqual({ GetItem: 1, BatchGetItem: 1 });
  expect(counter.snapshot()).toEqual({});
  expect(sent()).toBe(0);
  expect(prompts.stats().storeReads).toBe(0);
  expect(prompts.stats().l2Hits).toBeGreaterThan(0);
  await prompts.close();
  await filler.close();
});
