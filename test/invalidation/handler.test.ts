/**
 * The BUNDLED invalidation handler driven the way the event source mapping drives it: DynamoDB Local's stream
 * (filter criteria applied), partial batch responses, bisection, bounded retries, a dead-letter queue; against a
 * TLS, cluster-mode redis-server whose ACL users hold exactly the library's access rules.
 */
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { createClient } from 'redis';
import { BUNDLE, cacheClient, createStreamTable, handlerEnv, poller, READER, startCache, startHandler, WRITER } from './cache-fixture';
import { cacheTier, PromptClient } from '../../src/runtime';
import { ValkeyL2 } from '../../src/runtime/valkey';
import {
  CATALOG_ID, CURRENT, decodeStreamValue, epochIncarnation, l2CatalogKey, l2EpochKey, l2FillKey, l2ItemKey, versionKey,
} from '../../src/schema';
import { checksum } from '../../src/schema/checksum';
import { toItem } from '../../src/schema/ddb-codec';
import { markDeleted, publish, textContent, writeCatalog } from '../runtime/fixtures';
import { CallCounter } from '../support/call-counter';
import { LambdaProcess, startLambda } from '../support/lambda-runner';
import { ADMIN_AUTH, RedisServer } from '../support/redis-server';
import { StreamPoller } from '../support/stream-poller';
import { deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
let streamArn: string;
let cache: RedisServer;
let fn: LambdaProcess;
let stream: StreamPoller;
let inspect: ReturnType<typeof createClient>;
const closers: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  ({ table, streamArn } = await createStreamTable(admin));
  cache = await startCache(table);
  fn = await startHandler(table, cache);
  stream = poller(streamArn, fn.invoke, { batchSize: 10, maxRetries: 2 });
  inspect = createClient({ url: cache.url, ...ADMIN_AUTH, socket: { tls: true, ca: cache.ca, servername: 'localhost', reconnectStrategy: false } });
  inspect.on('error', () => undefined); // the cache is stopped on purpose below
  await inspect.connect();
}, 60_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await inspect?.close().catch(() => undefined);
  stream?.close();
  await fn?.stop();
  await cache?.stop();
  await deleteTable(admin, table);
  admin.destroy();
});

async function stored(promptId: string, sortKey = CURRENT) {
  const raw = await inspect.get(l2ItemKey(table, promptId, sortKey));
  return raw === null ? undefined : decodeStreamValue(raw, promptId, sortKey);
}

/** The epoch's counter (`<counter> <incarnation>`), 0 when absent. */
async function epochCounter(): Promise<number> {
  const raw = await inspect.get(l2EpochKey(table));
  return raw === null ? 0 : Number(raw.split(' ')[0]);
}

/** The stream label of this table's stream: the incarnation every value must carry. */
const incarnation = () => streamArn.slice(streamArn.indexOf('/stream/') + 8);

test('a pointer write reaches the L2 through the stream: written through with its token, version rows filtered out, the epoch moved once per batch', async () => {
  // GIVEN two prompts published (a version item and a pointer each) and the catalog
  await publish(admin, table, 'greeting', 1, textContent('Hello {{name}}!'));
  await publish(admin, table, 'faq', 1, textContent('v1 {{q}}'));
  await writeCatalog(admin, table, ['greeting', 'faq']);
  const epochBefore = await epochCounter();

  // WHEN the stream is drained into the bundled handler
  const delivered = await stream.drain();

  // THEN only the CURRENT rows (2 pointers + #catalog) were delivered, in one batch, and none failed
  expect(delivered).toBe(3);
  expect(stream.invocations.at(-1)).toMatchObject({ threw: false, failures: 0 });
  expect(stream.dlq).toEqual([]);
  // AND each is stored in DynamoDB JSON with its token (the stream's label and the record's sequence number);
  // the catalog's binary Bloom filter is base64
  expect(await stored('greeting')).toMatchObject({
    inc: incarnation(), seq: expect.stringMatching(/^\d+$/), item: { prompt_id: { S: 'greeting' }, version: { S: CURRENT }, version_number: { N: '1' } },
  });
  const catalog = decodeStreamValue((await inspect.get(l2CatalogKey(table)))!, CATALOG_ID, CURRENT)!;
  expect(catalog.item!.bloom).toEqual({ B: expect.stringMatching(/^[A-Za-z0-9+/]+=*$/) });
  expect(await inspect.exists(l2ItemKey(table, 'greeting', versionKey(1)))).toBe(0);
  // AND the epoch moved by exactly one, for one batch (created, it starts at a random counter), and names the
  // table's incarnation
  if (epochBefore === 0) expect(await epochCounter()).toBeGreaterThan(0);
  else expect(await epochCounter()).toBe(epochBefore + 1);
  expect(epochIncarnation(await inspect.get(l2EpochKey(table)))).toBe(incarnation());
  // AND the values live L2_VALUE_TTL_SECONDS
  expect(await inspect.ttl(l2ItemKey(table, 'greeting', CURRENT))).toBeGreaterThan(86_000);
  // AND the function logged one structured line for the batch
  expect(fn.logs.map((l) => JSON.parse(l)).filter((l) => l.message === 'batch written through').at(-1))
    .toMatchObject({ level: 'INFO', records: 3, written: 3, kept: 0 });
});

