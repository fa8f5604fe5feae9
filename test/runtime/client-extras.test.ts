/**
 * `invalidate`, `fallback`, timer-safe option bounds and an L2 value stamped in the future, against DynamoDB
 * Local (and an in-memory L2 where the hook itself is not under test).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fakeDate, publish, textContent } from './fixtures';
import { cacheTier, MAX_TIMER_MS, PromptCacheL2, PromptClient, PromptNotFoundError, PromptServingError, render } from '../../src/runtime';
import { CURRENT, encodeFillValue, l2FillKey } from '../../src/schema';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}!'));
});

afterAll(async () => {
  await deleteTable(admin, table);
  admin.destroy();
});

afterEach(() => {
  jest.useRealTimers();
  for (const c of opened.splice(0)) c.destroy();
});

function client(options: ConstructorParameters<typeof PromptClient>[0] = {}) {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  opened.push(dynamoDBClient);
  return { prompts: new PromptClient({ tableName: table, dynamoDBClient, ...options }), counter };
}

test('invalidate(id) drops that prompt from memory: the next read goes to the table; invalidate() drops everything', async () => {
  const { prompts, counter } = client();
  await prompts.getPrompt('greeting');
  counter.reset();
  await prompts.getPrompt('greeting');
  expect(counter.count('GetItem')).toBe(0);
  prompts.invalidate('greeting');
  await prompts.getPrompt('greeting');
  expect(counter.count('GetItem')).toBe(1);
  prompts.invalidate();
  await prompts.getPrompt('greeting');
  expect(counter.snapshot()).toEqual({ GetItem: 3 }); // the prompt again, and the catalog re-read
});

test('fallback is served only when nothing can be read, and never for a prompt that does not exist', async () => {
  // GIVEN a client whose table endpoint refuses connections
  const down = new DynamoDBClient({ endpoint: 'http://127.0.0.1:9', region: 'us-east-1', maxAttempts: 1 });
  opened.push(down);
  const prompts = new PromptClient({ tableName: table, dynamoDBClient: down, requestTimeoutMs: 500 });
  // WHEN a read with a fallback fails
  const served = await prompts.getPrompt('greeting', { fallback: { text: 'Hi {{name}}' } });
  // THEN the fallback is returned, flagged stale, version 0, and renders
  expect(served).toMatchObject({ id: 'greeting', version: 0, stale: true, templateType: 'TEXT', inputVariables: ['name'] });
  expect(served.templateType === 'TEXT' && render(served, { name: 'Ana' })).toBe('Hi Ana');
  expect(prompts.stats().fallbackServes).toBe(1);
  // AND without one the read fails
  await expect(prompts.getPrompt('greeting')).rejects.toThrow(/ECONNREFUSED|failed|timed out/);
  // AND an unknown id stays not found with a working table
  const { prompts: up } = client();
  await expect(up.getPrompt('nope', { fallback: { text: 'x' } })).rejects.toBeInstanceOf(PromptNotFoundError);
});

test.each(['requestTimeoutMs', 'l2TimeoutMs', 'l2ConnectTimeoutMs', 'epochPollIntervalMs'] as const)(
  '%s above 2^31 - 1 ms (which Node would clamp to 1 ms) is rejected, naming the option', (name) => {
    expect(() => new PromptClient({ tableName: table, [name]: MAX_TIMER_MS + 1 })).toThrow(PromptServingError);
    expect(() => new PromptClient({ tableName: table, [name]: MAX_TIMER_MS + 1 })).toThrow(`\`${name}\` must be a number from`);
    expect(() => new PromptClient({ tableName: table, [name]: MAX_TIMER_MS })).not.toThrow();
  });

test('an L2 fill stamped an hour in the future is not used; one a second ahead is clamped and still expires at maxAgeSeconds', async () => {
  // GIVEN an L2 fill stamped an hour ahead (a reader with a wrong clock)
  const data = new Map<string, string>();
  const l2: PromptCacheL2 = { get: async (k) => data.get(k), set: async (k, v) => { data.set(k, v); } };
  const seeded = client({ l2: cacheTier(l2) });
  await seeded.prompts.getPrompt('greeting');
  await new Promise((resolve) => setImmediate(resolve));
  const key = l2FillKey(table, 'greeting', CURRENT);
  const value = JSON.parse(data.get(key)!);
  data.set(key, encodeFillValue({ ...value, fetchedAt: Date.now() + 3_600_000 }));
  const { prompts, counter } = client({ l2: cacheTier(l2), maxAgeSeconds: 60, staleWhileRevalidateSeconds: 0, catalogMaxAgeSeconds: 3600 });
  counter.reset();
  // WHEN a fresh reader reads it
  await prompts.getPrompt('greeting');
  // THEN the value was not trusted: the table was read (and its fill replaced the forged one)
  expect(prompts.stats().l2Hits).toBe(0);
  expect(counter.count('GetItem') + counter.count('BatchGetItem')).toBe(1);
  await new Promise((resolve) => setImmediate(resolve));
  expect(JSON.parse(data.get(key)!).fetchedAt).toBeLessThanOrEqual(Date.now());

  // GIVEN a fill a second ahead (within the clock skew allowed)
  data.set(key, encodeFillValue({ ...value, fetchedAt: Date.now() + 1000 }));
  const clock = fakeDate();
  const near = client({ l2: cacheTier(l2), maxAgeSeconds: 60, staleWhileRevalidateSeconds: 0, catalogMaxAgeSeconds: 3600 });
  await near.prompts.getPrompt('greeting');
  expect(near.prompts.stats().l2Hits).toBe(1);
  // WHEN maxAgeSeconds pass on this machine's clock, and the L2 no longer has it
  clock.advanceSeconds(61);
  data.delete(key);
  near.counter.reset();
  await near.prompts.getPrompt('greeting');
  // THEN the copy expired on time: the table was read
  expect(near.counter.count('GetItem')).toBe(1);
});
