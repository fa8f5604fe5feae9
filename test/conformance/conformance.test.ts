/**
 * The conformance suite, Node side: the same JSON fixtures (test/conformance/fixtures) the Python client's tests
 * run (python/tests/test_conformance.py), so the two clients cannot drift. A case marked `nodeDiffers` is a known
 * divergence of the Node client, run as `test.failing` until the Node side is fixed (then remove the mark).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { createClient } from 'redis';
import { cacheTier, PromptClient, PromptNotFoundError, PromptRenderError, PromptStoreError, render } from '../../src/runtime';
import { resolveOptions } from '../../src/runtime/options';
import { promptFromItem } from '../../src/runtime/prompt';
import { ValkeyL2 } from '../../src/runtime/valkey';
import {
  bloomBuild, bloomIndexes, bloomMightContain, bloomParameters, CATALOG_ID, canonicalJson, checksum, contentOf, CURRENT, isValidPromptId,
} from '../../src/schema';
import { catalogProblem } from '../../src/schema/catalog';
import {
  compareTokens, decodeFillValue, decodeStreamValue, encodeFillValue, encodeStreamValue, epochIncarnation, l2CatalogKey, l2EpochKey,
  l2FillKey, l2FillPattern, l2FillTtlSeconds, l2ItemKey, l2KeyPattern, L2_EPOCH_BUMP_SCRIPT, L2_MAX_CLOCK_SKEW_MS, L2_VALUE_TTL_SECONDS,
  L2_WRITE_THROUGH_SCRIPT, toDynamoJson,
} from '../../src/schema/l2';
import { logGetItemKeys } from '../runtime/fixtures';
import { CallCounter } from '../support/call-counter';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const FIXTURES = path.join(__dirname, 'fixtures');
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const load = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, name), 'utf8'));

/** `{ repeat, times }` → the repeated string; anything else as is. */
function idOf(spec: unknown): unknown {
  if (spec !== null && typeof spec === 'object' && 'repeat' in spec) {
    const { repeat, times } = spec as { repeat: string; times: number };
    return repeat.repeat(times);
  }
  return spec;
}

describe('prompt ids', () => {
  for (const c of load('ids.json').cases) {
    const run = c.nodeDiffers ? test.failing : test;
    run(`${c.name}${c.nodeDiffers ? ` [nodeDiffers: ${c.nodeDiffers}]` : ''}`, () => {
      expect(isValidPromptId(idOf(c.id))).toBe(c.valid);
    });
  }
});

describe('checksum', () => {
  test.each(load('checksum.json').cases.map((c: { name: string }) => [c.name, c]))('%s', (...[_name, c]: any[]) => {
    expect(canonicalJson(contentOf(c.content))).toBe(c.canonical);
    expect(checksum(c.content)).toBe(c.checksum);
  });
});

describe('catalog integrity (an unverifiable catalog is ignored by readers)', () => {
  test.each(load('catalog-integrity.json').cases.map((c: { name: string }) => [c.name, c]))('%s', (...[, c]: any[]) => {
    const f = c.fields;
    const bloom = f.bloom === undefined || f.bloomIsText ? f.bloom : new Uint8Array(Buffer.from(f.bloom, 'base64'));
    const problem = catalogProblem({ bloom, bits: f.bits, hashes: f.hashes, count: f.count, revision: f.revision });
    expect(problem === undefined).toBe(c.valid);
  });
});

describe('Bloom catalog, bit-exact', () => {
  const f = load('bloom.json');
  test.each(f.parameters.map((p: { count: number }) => [p.count, p]))('bloomParameters(%d)', (...[_n, p]: any[]) => {
    expect(bloomParameters(p.count)).toEqual({ bits: p.bits, hashes: p.hashes });
  });
  test.each(f.indexes.map((c: any) => [JSON.stringify(c.id).slice(0, 30), c.bits, c.hashes, c]))(
    'bloomIndexes(%s, %d, %d)', (...[_id, _bits, _hashes, c]: any[]) => {
      expect(bloomIndexes(c.id, c.bits, c.hashes)).toEqual(c.indexes);
    });
  test.each(f.filters.map((c: any, i: number) => [i, c.ids.length, c]))('filter %d (%d ids): bytes and probes', (...[_i, _n, c]: any[]) => {
    expect(Buffer.from(bloomBuild(c.ids, c.bits, c.hashes)).toString('base64')).toBe(c.bloom);
    const bytes = new Uint8Array(Buffer.from(c.bloom, 'base64'));
    for (const [id, admitted] of Object.entries(c.probes)) {
      expect([id, bloomMightContain(bytes, c.bits, c.hashes, id)]).toEqual([id, admitted]);
    }
  });
});