test('redelivered and reordered records never replace a newer pointer with an older one', async () => {
  // GIVEN three changes of one prompt on the stream
  await publish(admin, table, 'churn', 1, textContent('one'));
  await publish(admin, table, 'churn', 2, textContent('two'));
  await publish(admin, table, 'churn', 3, textContent('three'));
  const records = (await stream.read()).filter((r) => r.dynamodb.Keys.prompt_id?.S === 'churn' && r.dynamodb.Keys.version?.S === CURRENT);
  expect(records).toHaveLength(3);

  // WHEN they are delivered newest first, then each twice more in order (redelivery after a timeout)
  await fn.invoke({ Records: [...records].reverse() });
  for (const r of [...records, ...records]) await fn.invoke({ Records: [r] });

  // THEN the L2 holds version 3, with the newest record's sequence number
  expect(await stored('churn')).toMatchObject({ seq: records[2].dynamodb.SequenceNumber, item: { version_number: { N: '3' } } });
});

test('a REMOVE deletes the key; a tombstone is written through and readers are told not found', async () => {
  // GIVEN a prompt in the L2 (and in the catalog, so the tombstone is what answers)
  await publish(admin, table, 'gone', 1, textContent('bye'));
  await writeCatalog(admin, table, ['greeting', 'faq', 'gone']);
  await stream.drain();
  expect(await stored('gone')).toBeDefined();
  // WHEN it is deleted at the source (the pointer becomes a tombstone)
  await markDeleted(admin, table, 'gone');
  await stream.drain();
  // THEN the tombstone is in the L2 and a reader answers not found without reading the table
  expect(await stored('gone')).toMatchObject({ item: { status: { S: 'DELETED' } } });
  const counter = new CallCounter();
  const reader = cacheClient(cache);
  closers.push(() => reader.close());
  const prompts = new PromptClient({ tableName: table, dynamoDBClient: counter.attach(localDynamoDBClient()), l2: cacheTier(reader) });
  closers.push(() => prompts.close());
  await expect(prompts.getPrompt('gone')).rejects.toThrow("prompt 'gone' not found: deleted");
  expect(counter.count('GetItem') + counter.count('BatchGetItem')).toBe(0);
  // AND a REMOVE event (the pointer row itself deleted) is written through as "removed": not found, no table read
  const [removal] = (await stream.read());
  expect(removal).toBeUndefined();
  await fn.invoke({
    Records: [{
      eventID: 'x',
      eventName: 'REMOVE',
      eventSourceARN: streamArn,
      dynamodb: { Keys: { prompt_id: { S: 'gone' }, version: { S: CURRENT } }, SequenceNumber: '9'.repeat(40) },
    }],
  });
  expect(await stored('gone')).toMatchObject({ item: null });
  prompts.invalidate('gone');
  await expect(prompts.getPrompt('gone')).rejects.toThrow("prompt 'gone' not found");
  expect(counter.count('GetItem') + counter.count('BatchGetItem')).toBe(0);
});

