/**
 * The table goes away mid-load: a DynamoDB Local of this file's own is stopped while reads continue.
 * Prompts read before keep being served (stale-if-error); a prompt never read fails fast with a typed error.
 */
import * as net from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fakeDate, publish, textContent, writeCatalog } from './fixtures';
import { preload, Prompt, PromptClient, PromptNotFoundError, PromptStoreError } from '../../src/runtime';
import { DynamoDBLocal, startDynamoDBLocal } from '../support/dynamodb-local';
import { createServingTable, localDynamoDBClient } from '../support/table';

const ids = Array.from({ length: 10 }, (_, i) => `prompt-${i}`);
const readBefore = ids.slice(0, 5);
const REQUEST_TIMEOUT_MS = 1000;

let local: DynamoDBLocal;
let ddb: DynamoDBClient;
let table: string;

beforeAll(async () => {
  local = await startDynamoDBLocal();
  ddb = localDynamoDBClient({ maxAttempts: 1 }, local.endpoint);
  table = await createServingTable(ddb);
  for (const id of ids) await publish(ddb, table, id, 1, textContent(`I am ${id}`));
  await writeCatalog(ddb, table, ids);
});

afterAll(async () => {
  ddb.destroy();
  await local.stop();
});

afterEach(() => jest.useRealTimers());

test('DynamoDB Local stopped mid-load: prompts read before are served stale, a never-read prompt fails with PromptStoreError in time', async () => {
  // GIVEN a warm client under load
  const clock = fakeDate();
  const prompts = new PromptClient({
    tableName: table,
    dynamoDBClient: ddb,
    maxAgeSeconds: 60,
    staleWhileRevalidateSeconds: 0,
    staleIfErrorSeconds: 3600,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
  });
  await preload(prompts, readBefore);
  const served: Prompt[] = [];
  const failures: unknown[] = [];
  let loading = true;
  const load = (async () => {
    while (loading) {
      for (const id of readBefore) await prompts.getPrompt(id).then((p) => served.push(p), (e) => failures.push(e));
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();

  // WHEN the store goes away mid-load, and the cached copies expire
  await local.stop();
  clock.advanceSeconds(61);
  const afterExpiry = await Promise.all(readBefore.map((id) => prompts.getPrompt(id)));
  loading = false;
  await load;

  // THEN every prompt read before is still served, the expired ones flagged stale
  expect(failures).toEqual([]);
  expect(served.length).toBeGreaterThan(0);
  expect(afterExpiry.map((p) => [p.id, p.stale])).toEqual(readBefore.map((id) => [id, true]));
  expect(prompts.stats().staleServes).toBeGreaterThanOrEqual(readBefore.length);

  // AND a prompt never read fails with a typed store error within the request timeout, not a hang
  const started = performance.now();
  const error = await prompts.getPrompt('prompt-7').catch((e: unknown) => e);
  const elapsedMs = performance.now() - started;
  expect(error).toBeInstanceOf(PromptStoreError);
  expect((error as PromptStoreError).cause).toBeDefined();
  expect(elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 500);

  // AND an id the (already loaded) catalog rules out is still answered, without the store
  await expect(prompts.getPrompt('ghost')).rejects.toBeInstanceOf(PromptNotFoundError);
});

test('a table that accepts connections but never answers costs at most requestTimeoutMs', async () => {
  // GIVEN a client pointed at a socket that never responds
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => { sockets.push(socket); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const silent = localDynamoDBClient({ maxAttempts: 1 }, `http://127.0.0.1:${port}`);
  const prompts = new PromptClient({ tableName: 'any', dynamoDBClient: silent, requestTimeoutMs: 300 });
  // WHEN
  const started = performance.now();
  const error = await prompts.getPrompt('p').catch((e: unknown) => e);
  const elapsedMs = performance.now() - started;
  // THEN the catalog read and the prompt read share one deadline
  expect(error).toBeInstanceOf(PromptStoreError);
  expect((error as Error).message).toBe('BatchGetItem #catalog/CURRENT, p/CURRENT on table any timed out after 300 ms');
  expect(elapsedMs).toBeGreaterThanOrEqual(290);
  expect(elapsedMs).toBeLessThan(300 + 200);
  silent.destroy();
  for (const socket of sockets) socket.destroy();
  server.close();
});

test('40 reads at once against a table that never answers: each is its own GetItem and gets its whole requestTimeoutMs', async () => {
  // GIVEN a client whose catalog read has already failed (so each read below is one GetItem), against a silent socket
  const targets: string[] = [];
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('data', (chunk) => {
      const target = /x-amz-target: *([^\r\n]+)/i.exec(chunk.toString('latin1'))?.[1];
      if (target !== undefined) targets.push(target.replace('DynamoDB_20120810.', ''));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const silent = localDynamoDBClient({ maxAttempts: 1 }, `http://127.0.0.1:${port}`);
  const prompts = new PromptClient({ tableName: 'any', dynamoDBClient: silent, requestTimeoutMs: 300 });
  await prompts.getPrompt('first').catch(() => undefined);
  targets.length = 0;
  try {
    // WHEN 40 different prompts are asked for in the same tick (deadlines made together share one abort signal)
    const started = performance.now();
    const ends = await Promise.all(Array.from({ length: 40 }, (_, i) => prompts.getPrompt(`p-${i}`).then(
      () => { throw new Error('answered'); },
      (e: unknown) => ({ error: e, elapsedMs: performance.now() - started }))));
    await new Promise((resolve) => setImmediate(resolve));

    // THEN each failed on its own deadline: never before requestTimeoutMs, and not much after
    for (const { error, elapsedMs } of ends) {
      expect(error).toBeInstanceOf(PromptStoreError);
      expect((error as Error).message).toMatch(/^GetItem p-\d+\/CURRENT on table any timed out after 300 ms$/);
      expect(elapsedMs).toBeGreaterThanOrEqual(299);
      expect(elapsedMs).toBeLessThan(300 + 200);
    }
    // AND a shared signal did not batch independent reads: 40 GetItems, no BatchGetItem
    expect(targets.sort()).toEqual(Array.from({ length: 40 }, () => 'GetItem'));
  } finally {
    silent.destroy();
    for (const socket of sockets) socket.destroy();
    server.close();
  }
});