describe('options', () => {
  for (const c of load('options.json').cases) {
    test(c.name, () => {
      if (c.error) {
        expect(() => resolveOptions(c.options, c.env)).toThrow(c.error);
        return;
      }
      expect(resolveOptions(c.options, c.env)).toMatchObject(c.expect);
    });
  }
});

describe('render', () => {
  const meta = { prompt_id: 'render-case', version: 'CURRENT', version_number: 1, checksum: `sha256:${'0'.repeat(64)}` };
  // Cases with `repeat` (expanded) and every error field are run by test/runtime/render-conformance.test.ts.
  for (const c of load('render.json').cases.filter((x: { repeat?: unknown }) => x.repeat === undefined)) {
    test(c.name, () => {
      const prompt = promptFromItem({ ...c.content, ...meta });
      if (c.error) {
        let caught: unknown;
        try {
          render(prompt, c.variables, c.options);
        } catch (err) {
          caught = err;
        }
        expect(caught).toBeInstanceOf(PromptRenderError);
        expect((caught as PromptRenderError).missingVariables).toEqual(c.error.missing);
        expect((caught as Error).message).toBe(c.error.message);
        return;
      }
      expect(render(prompt, c.variables, c.options)).toEqual(c.expected);
    });
  }
});

describe('items in the table, read through the real client', () => {
  let ddb: DynamoDBClient;
  let tableName: string;
  const counter = new CallCounter();
  const cases = load('items.json').cases;

  beforeAll(async () => {
    ddb = counter.attach(localDynamoDBClient());
    tableName = await createServingTable(ddb, 'conformance');
    for (const c of cases) {
      for (const item of c.items) await ddb.send(new PutItemCommand({ TableName: tableName, Item: item }));
    }
  });
  afterAll(async () => {
    await deleteTable(ddb, tableName);
    ddb.destroy();
  });

  for (const c of cases) {
    test(c.name, async () => {
      const client = new PromptClient({ tableName, dynamoDBClient: ddb });
      const read = client.getPrompt(c.get.id, c.get.version === null ? undefined : { version: c.get.version });
      if (c.notFound) {
        await expect(read).rejects.toBeInstanceOf(PromptNotFoundError);
        return;
      }
      if (c.storeError) {
        await expect(read).rejects.toBeInstanceOf(PromptStoreError);
        await expect(read).rejects.toThrow(c.storeError);
        return;
      }
      const prompt = await read;
      const e = c.expect;
      expect({ id: prompt.id, version: prompt.version, checksum: prompt.checksum, templateType: prompt.templateType })
        .toEqual({ id: e.id, version: e.version, checksum: e.checksum, templateType: e.templateType });
      expect(prompt.inputVariables).toEqual(e.inputVariables);
      if ('text' in e) expect(prompt.templateType === 'TEXT' && prompt.text).toBe(e.text);
      if ('messages' in e) expect(prompt.templateType === 'CHAT' && prompt.messages).toEqual(e.messages);
      if ('system' in e) expect(prompt.templateType === 'CHAT' && prompt.system).toEqual(e.system);
      if ('modelId' in e) expect(prompt.modelId ?? null).toEqual(e.modelId);
      if ('inferenceConfig' in e) expect(prompt.inferenceConfig ?? null).toEqual(e.inferenceConfig);
      if ('content' in e) expect(prompt.content).toEqual(e.content);
    });
  }

  test('invalid ids are not found without a remote call', async () => {
    const client = new PromptClient({ tableName, dynamoDBClient: ddb });
    counter.reset();
    for (const c of load('ids.json').cases.filter((x: any) => !x.valid && !x.nodeDiffers)) {
      await expect(client.getPrompt(idOf(c.id) as string)).rejects.toBeInstanceOf(PromptNotFoundError);
    }
    expect(counter.count('GetItem')).toBe(0);
  });
});