test('the ACL users hold exactly the library\'s rights: readers write only their fills, never the epoch or a stream value', async () => {
  // GIVEN a reader and a writer connection made by the adapter (IAM token, TLS, cluster)
  const reader = cacheClient(cache, READER);
  const writer = cacheClient(cache, WRITER);
  closers.push(() => reader.close(), () => writer.close());
  await Promise.all([reader.ready(), writer.ready()]);
  expect(reader.isConnected && writer.isConnected).toBe(true);
  // THEN the reader reads every key of its table, and writes its fills only
  await expect(reader.get(l2EpochKey(table))).resolves.not.toBeUndefined();
  await expect(reader.get(l2ItemKey(table, 'greeting', CURRENT))).resolves.not.toBeNull();
  await expect(reader.set(l2FillKey(table, 'x', CURRENT), '{}', 5)).resolves.toBe('OK');
  await expect(reader.set(l2EpochKey(table), '1 2099-01-01T00:00:00.000', 60)).rejects.toThrow(/NOPERM/);
  await expect(reader.set(l2ItemKey(table, 'greeting', CURRENT), '{}', 60)).rejects.toThrow(/NOPERM/);
  await expect(reader.incr(l2EpochKey(table))).rejects.toThrow(/NOPERM/);
  await expect(reader.delete(l2ItemKey(table, 'x', CURRENT))).rejects.toThrow(/NOPERM/);
  await expect(reader.writeThroughValue(l2ItemKey(table, 'x', CURRENT), incarnation(), '1', '{}', 60)).rejects.toThrow(/NOPERM/);
  await expect(reader.bumpEpoch(l2EpochKey(table), incarnation(), incarnation())).rejects.toThrow(/NOPERM/);
  // AND only the writer runs the scripts and DEL
  await expect(writer.delete(l2ItemKey(table, 'x', CURRENT))).resolves.toBe(0);
  // AND neither reaches another table's keys, nor runs anything else
  await expect(reader.get(l2ItemKey('other-table', 'x', CURRENT))).rejects.toThrow(/NOPERM/);
  await expect(reader.set(l2FillKey('other-table', 'x', CURRENT), '{}', 5)).rejects.toThrow(/NOPERM/);
  await expect(writer.writeThroughValue(l2ItemKey('other-table', 'x', CURRENT), incarnation(), '1', '{}', 60)).rejects.toThrow(/NOPERM/);
  const raw = createClient({ url: cache.url, username: READER, password: 'any', socket: { tls: true, ca: cache.ca, servername: 'localhost', reconnectStrategy: false } });
  raw.on('error', () => undefined);
  await raw.connect();
  closers.push(() => raw.close().catch(() => undefined));
  await expect(raw.keys('*')).rejects.toThrow(/NOPERM/);
  await expect(raw.flushAll()).rejects.toThrow(/NOPERM/);
  await expect(raw.incr(l2ItemKey(table, 'x', CURRENT))).rejects.toThrow(/NOPERM/);
  await expect(raw.set(l2EpochKey(table), 'garbage')).rejects.toThrow(/NOPERM/);
  await expect(raw.eval("return redis.call('SET', KEYS[1], 'x')", { keys: [l2EpochKey(table)] })).rejects.toThrow(/NOPERM/);
});

test.each([
  ['another type', async (key: string) => { await inspect.del(key); await inspect.hSet(key, 'a', '1'); }],
  ['not an integer', async (key: string) => { await inspect.set(key, 'banana'); }],
  ['INCRed past int64', async (key: string) => { await inspect.set(key, '9223372036854775807'); }],
  ['a counter of 15 digits', async (key: string) => { await inspect.set(key, `999999999999999 ${incarnation()}`); }],
  ['an incarnation in the future', async (key: string) => { await inspect.set(key, '5 2999-01-01T00:00:00.000'); }],
  ['an empty string', async (key: string) => { await inspect.set(key, ''); }],
])('an epoch holding garbage (%s) heals on the next batch, which is applied', async (_name, poison) => {
  // GIVEN the epoch poisoned by someone with every right on the cache
  await poison(l2EpochKey(table));
  // WHEN a change is written through
  await publish(admin, table, 'heal', Date.now() % 100000, textContent('heal'));
  await stream.drain();
  // THEN the batch was applied (nothing in the dead-letter queue) and the epoch is well-formed again
  expect(stream.invocations.at(-1)).toMatchObject({ threw: false, failures: 0 });
  const epoch = await inspect.get(l2EpochKey(table));
  expect(epoch).toMatch(/^\d{1,14} /);
  expect(epochIncarnation(epoch)).toBe(incarnation());
});

