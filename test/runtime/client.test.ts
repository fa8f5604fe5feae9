/**
 * PromptClient against real DynamoDB Local (started by the jest global setup): GetItem calls are counted with
 * SDK middleware, items are seeded in the wire contract's shape, time is moved with a fake `Date`.
 */
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { chatContent, fakeDate, failNextGetItems, logGetItemKeys, markDeleted, publish, textContent, writeCatalog } from './fixtures';
import { preload, PromptClient, PromptClientOptions, PromptNotFoundError, PromptStoreError } from '../../src/runtime';
import { toItem } from '../../src/schema/ddb-codec';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
/** A table with a catalog of its prompts (what the sync maintains). */
let cataloged: string;
/** A table without a catalog item (no filtering). */
let plain: string;
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  [cataloged, plain] = await Promise.all([createServingTable(admin), createServingTable(admin)]);
  for (const table of [cataloged, plain]) {
    await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}!', { model_id: 'anthropic.claude-3-haiku', inference_config: { temperature: 0.2 } }));
  }
  await writeCatalog(admin, cataloged, ['greeting']);
});

afterAll(async () => {
  await Promise.all([deleteTable(admin, cataloged), deleteTable(admin, plain)]);
  admin.destroy();
});

afterEach(() => {
  jest.useRealTimers();
  for (const client of opened.splice(0)) client.destroy();
});

/** A PromptClient on its own SDK client, with every GetItem counted and its key logged. */
function newClient(tableName: string, options: PromptClientOptions = {}) {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  opened.push(dynamoDBClient);
  const keys = logGetItemKeys(dynamoDBClient);
  const prompts = new PromptClient({ tableName, dynamoDBClient, ...options });
  return { prompts, counter, keys, dynamoDBClient };
}