describe('L2 wire contract (v3)', () => {
  const f = load('l2.json');

  test('keys, TTLs, the scripts and the value encodings', () => {
    for (const k of f.keys) {
      expect(l2ItemKey(k.table, k.promptId, k.sortKey)).toBe(k.key);
      expect(l2FillKey(k.table, k.promptId, k.sortKey)).toBe(k.fillKey);
    }
    expect(l2CatalogKey(f.catalogKey.table)).toBe(f.catalogKey.key);
    expect(l2EpochKey(f.epochKey.table)).toBe(f.epochKey.key);
    expect(l2KeyPattern(f.keyPattern.table)).toBe(f.keyPattern.pattern);
    expect(l2FillPattern(f.keyPattern.table)).toBe(f.keyPattern.fillPattern);
    expect(L2_VALUE_TTL_SECONDS).toBe(f.valueTtlSeconds);
    expect(L2_MAX_CLOCK_SKEW_MS).toBe(f.maxClockSkewMs);
    expect(createHash('sha1').update(L2_WRITE_THROUGH_SCRIPT).digest('hex')).toBe(f.writeThroughScriptSha1);
    expect(createHash('sha1').update(L2_EPOCH_BUMP_SCRIPT).digest('hex')).toBe(f.epochBumpScriptSha1);
    for (const e of f.encodeFill) expect(encodeFillValue({ inc: e.inc, fetchedAt: e.fetchedAt, item: e.item })).toBe(e.encoded);
    for (const e of f.encodeStream) expect(encodeStreamValue({ inc: e.inc, seq: e.seq, writtenAt: e.writtenAt, item: e.item })).toBe(e.encoded);
    for (const c of f.fillTtl) expect([c, l2FillTtlSeconds(c.maxAgeMs, c.staleWhileRevalidateMs)]).toEqual([c, c.ttl]);
    for (const c of f.tokens) {
      expect([c, Math.sign(compareTokens({ inc: c.a[0], seq: c.a[1] }, { inc: c.b[0], seq: c.b[1] }))]).toEqual([c, c.compare]);
    }
  });

  test.each(f.decodeStream.map((c: { name: string }) => [c.name, c]))('stream value: %s', (...[, c]: any[]) => {
    const value = decodeStreamValue(c.raw, c.promptId, c.sortKey);
    expect(value === undefined ? null : { inc: value.inc, seq: value.seq, removed: value.item === null }).toEqual(c.expect);
  });

  test.each(f.decodeFill.map((c: { name: string }) => [c.name, c]))('fill value: %s', (...[, c]: any[]) => {
    const value = decodeFillValue(c.raw, c.promptId, c.sortKey, c.nowMs);
    expect(value === undefined ? null : { inc: value.inc, fetchedAt: value.fetchedAt }).toEqual(c.expect);
  });

  test.each(f.epoch.map((c: { name: string }) => [c.name, c]))('epoch: %s', (...[, c]: any[]) => {
    expect(epochIncarnation(c.raw) ?? null).toBe(c.incarnation);
  });

  describe('scripts on a real redis-server', () => {
    let server: RedisServer;
    let redis: ReturnType<typeof createClient>;
    beforeAll(async () => {
      server = await startRedisServer();
      redis = createClient({ url: server.url, socket: { reconnectStrategy: false } });
      await redis.connect();
    });
    afterAll(async () => {
      await redis.quit();
      await server.stop();
    });

    test.each(f.ordering.map((c: { name: string }) => [c.name, c]))('write-through: %s', async (...[, c]: any[]) => {
      const key = l2ItemKey('ordering', c.name.replace(/ /g, '-'), 'CURRENT');
      await redis.del(key);
      if (c.initial !== null) await redis.set(key, c.initial);
      for (const [inc, seq, expected] of c.writes) {
        const value = JSON.stringify({ inc, seq, writtenAt: 1, item: null });
        const written = await redis.eval(L2_WRITE_THROUGH_SCRIPT, { keys: [key], arguments: [inc, seq, value, '60'] });
        expect([inc, seq, written]).toEqual([inc, seq, expected]);
      }
      expect(JSON.parse((await redis.get(key))!).seq).toBe(c.final);
    });

    test.each(f.epochBump.map((c: { name: string }) => [c.name, c]))('epoch: %s', async (...[, c]: any[]) => {
      const key = l2EpochKey(`epoch-${c.name.replace(/ /g, '-')}`);
      await redis.del(key);
      if (c.initial !== null) await redis.set(key, c.initial);
      await redis.eval(L2_EPOCH_BUMP_SCRIPT, { keys: [key], arguments: [c.inc, f.epochBumpLatest] });
      expect(await redis.get(key)).toBe(c.expect);
    });

    test('epoch: another type is replaced', async () => {
      const key = l2EpochKey('epoch-hash');
      await redis.del(key);
      await redis.hSet(key, 'a', '1');
      await redis.eval(L2_EPOCH_BUMP_SCRIPT, { keys: [key], arguments: [f.epochBump[0].inc, f.epochBumpLatest] });
      expect(await redis.get(key)).toBe(f.epochBump[0].expect);
    });
  });
});

