/**
 * The cache tier's warm-up of the table's request path (src/runtime/table-warm-up.ts `warmTableReads`): a reader the L2
 * serves runs `GetItem` and `BatchGetItem` through its own SDK client once, so its first table read (when the cache
 * fails) is not its SDK's first. Through the client the core made, the requests go to a server inside the process
 * (the HTTP client's first request runs too), their credentials taken off; through a client the reader passed, a
 * canned answer stands in for the HTTP handler. Nothing reaches DynamoDB: the SDK's HTTP handler (what sends) is
 * watched, against real DynamoDB Local for the reads that do go out.
 */
import * as net from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { publish, textContent, writeCatalog } from './fixtures';
import { cacheTier, preload, PromptCacheL2, PromptClient } from '../../src/runtime';
import { TableItemReader } from '../../src/runtime/store';
import { warmTableReads } from '../../src/runtime/table-warm-up';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient, localEndpoint } from '../support/table';

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

test('through the client the core made, it runs the HTTP client too, against a server in the process, with no credentials sent', async () => {
  // GIVEN the core's own kind of client (the SDK's default HTTP handler), with temporary credentials, its requests watched
  const dynamoDBClient = localDynamoDBClient({
    maxAttempts: 1,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local', sessionToken: 'warm-up-session-token' },
  });
  opened.push(dynamoDBClient);
  const counter = new CallCounter();
  counter.attach(dynamoDBClient);
  const handler = dynamoDBClient.config.requestHandler as { handle: (request: any, ...rest: unknown[]) => Promise<unknown> };
  const handle = handler.handle;
  const sent: { hostname: string; port?: number; headers: Record<string, string>; answered?: number }[] = [];
  handler.handle = async function (request: any, ...rest: unknown[]) {
    const headers = { ...request.headers } as Record<string, string>;
    const seen = { hostname: request.hostname, port: request.port, headers, answered: undefined as number | undefined };
    sent.push(seen);
    const out = await handle.call(this, request, ...rest) as { response: { statusCode: number } };
    seen.answered = out.response.statusCode;
    return out;
  };
  const reader = new TableItemReader(dynamoDBClient, table, 1000, 1, {} as never);
  // WHEN the warm-up runs through it
  const answered = await warmTableReads({ dynamoDB: dynamoDBClient, table: reader, ownClient: true });
  // THEN both operations went through the HTTP handler to a server on 127.0.0.1, answered there and deserialized,
  // with the signature and the session token taken off the request first
  expect(answered).toBe(2);
  expect(counter.warmUps()).toEqual({ GetItem: 1, BatchGetItem: 1 });
  expect(counter.snapshot()).toEqual({});
  expect(sent.map((r) => [r.hostname, r.answered])).toEqual([['127.0.0.1', 200], ['127.0.0.1', 200]]);
  expect(sent[1].port).toBe(sent[0].port);
  for (const request of sent) {
    expect(Object.keys(request.headers).map((h) => h.toLowerCase())).not.toEqual(expect.arrayContaining(['authorization']));
    expect(Object.keys(request.headers).map((h) => h.toLowerCase())).not.toEqual(expect.arrayContaining(['x-amz-security-token']));
    expect(JSON.stringify(request.headers)).not.toMatch(/warm-up-session-token|Credential=|Signature=/);
  }
  // AND the server is gone after it
  const refused = await new Promise<string>((resolve) => {
    const socket = net.connect(sent[0].port!, '127.0.0.1', () => { socket.destroy(); resolve('connected'); });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
  expect(refused).toBe('ECONNREFUSED');
  // AND the client's own reads are unchanged: the next one is signed and reaches the table
  expect((await reader.getRawItem('greeting', 'CURRENT'))?.prompt_id?.S).toBe('greeting');
  expect(sent).toHaveLength(3);
  expect(String(sent[2].port)).toBe(new URL(localEndpoint()).port);
  expect(sent[2].port).not.toBe(sent[0].port);
  expect(Object.keys(sent[2].headers).map((h) => h.toLowerCase())).toEqual(expect.arrayContaining(['authorization', 'x-amz-security-token']));
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

test('the core tells the tier whether the SDK client is its own (the loopback warm-up is only for that one)', async () => {
  // GIVEN a tier that remembers what it is given
  const seen: (boolean | undefined)[] = [];
  const tier = cacheTier(memoryStore());
  const spy = { ...tier, attach: (deps: Parameters<typeof tier.attach>[0]) => { seen.push(deps.ownClient); return tier.attach(deps); } };
  // WHEN one client makes its own SDK client and another is given one
  const own = new PromptClient({ tableName: table, l2: spy });
  const { dynamoDBClient } = sdkClient();
  const given = new PromptClient({ tableName: table, dynamoDBClient, l2: spy });
  // THEN the tier is told which is which
  expect(seen).toEqual([true, false]);
  await own.close();
  await given.close();
});