test('a pointer whose revision goes down (repair restarting at 1, removed by hand) is still written through', async () => {
  // GIVEN a prompt at v5, revision 5, in the L2
  for (let v = 1; v <= 5; v++) await publish(admin, table, 'lowered', v, textContent(`v${v}`));
  await stream.drain();
  expect(await stored('lowered')).toMatchObject({ item: { version_number: { N: '5' }, revision: { N: '5' } } });
  // WHEN a repair rewrites the pointer at v6 with revision 1, then a hand edit removes the revision at v8
  await admin.send(new PutItemCommand({ TableName: table, Item: { ...pointerItem('lowered', 6, 'six'), revision: { N: '1' } } }));
  await stream.drain();
  expect(await stored('lowered')).toMatchObject({ item: { version_number: { N: '6' }, revision: { N: '1' } } });
  await admin.send(new PutItemCommand({ TableName: table, Item: pointerItem('lowered', 8, 'eight') }));
  await stream.drain();
  // THEN the L2 follows the table each time, and a reader serves v8
  expect(await stored('lowered')).toMatchObject({ item: { version_number: { N: '8' } } });
  expect(fn.logs.map((l) => JSON.parse(l)).filter((l) => l.message === 'batch written through').at(-1)).toMatchObject({ written: 1, kept: 0 });
});

test('the cache full (maxmemory, noeviction): the value that cannot land is deleted and counted; readers read the table', async () => {
  // GIVEN a prompt in the L2 at v1 (and in the catalog)
  await publish(admin, table, 'full', 1, textContent('v1'));
  await writeCatalog(admin, table, ['greeting', 'faq', 'gone', 'full']);
  await stream.drain();
  expect(await stored('full')).toMatchObject({ item: { version_number: { N: '1' } } });
  // WHEN the cache is full and refuses writes, and the pointer moves to v2
  await inspect.configSet({ 'maxmemory-policy': 'noeviction', 'maxmemory': '1' });
  try {
    await publish(admin, table, 'full', 2, textContent('v2'));
    await stream.drain();
  } finally {
    await inspect.configSet({ maxmemory: '0' });
  }
  // THEN the batch succeeded (nothing to the dead-letter queue), the stale v1 is gone, and so is the epoch
  expect(stream.invocations.at(-1)).toMatchObject({ threw: false, failures: 0 });
  expect(await inspect.exists(l2ItemKey(table, 'full', CURRENT))).toBe(0);
  expect(await inspect.exists(l2EpochKey(table))).toBe(0);
  // AND the drop was counted in the metric the construct alarms on (Embedded Metric Format)
  const metric = fn.logs.map((l) => JSON.parse(l)).filter((l) => l.WriteThroughDrops !== undefined).at(-1);
  expect(metric).toMatchObject({ TableName: table, WriteThroughDrops: 2, _aws: { CloudWatchMetrics: [{ Namespace: 'CdkPromptServing' }] } });
  // AND a reader serves v2 from the table
  const reader = cacheClient(cache);
  closers.push(() => reader.close());
  const prompts = new PromptClient({ tableName: table, dynamoDBClient: localDynamoDBClient(), l2: cacheTier(reader) });
  closers.push(() => prompts.close());
  expect((await prompts.getPrompt('full')).version).toBe(2);
  // AND the next batch restores the epoch
  await publish(admin, table, 'full', 3, textContent('v3'));
  await stream.drain();
  expect(epochIncarnation(await inspect.get(l2EpochKey(table)))).toBe(incarnation());
});