describe('hostile L2 values: both clients serve, read the table, or say not found alike', () => {
  const f = load('l2-hostile.json');
  let ddb: DynamoDBClient;
  let tableName: string;
  let server: RedisServer;
  let redis: ReturnType<typeof createClient>;
  const now = () => Date.now();

  beforeAll(async () => {
    ddb = localDynamoDBClient();
    tableName = await createServingTable(ddb, 'hostile');
    for (const c of f.cases) if (c.tableItem) await ddb.send(new PutItemCommand({ TableName: tableName, Item: c.tableItem }));
    server = await startRedisServer();
    redis = createClient({ url: server.url, socket: { reconnectStrategy: false } });
    await redis.connect();
  });
  afterAll(async () => {
    await redis.quit();
    await server.stop();
    await deleteTable(ddb, tableName);
    ddb.destroy();
  });

  test.each(f.cases.map((c: { name: string }) => [c.name, c]))('%s', async (...[, c]: any[]) => {
    await redis.set(l2EpochKey(tableName), f.epoch);
    const raw = String(c.l2.raw).replace(/"NOW([+-]\d+)?"/, (_m: string, delta?: string) => String(now() + Number(delta ?? 0)));
    const key = c.l2.kind === 'stream' ? l2ItemKey(tableName, c.id, 'CURRENT') : l2FillKey(tableName, c.id, 'CURRENT');
    await redis.set(key, raw);
    const reader = new ValkeyL2({ host: '127.0.0.1', port: server.port, tls: false, cluster: false, connectTimeoutMs: 2000 });
    const client = localDynamoDBClient({ maxAttempts: 1 });
    const keys = logGetItemKeys(client);
    const prompts = new PromptClient({ tableName, dynamoDBClient: client, l2: cacheTier(reader), maxAgeSeconds: 60, l2TimeoutMs: 1000 });
    try {
      const answer = await prompts.getPrompt(c.id).then(
        (p) => ({
          version: p.version,
          inputVariables: [...p.inputVariables],
          ...(p.inferenceConfig !== undefined ? { inferenceConfig: p.inferenceConfig } : {}),
        }),
        (err: unknown) => (err instanceof PromptNotFoundError ? 'notFound' : `error: ${String(err)}`),
      );
      expect(answer).toEqual(c.expect);
      expect(keys.includes(`${c.id}/CURRENT`)).toBe(c.tableRead);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    } finally {
      await prompts.close();
      await reader.close();
      client.destroy();
    }
  });
});

describe('a catalog read from a reader\'s fill never rules an id out alone: both clients read the table\'s catalog first', () => {
  const f = load('l2-hostile.json');
  let ddb: DynamoDBClient;
  let server: RedisServer;
  let redis: ReturnType<typeof createClient>;
  const tables: string[] = [];

  /** The catalog item of `ids`, sized and built as the sync builds it. */
  function catalogItem(ids: string[]) {
    const { bits, hashes } = bloomParameters(ids.length);
    return {
      prompt_id: { S: CATALOG_ID },
      version: { S: CURRENT },
      bloom: { B: bloomBuild(ids, bits, hashes) },
      bloom_bits: { N: String(bits) },
      bloom_hashes: { N: String(hashes) },
      count: { N: String(ids.length) },
      revision: { N: '1' },
    };
  }

  beforeAll(async () => {
    ddb = localDynamoDBClient();
    server = await startRedisServer();
    redis = createClient({ url: server.url, socket: { reconnectStrategy: false } });
    await redis.connect();
  });
  afterAll(async () => {
    await redis.quit();
    await server.stop();
    for (const t of tables) await deleteTable(ddb, t);
    ddb.destroy();
  });

  test.each(f.catalogCases.map((c: { name: string }) => [c.name, c]))('%s', async (...[, c]: any[]) => {
    const tableName = await createServingTable(ddb, 'catfill');
    tables.push(tableName);
    await ddb.send(new PutItemCommand({ TableName: tableName, Item: catalogItem(c.tableCatalog) }));
    for (const item of c.tableItems) await ddb.send(new PutItemCommand({ TableName: tableName, Item: item }));
    if (c.epoch !== null) await redis.set(l2EpochKey(tableName), c.epoch);
    const fetchedAt = Date.now() + Number(/^NOW([+-]\d+)?$/.exec(c.fill.fetchedAt)![1] ?? 0);
    const fill = encodeFillValue({ inc: c.fill.inc, fetchedAt, item: toDynamoJson(catalogItem(c.fill.ids)) });
    await redis.set(l2FillKey(tableName, CATALOG_ID, CURRENT), fill);
    const reader = new ValkeyL2({ host: '127.0.0.1', port: server.port, tls: false, cluster: false, connectTimeoutMs: 2000 });
    const client = localDynamoDBClient({ maxAttempts: 1 });
    const keys = logGetItemKeys(client);
    const prompts = new PromptClient({ tableName, dynamoDBClient: client, l2: cacheTier(reader), maxAgeSeconds: 60, l2TimeoutMs: 1000 });
    try {
      for (const read of c.reads) {
        const answer = await prompts.getPrompt(read.id).then(
          (p) => ({ version: p.version, inputVariables: [...p.inputVariables] }),
          (err: unknown) => (err instanceof PromptNotFoundError ? 'notFound' : `error: ${String(err)}`),
        );
        expect(answer).toEqual(read.expect);
      }
      expect(keys.filter((k) => k === `${CATALOG_ID}/${CURRENT}`)).toHaveLength(c.catalogTableReads);
    } finally {
      await prompts.close();
      await reader.close();
      client.destroy();
    }
  });
});
