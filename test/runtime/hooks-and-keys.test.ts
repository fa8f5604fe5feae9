/**
 * A read hook and a stickiness key are the caller's values: whatever a hook returns or throws, the read is served,
 * the process lives (no unhandled rejection) and the failure is reported once; a stickiness key of any size costs a
 * bounded amount of memory, whatever the number of distinct keys. Real parts: DynamoDB Local, the real client.
 */
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { publish, textContent } from './fixtures';
import { rolloutMap, writeLabel } from './labels-fixtures';
import { labels, combineReadHooks, OnRead, PromptClient, PromptClientOptions } from '../../src/runtime';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}!'));
  await publish(admin, table, 'greeting', 2, textContent('Hi {{name}}!'));
  await writeLabel(admin, table, 'greeting', 'canary', 1, textContent('Hello {{name}}!'), {
    rollout: rolloutMap('r-1', 2, textContent('Hi {{name}}!'), 5000),
  });
});

afterEach(() => {
  jest.restoreAllMocks();
  for (const c of opened.splice(0)) c.destroy();
});

afterAll(async () => {
  await deleteTable(admin, table);
  admin.destroy();
});

function client(options: PromptClientOptions = {}): PromptClient {
  const ddb = localDynamoDBClient({ maxAttempts: 1 });
  opened.push(ddb);
  return new PromptClient({ tableName: table, dynamoDBClient: ddb, features: [labels], ...options });
}

/** Runs `reads`, then lets every pending rejection surface; returns the rejections nobody handled and the hook warnings. */
async function watched(reads: () => Promise<unknown>): Promise<{ result: unknown; unhandled: unknown[]; warnings: string[] }> {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => { unhandled.push(reason); };
  process.on('unhandledRejection', onUnhandled);
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const result = await reads();
    await new Promise((resolve) => setTimeout(resolve, 50)); // unhandled rejections are reported after a macrotask
    const warnings = stderr.mock.calls.map((c) => String(c[0])).filter((line) => line.includes('onRead'));
    return { result, unhandled, warnings };
  } finally {
    stderr.mockRestore();
    process.off('unhandledRejection', onUnhandled);
  }
}

const hooks: [string, OnRead][] = [
  ['an async hook that rejects', (async () => { throw new Error('async hook bug'); }) as unknown as OnRead],
  ['a hook that throws a null-prototype object', () => { throw Object.create(null); }],
  ['a hook that throws a value that cannot be printed', () => {
    throw { get message(): string { throw new Error('no message'); }, toString() { throw new Error('no string'); } };
  }],
  ['a hook returning a promise-like whose then throws', (() => ({ then() { throw new Error('then bug'); } })) as unknown as OnRead],
  ['an async hook combined with a good one', combineReadHooks(() => undefined, (async () => { throw Object.create(null); }) as unknown as OnRead)],
];

test.each(hooks)('%s: every read is served, nothing is left unhandled, and it is reported once', async (_, onRead) => {
  // GIVEN
  const prompts = client({ onRead });
  // WHEN
  const { result, unhandled, warnings } = await watched(async () => [
    await prompts.getPrompt('greeting'),
    await prompts.getPrompt('greeting'),
    await prompts.getPrompt('greeting', { version: 1 }),
    await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-0' }),
    await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'user-0' }),
  ]);
  // THEN
  expect((result as { version: number }[]).map((p) => p.version)).toEqual([2, 2, 1, 1, 1]);
  expect(unhandled).toEqual([]);
  expect(warnings).toHaveLength(1);
  expect(JSON.parse(warnings[0])).toMatchObject({ level: 'WARN' });
});

/** `global.gc`, made available inside jest (which does not pass `--expose-gc`). */
function gc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

test('200 distinct 1 MB stickiness keys are not retained: the rollout remembers a bounded digest, not the key', async () => {
  // GIVEN a label with a 50 % rollout, both arms in memory
  const collect = gc();
  const prompts = client();
  await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: 'warm-up' });
  const arms = new Set<string>();
  for (let i = 0; i < 20; i++) arms.add((await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: `user-${i}` })).rollout!.arm);
  expect(arms).toEqual(new Set(['A', 'B']));
  collect();
  const before = process.memoryUsage().heapUsed;
  // WHEN 200 reads each pass a distinct 1 MB key
  for (let i = 0; i < 200; i++) {
    const key = `${i}:`.padEnd(1024 * 1024, 'k');
    await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: key });
  }
  collect();
  const retained = process.memoryUsage().heapUsed - before;
  // THEN far less than one key's worth per read is kept (the keys alone are 200 MB)
  expect(retained).toBeLessThan(20 * 1024 * 1024);
});

test('a long stickiness key keeps its arm from read to read (the bucket is the same SHA-256 as a short key\'s)', async () => {
  // GIVEN
  const prompts = client();
  const keys = Array.from({ length: 40 }, (_, i) => `${i}`.padEnd(100, '-'));
  // WHEN each key is read three times
  const arms: string[][] = [];
  for (let round = 0; round < 3; round++) {
    arms.push([]);
    for (const key of keys) arms[round].push((await prompts.getPrompt('greeting', { label: 'canary', stickinessKey: key })).rollout!.arm);
  }
  // THEN every key got one arm every time, and both arms are served
  expect(arms[1]).toEqual(arms[0]);
  expect(arms[2]).toEqual(arms[0]);
  expect(new Set(arms[0])).toEqual(new Set(['A', 'B']));
});