test('a catalog fill of no lineage (filled while the epoch was garbage) never rules out a prompt the table\'s catalog holds once the epoch is gone', async () => {
  // GIVEN the epoch garbage while a reader reads the catalog from the table: it knows no lineage, so it fills with none
  await writeCatalog(admin, table, ['greeting', 'faq', 'gone', 'full']);
  await stream.drain();
  await inspect.set(l2EpochKey(table), 'banana');
  const earlyL2 = cacheClient(cache);
  const early = new PromptClient({ tableName: table, dynamoDBClient: localDynamoDBClient(), l2: cacheTier(earlyL2) });
  await expect(early.getPrompt('late')).rejects.toThrow("prompt 'late' not found: not in the catalog");
  const fillKey = l2FillKey(table, CATALOG_ID, CURRENT);
  for (let i = 0; i < 200 && await inspect.exists(fillKey) === 0; i++) await new Promise((r) => setTimeout(r, 10));
  expect(JSON.parse((await inspect.get(fillKey))!)).toMatchObject({ inc: null });
  await early.close();
  await earlyL2.close();
  // WHEN the prompt is published into the catalog and written through (the epoch heals), then the epoch is lost
  // again (as when the cache is full and the write-through deletes it), the fill still within maxAgeSeconds
  await publish(admin, table, 'late', 1, textContent('late'));
  await writeCatalog(admin, table, ['greeting', 'faq', 'gone', 'full', 'late']);
  await stream.drain();
  expect(epochIncarnation(await inspect.get(l2EpochKey(table)))).toBe(incarnation());
  await inspect.del(l2EpochKey(table));
  // THEN a fresh reader serves it: the fill's verdict was checked against the table's catalog first
  const counter = new CallCounter();
  const reader = cacheClient(cache);
  closers.push(() => reader.close());
  const prompts = new PromptClient({ tableName: table, dynamoDBClient: counter.attach(localDynamoDBClient()), l2: cacheTier(reader) });
  closers.push(() => prompts.close());
  expect((await prompts.getPrompt('late')).version).toBe(1);
  expect(counter.count('GetItem')).toBe(2); // the prompt, beside the catalog (cold); the catalog, past the fill
  // AND an id neither catalog holds is still ruled out, by the table's catalog now held, without another read
  await expect(prompts.getPrompt('never-synced')).rejects.toThrow('not in the catalog');
  expect(counter.count('GetItem')).toBe(2);
  // AND the next batch restores the epoch
  await publish(admin, table, 'late', 2, textContent('late'));
  await stream.drain();
  expect(epochIncarnation(await inspect.get(l2EpochKey(table)))).toBe(incarnation());
});

test('an epoch deleted (evicted, lost in a failover) and re-created by the next batch never repeats a value a reader saw: the change reaches it within the push bound', async () => {
  // GIVEN an epoch re-created from nothing by a batch, and a reader that has read it and a prompt
  await publish(admin, table, 'recreated', 1, textContent('one'));
  await writeCatalog(admin, table, ['greeting', 'faq', 'gone', 'full', 'late', 'recreated']);
  await stream.drain();
  await inspect.del(l2EpochKey(table));
  await publish(admin, table, 'recreated-other', 1, textContent('other'));
  await stream.drain();
  const seen = await inspect.get(l2EpochKey(table));
  expect(epochIncarnation(seen)).toBe(incarnation());
  const reader = cacheClient(cache);
  closers.push(() => reader.close());
  const prompts = new PromptClient({
    tableName: table, dynamoDBClient: localDynamoDBClient(), l2: cacheTier(reader), maxAgeSeconds: 60, epochPollIntervalMs: 100,
  });
  closers.push(() => prompts.close());
  expect((await prompts.getPrompt('recreated')).version).toBe(1);
  await new Promise((r) => setTimeout(r, 300)); // the reader has polled the epoch it holds
  // WHEN the epoch is lost again and the next batch (a change of that prompt) re-creates it
  await inspect.del(l2EpochKey(table));
  await publish(admin, table, 'recreated', 2, textContent('two'));
  await stream.drain();
  const recreated = await inspect.get(l2EpochKey(table));
  // THEN the re-created epoch is not the value the reader saw (a random start, not 1 again), still parsed by readers
  expect(recreated).not.toBe(seen);
  expect(epochIncarnation(recreated)).toBe(incarnation());
  // AND the reader serves the change within the push bound (two poll intervals and the re-validation), not maxAgeSeconds
  const started = Date.now();
  while ((await prompts.getPrompt('recreated')).version !== 2 && Date.now() - started < 3000) await new Promise((r) => setTimeout(r, 20));
  expect((await prompts.getPrompt('recreated')).version).toBe(2);
  expect(Date.now() - started).toBeLessThan(1000);
});

test('a key of the wrong type is replaced by the write-through', async () => {
  await inspect.hSet(l2ItemKey(table, 'wrongtype', CURRENT), 'x', '1');
  await publish(admin, table, 'wrongtype', 1, textContent('v1'));
  await stream.drain();
  expect(stream.invocations.at(-1)).toMatchObject({ threw: false, failures: 0 });
  expect(await stored('wrongtype')).toMatchObject({ item: { version_number: { N: '1' } } });
});