describe('getPrompt', () => {
  test('serves the CURRENT version with id, version, checksum, content and model settings', async () => {
    // GIVEN
    const { prompts } = newClient(plain);
    // WHEN
    const prompt = await prompts.getPrompt('greeting');
    // THEN
    expect(prompt).toMatchObject({
      id: 'greeting',
      version: 1,
      templateType: 'TEXT',
      text: 'Hello {{name}}!',
      inputVariables: ['name'],
      modelId: 'anthropic.claude-3-haiku',
      inferenceConfig: { temperature: 0.2 },
      stale: false,
    });
    expect(prompt.checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(prompt.content.text).toBe('Hello {{name}}!');
  });

  test('1000 concurrent cold reads of one id send exactly 1 request: one BatchGetItem of the catalog and the prompt', async () => {
    // GIVEN a client that has read nothing yet
    const { prompts, counter, keys } = newClient(cataloged);
    // WHEN
    const results = await Promise.all(Array.from({ length: 1000 }, () => prompts.getPrompt('greeting')));
    // THEN one round trip read both (a cold read does not wait for the catalog before it reads the prompt)
    expect(keys).toEqual(['#catalog/CURRENT', 'greeting/CURRENT']);
    expect(counter.snapshot()).toEqual({ BatchGetItem: 1 });
    expect(new Set(results).size).toBe(1);
  });

  test('with the catalog preloaded, 1000 concurrent cold reads send exactly 1 GetItem', async () => {
    // GIVEN
    const { prompts, counter } = newClient(cataloged);
    await preload(prompts);
    counter.reset();
    // WHEN
    await Promise.all(Array.from({ length: 1000 }, () => prompts.getPrompt('greeting')));
    // THEN
    expect(counter.count('GetItem')).toBe(1);
  });

  test('cached reads send nothing and count as hits', async () => {
    // GIVEN
    const { prompts, counter } = newClient(plain);
    await prompts.getPrompt('greeting');
    counter.reset();
    // WHEN
    for (let i = 0; i < 100; i++) await prompts.getPrompt('greeting');
    // THEN
    expect(counter.count('GetItem')).toBe(0);
    expect(prompts.stats()).toMatchObject({ hits: 100, misses: 1 });
  });

  test('an exact version is read from its version item and never expires', async () => {
    // GIVEN v1 and v2, CURRENT at v2
    const table = await createServingTable(admin);
    await publish(admin, table, 'faq', 1, textContent('v1 {{q}}'));
    await publish(admin, table, 'faq', 2, textContent('v2 {{q}}'));
    const clock = fakeDate();
    const { prompts, keys } = newClient(table, { maxAgeSeconds: 60 });
    // WHEN
    const current = await prompts.getPrompt('faq');
    const first = await prompts.getPrompt('faq', { version: 1 });
    clock.advanceSeconds(7 * 24 * 3600);
    const again = await prompts.getPrompt('faq', { version: 1 });
    // THEN
    expect(current).toMatchObject({ version: 2, text: 'v2 {{q}}' });
    expect(first).toMatchObject({ version: 1, text: 'v1 {{q}}', stale: false });
    expect(again.content).toBe(first.content); // the same frozen copy, served from memory (provenance l1)
    expect(again.provenance.source).toBe('l1');
    expect(keys.filter((k) => k === 'faq/v000001')).toHaveLength(1);
    await expect(prompts.getPrompt('faq', { version: 3 })).rejects.toThrow(PromptNotFoundError);
    await deleteTable(admin, table);
  });

  test('an item that breaks the wire contract fails with PromptStoreError naming the item', async () => {
    // GIVEN a pointer without a checksum
    const table = await createServingTable(admin);
    await admin.send(new PutItemCommand({
      TableName: table,
      Item: toItem({ prompt_id: 'bad', version: 'CURRENT', version_number: 1, status: 'ACTIVE', template_type: 'TEXT', text: 'x' }),
    }));
    const { prompts } = newClient(table);
    // THEN
    await expect(prompts.getPrompt('bad')).rejects.toThrow(new PromptStoreError('item bad/CURRENT breaks the wire contract: no checksum'));
    await deleteTable(admin, table);
  });
});

describe('not found', () => {
  async function expectNotFound(read: Promise<unknown>): Promise<void> {
    await expect(read).rejects.toBeInstanceOf(PromptNotFoundError);
  }

  test('1000 reads of an unknown id without a catalog send 1 GetItem for it (then the negative cache answers)', async () => {
    // GIVEN a table without a catalog item
    const { prompts, keys } = newClient(plain);
    // WHEN 500 concurrent reads, then 500 one after the other
    const concurrent = await Promise.allSettled(Array.from({ length: 500 }, () => prompts.getPrompt('nope')));
    for (let i = 0; i < 500; i++) await expectNotFound(prompts.getPrompt('nope'));
    // THEN one catalog probe (absent) and one read of the id
    expect(concurrent.every((r) => r.status === 'rejected' && r.reason instanceof PromptNotFoundError)).toBe(true);
    expect(keys).toEqual(['#catalog/CURRENT', 'nope/CURRENT']);
    expect(prompts.stats().negativeHits).toBe(500);
  });

  test('1000 reads of an unknown id with a catalog in the table send at most 1 request (the catalog, with the id beside it)', async () => {
    // GIVEN
    const { prompts, counter, keys } = newClient(cataloged);
    // WHEN
    await Promise.allSettled(Array.from({ length: 500 }, () => prompts.getPrompt('nope')));
    for (let i = 0; i < 500; i++) await expectNotFound(prompts.getPrompt('nope'));
    // THEN the cold read asked for the catalog and the id in one BatchGetItem; then the catalog answered alone
    expect(counter.snapshot()).toEqual({ BatchGetItem: 1 });
    expect(keys).toEqual(['#catalog/CURRENT', 'nope/CURRENT']);
    // the 500 concurrent reads share one check; the table's answer beside it is remembered as not found
    expect(prompts.stats()).toMatchObject({ catalogRejections: 1, negativeHits: 500 });
  });

  test('1000 reads of an unknown id with the catalog preloaded send 0 GetItem', async () => {
    // GIVEN
    const { prompts, counter } = newClient(cataloged);
    await preload(prompts);
    counter.reset();
    // WHEN
    await Promise.allSettled(Array.from({ length: 500 }, () => prompts.getPrompt('nope')));
    for (let i = 0; i < 500; i++) await expectNotFound(prompts.getPrompt('nope'));
    // THEN
    expect(counter.count('GetItem')).toBe(0);
  });

  test('a deleted prompt (status DELETED) is not found', async () => {
    // GIVEN
    const table = await createServingTable(admin);
    await publish(admin, table, 'old', 1, textContent('bye'));
    await markDeleted(admin, table, 'old');
    const { prompts } = newClient(table);
    // THEN
    await expect(prompts.getPrompt('old')).rejects.toThrow("prompt 'old' not found: deleted");
    await deleteTable(admin, table);
  });

  test('reserved and invalid ids are not found without any remote call', async () => {
    // GIVEN
    const { prompts, counter } = newClient(plain);
    // THEN
    await expectNotFound(prompts.getPrompt('#catalog'));
    await expectNotFound(prompts.getPrompt(''));
    await expectNotFound(prompts.getPrompt('greeting', { version: 0 }));
    await expectNotFound(prompts.getPrompt('greeting', { version: 1.5 }));
    expect(counter.count('GetItem')).toBe(0);
  });

  test('a not-found answer is remembered for notFoundMaxAgeSeconds, then the table is read again', async () => {
    // GIVEN an id read before it exists
    const table = await createServingTable(admin);
    const clock = fakeDate();
    const { prompts, keys } = newClient(table, { notFoundMaxAgeSeconds: 10 });
    await expectNotFound(prompts.getPrompt('later'));
    await publish(admin, table, 'later', 1, textContent('now here'));
    // WHEN / THEN still not found from memory, then found once the entry expires
    clock.advanceSeconds(9);
    await expectNotFound(prompts.getPrompt('later'));
    clock.advanceSeconds(2);
    await expect(prompts.getPrompt('later')).resolves.toMatchObject({ text: 'now here' });
    expect(keys.filter((k) => k === 'later/CURRENT')).toHaveLength(2);
    await deleteTable(admin, table);
  });
});

describe('freshness', () => {
  test('a changed prompt is served within maxAgeSeconds', async () => {
    // GIVEN a client that has read v1, with stale-while-revalidate off
    const table = await createServingTable(admin);
    await publish(admin, table, 'p', 1, textContent('one'));
    const clock = fakeDate();
    const { prompts } = newClient(table, { maxAgeSeconds: 30, staleWhileRevalidateSeconds: 0 });
    await prompts.getPrompt('p');
    // WHEN the sync publishes v2
    await publish(admin, table, 'p', 2, textContent('two'));
    // THEN v1 until maxAgeSeconds have passed, v2 from then on
    clock.advanceSeconds(29);
    await expect(prompts.getPrompt('p')).resolves.toMatchObject({ version: 1, stale: false });
    clock.advanceSeconds(2);
    await expect(prompts.getPrompt('p')).resolves.toMatchObject({ version: 2, text: 'two', stale: false });
    await deleteTable(admin, table);
  });

  test('stale-while-revalidate: an expired copy is returned at once, flagged, and refreshed by one background read', async () => {
    // GIVEN
    const table = await createServingTable(admin);
    await publish(admin, table, 'p', 1, textContent('one'));
    const clock = fakeDate();
    const { prompts, keys } = newClient(table, { maxAgeSeconds: 30, staleWhileRevalidateSeconds: 60 });
    await prompts.getPrompt('p');
    await publish(admin, table, 'p', 2, textContent('two'));
    clock.advanceSeconds(31);
    // WHEN
    const stale = await Promise.all(Array.from({ length: 100 }, () => prompts.getPrompt('p')));
    await preload(prompts, ['p']); // joins the background read
    const fresh = await prompts.getPrompt('p');
    // THEN
    expect(stale.every((p) => p.version === 1 && p.stale)).toBe(true);
    expect(fresh).toMatchObject({ version: 2, stale: false });
    expect(keys.filter((k) => k === 'p/CURRENT')).toHaveLength(2);
    expect(prompts.stats().staleServes).toBe(100);
    await deleteTable(admin, table);
  });
});

describe('size bound', () => {
  test('the least recently used prompt is evicted past maxEntries', async () => {
    // GIVEN four prompts in a client holding four, "a" used again after the others
    const table = await createServingTable(admin);
    for (const id of ['a', 'b', 'c', 'd', 'e']) await publish(admin, table, id, 1, textContent(id));
    const { prompts, keys } = newClient(table, { maxEntries: 4 });
    for (const id of ['a', 'b', 'c', 'd', 'a']) await prompts.getPrompt(id);
    // WHEN a fifth prompt is read
    await prompts.getPrompt('e');
    keys.length = 0;
    await prompts.getPrompt('a');
    await prompts.getPrompt('b');
    // THEN "b" (least recently used) was evicted, "a" was not
    expect(keys).toEqual(['b/CURRENT']);
    expect(prompts.stats()).toMatchObject({ entries: 4 });
    expect(prompts.stats().evictions).toBeGreaterThanOrEqual(1);
    await deleteTable(admin, table);
  });

  test('exact versions share the bound and leave memory with it', async () => {
    // GIVEN a client holding two prompts
    const table = await createServingTable(admin);
    for (const n of [1, 2, 3]) await publish(admin, table, 'faq', n, textContent(`v${n}`));
    const { prompts, keys } = newClient(table, { maxEntries: 2 });
    // WHEN three versions are read, then the first again
    for (const version of [1, 2, 3, 1]) await prompts.getPrompt('faq', { version });
    // THEN version 1 was evicted by version 3 and read again; 3 is still served from memory
    await prompts.getPrompt('faq', { version: 3 });
    expect(keys.filter((k) => k.startsWith('faq/'))).toEqual(['faq/v000001', 'faq/v000002', 'faq/v000003', 'faq/v000001']);
    expect(prompts.stats()).toMatchObject({ entries: 2, evictions: 2 });
    await deleteTable(admin, table);
  });
});

describe('retries', () => {
  test('throttling is retried with backoff and the read succeeds', async () => {
    // GIVEN the next two GetItem calls throttled
    const { prompts, dynamoDBClient } = newClient(plain, { maxAttempts: 3 });
    await preload(prompts);
    failNextGetItems(dynamoDBClient, 2, 'ProvisionedThroughputExceededException');
    // WHEN
    const prompt = await prompts.getPrompt('greeting');
    // THEN
    expect(prompt.id).toBe('greeting');
    expect(prompts.stats().retries).toBe(2);
  });

  test('throttling past maxAttempts fails with PromptStoreError keeping the cause', async () => {
    // GIVEN
    const { prompts, dynamoDBClient } = newClient(plain, { maxAttempts: 2 });
    await preload(prompts);
    failNextGetItems(dynamoDBClient, 5, 'ThrottlingException');
    // WHEN
    const error = await prompts.getPrompt('greeting').catch((e: unknown) => e);
    // THEN
    expect(error).toBeInstanceOf(PromptStoreError);
    expect((error as PromptStoreError).name).toBe('PromptStoreError');
    expect((error as PromptStoreError).message).toContain('ThrottlingException');
    expect(((error as PromptStoreError).cause as Error).name).toBe('ThrottlingException');
    expect(prompts.stats().retries).toBe(1);
  });

  test('a deadline that expires during a backoff ends the wait at once, as a time-out', async () => {
    // GIVEN every GetItem throttled, many attempts allowed, and a 120 ms deadline (backoffs up to 1 s each)
    const { prompts, dynamoDBClient } = newClient(plain, { maxAttempts: 50, requestTimeoutMs: 120 });
    await preload(prompts);
    failNextGetItems(dynamoDBClient, 1000, 'ThrottlingException');
    // WHEN
    const started = performance.now();
    const error = await prompts.getPrompt('greeting').catch((e: unknown) => e);
    const elapsedMs = performance.now() - started;
    // THEN the read gave up when its deadline passed, mid-backoff, and says why
    expect(error).toBeInstanceOf(PromptStoreError);
    expect((error as Error).message).toBe(`GetItem greeting/CURRENT on table ${plain} timed out after 120 ms`);
    expect(elapsedMs).toBeGreaterThanOrEqual(115);
    expect(elapsedMs).toBeLessThan(120 + 150);
    expect(prompts.stats().retries).toBeGreaterThanOrEqual(1);
  });
});

describe('CHAT prompts', () => {
  test('are read with messages and system', async () => {
    // GIVEN
    const table = await createServingTable(admin);
    await publish(admin, table, 'assistant', 1, chatContent('You help with {{product}}.', ['{{question}}']));
    const { prompts } = newClient(table);
    // WHEN
    const prompt = await prompts.getPrompt('assistant');
    // THEN
    expect(prompt).toMatchObject({
      templateType: 'CHAT',
      system: [{ text: 'You help with {{product}}.' }],
      messages: [{ role: 'user', content: [{ text: '{{question}}' }] }],
      inputVariables: ['product', 'question'],
    });
    await deleteTable(admin, table);
  });
});