test('one poison record is isolated by bisection: the rest of its batch is applied, it alone goes to the dead-letter queue after bounded retries', async () => {
  // GIVEN a batch of 6 real records with one corrupted in the middle (its NewImage lost)
  for (let i = 1; i <= 6; i++) await publish(admin, table, `p${i}`, 1, textContent(`text ${i}`));
  const records = (await stream.read()).filter((r) => r.dynamodb.Keys.version?.S === CURRENT);
  expect(records).toHaveLength(6);
  const poison = { ...records[2], dynamodb: { ...records[2].dynamodb, NewImage: undefined } };
  const batch = [...records.slice(0, 2), poison, ...records.slice(3)];
  const dlqBefore = stream.dlq.length;
  const invocationsBefore = stream.invocations.length;

  // WHEN the mapping delivers it
  await (stream as unknown as { deliver(b: unknown[], a: number): Promise<void> }).deliver(batch, 0);

  // THEN every good record is in the L2
  for (const i of [1, 2, 4, 5, 6]) expect(await stored(`p${i}`)).toMatchObject({ item: { revision: { N: '1' } } });
  expect(await stored('p3')).toBeUndefined();
  // AND the poison record alone reached the dead-letter queue, after 1 + maxRetries (2) attempts on its own
  expect(stream.dlq.slice(dlqBefore)).toEqual([[poison]]);
  const alone = stream.invocations.slice(invocationsBefore)
    .filter((i) => i.sequenceNumbers.length === 1 && i.sequenceNumbers[0] === poison.dynamodb.SequenceNumber);
  expect(alone).toHaveLength(3);
  expect(fn.logs.some((l) => l.includes('stream record breaks the contract') && l.includes(poison.dynamodb.SequenceNumber))).toBe(true);
});

test('the L2 down: bounded retries, then the dead-letter queue; the function heals by itself once the L2 is back', async () => {
  // GIVEN the cache stopped
  await cache.stop();
  await publish(admin, table, 'during-outage', 1, textContent('x'));
  const invocationsBefore = stream.invocations.length;
  // WHEN the mapping delivers the change
  await stream.drain();
  // THEN it was tried 1 + maxRetries times (each reporting the record failed), then sent to the dead-letter queue
  const tries = stream.invocations.slice(invocationsBefore);
  expect(tries).toHaveLength(3);
  expect(tries.every((t) => t.failures === 1 && !t.threw)).toBe(true);
  expect(stream.dlq.at(-1)?.map((r) => r.dynamodb.Keys.prompt_id)).toEqual([{ S: 'during-outage' }]);

  // WHEN the cache comes back on the same port, and further changes arrive (each tried 1 + maxRetries times at once)
  cache = await startCache(table, cache);
  let applied = false;
  let changes = 0;
  while (!applied && changes < 20) {
    changes++;
    await publish(admin, table, 'after-outage', changes, textContent(`y${changes}`));
    await stream.drain();
    applied = (await readWithFreshClient('after-outage')) !== undefined;
    if (!applied) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  // THEN the same function process wrote one through within a few seconds (it reconnected by itself)
  expect(applied).toBe(true);
  expect(changes).toBeLessThanOrEqual(8); // the adapter retries a connection at most once a second
});

async function readWithFreshClient(promptId: string) {
  const c = createClient({ url: cache.url, ...ADMIN_AUTH, socket: { tls: true, ca: cache.ca, servername: 'localhost', reconnectStrategy: false } });
  c.on('error', () => undefined);
  await c.connect();
  try {
    const raw = await c.get(l2ItemKey(table, promptId, CURRENT));
    return raw === null ? undefined : decodeStreamValue(raw, promptId, CURRENT);
  } finally {
    await c.close();
  }
}

test('the function fails at init naming a missing variable', async () => {
  const { PROMPT_SERVING_TABLE_NAME: _omitted, ...env } = handlerEnv(table, cache);
  await expect(startLambda(BUNDLE, env)).rejects.toThrow(/environment variable PROMPT_SERVING_TABLE_NAME is not set/);
});

/** A pointer item as a person might write it by hand (no revision). */
function pointerItem(promptId: string, versionNumber: number, text: string) {
  const content = textContent(text);
  return toItem({
    ...content, prompt_id: promptId, version: CURRENT, version_number: versionNumber, status: 'ACTIVE', checksum: checksum(content),
  });
}

void ValkeyL2;
