/**
 * Labels and sticky rollouts on the read side, against real DynamoDB Local (started by the jest global setup):
 * GetItem calls counted and their keys logged with SDK middleware, label items written in the wire contract's shape
 * (./labels-fixtures.ts). The cache tier's part (label moves through the epoch, a fleet of reader processes) is in
 * ./labels-cache.test.ts.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fakeDate, logGetItemKeys, markDeleted, publish, textContent, writeCatalog } from './fixtures';
import { deleteLabel, removeRollout, rolloutMap, setRollout, writeLabel } from './labels-fixtures';
import { labels, preload, Prompt, PromptClient, PromptClientOptions, PromptNotFoundError, PromptServingError } from '../../src/runtime';
import { checksum, rolloutBucket } from '../../src/schema';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let table: string;
const opened: DynamoDBClient[] = [];
const v1 = textContent('Hello v1 {{name}}');
const v2 = textContent('Hello v2 {{name}}');
const v3 = textContent('Hello v3 {{name}}');

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  await publish(admin, table, 'greeting', 1, v1);
  await publish(admin, table, 'greeting', 2, v2);
  await publish(admin, table, 'greeting', 3, v3);
  await writeLabel(admin, table, 'greeting', 'production', 1, v1);
  await writeLabel(admin, table, 'greeting', 'staging', 2, v2);
  await writeCatalog(admin, table, ['greeting']);
});

afterAll(async () => {
  await deleteTable(admin, table);
  admin.destroy();
});

afterEach(() => {
  jest.useRealTimers();
  jest.restoreAllMocks();
  for (const client of opened.splice(0)) client.destroy();
});

function newClient(options: PromptClientOptions = {}) {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  opened.push(dynamoDBClient);
  const keys = logGetItemKeys(dynamoDBClient);
  const prompts = new PromptClient({ tableName: table, dynamoDBClient, features: [labels], ...options });
  const reads = () => counter.count('GetItem') + counter.count('BatchGetItem');
  return { prompts, counter, keys, reads };
}

describe('labels', () => {
  test('a client not given the labels feature refuses a label read, naming the fix, and reads nothing', async () => {
    // GIVEN a client without `features: [labels]`
    const { prompts, reads } = newClient({ features: [] });
    // WHEN it is asked for a label, directly or by preload
    // THEN both are refused before any read, naming the feature to pass; CURRENT reads still work
    await expect(prompts.getPrompt('greeting', { label: 'production' })).rejects.toThrow(PromptServingError);
    await expect(prompts.getPrompt('greeting', { label: 'production' })).rejects.toThrow('features: [labels]');
    await expect(preload(prompts, ['greeting'], { labels: ['production'] })).rejects.toThrow('features: [labels]');
    expect(reads()).toBe(0);
    expect((await prompts.getPrompt('greeting')).id).toBe('greeting');
  });

  test('a label serves the version it points at, reports the label, and leaves the label attributes out of the content', async () => {
    // GIVEN
    const { prompts, keys } = newClient();
    // WHEN
    const production = await prompts.getPrompt('greeting', { label: 'production' });
    const staging = await prompts.getPrompt('greeting', { label: 'staging' });
    const current = await prompts.getPrompt('greeting');
    // THEN
    expect(production).toMatchObject({ id: 'greeting', version: 1, checksum: checksum(v1), label: 'production', sourceDeleted: false, rollout: undefined });
    expect(production.content).toEqual(v1);
    expect(staging).toMatchObject({ version: 2, label: 'staging' });
    expect(current).toMatchObject({ version: 3, label: undefined, sourceDeleted: false });
    expect(keys).toEqual(expect.arrayContaining(['greeting/LABEL#production', 'greeting/LABEL#staging']));
    expect(keys.filter((k) => k === '#catalog/CURRENT').length).toBeLessThanOrEqual(1);
  });

  test('a cached labeled read costs no table read, as a cached CURRENT read; one load serves concurrent reads', async () => {
    // GIVEN
    const { prompts, reads } = newClient();
    // WHEN 50 concurrent cold reads, then 1000 warm ones
    const cold = await Promise.all(Array.from({ length: 50 }, () => prompts.getPrompt('greeting', { label: 'production' })));
    const afterCold = reads();
    for (let i = 0; i < 1000; i++) await prompts.getPrompt('greeting', { label: 'production' });
    // THEN one GetItem of the label item for all of them (the catalog is not read for labels)
    expect(new Set(cold).size).toBe(1);
    expect(afterCold).toBe(1);
    expect(reads()).toBe(1);
    expect(prompts.stats()).toMatchObject({ hits: 1000, misses: 50 });
  });

  test('a label that does not exist is not found through the negative cache, the reason naming the label', async () => {
    // GIVEN
    const { prompts, reads } = newClient();
    // WHEN / THEN
    await expect(prompts.getPrompt('greeting', { label: 'canary' })).rejects.toThrow("prompt 'greeting' not found: no label 'canary'");
    await expect(prompts.getPrompt('greeting', { label: 'canary' })).rejects.toBeInstanceOf(PromptNotFoundError);
    expect(reads()).toBe(1);
    expect(prompts.stats().negativeHits).toBe(1);
    // and invalidate(id) forgets that answer too
    prompts.invalidate('greeting');
    await expect(prompts.getPrompt('greeting', { label: 'canary' })).rejects.toThrow("no label 'canary'");
    expect(reads()).toBe(2);
  });

  test.each([
    ['__proto__', '__proto__'], ['toString', 'toString'], ['uppercase', 'Production'], ['empty', ''], ['too long', 'x'.repeat(64)],
    ['reserved', 'current'], ['a number', 42], ['null', null], ['a list', ['production']], ['a hash', 'prod#1'],
  ])('a hostile label (%s) is not found without a remote call, the reason naming the rule', async (_name, label) => {
    // GIVEN
    const { prompts, reads } = newClient();
    // WHEN
    const read = prompts.getPrompt('greeting', { label: label as string });
    // THEN
    await expect(read).rejects.toBeInstanceOf(PromptNotFoundError);
    await expect(read).rejects.toThrow(/not a valid label \((label name .* must match|label name 'current' is reserved|a label name must be a string)/);
    expect(reads()).toBe(0);
    // and the prompt is still served
    expect((await prompts.getPrompt('greeting', { label: 'production' })).version).toBe(1);
  });

  test("a valid label named like an object's property ('constructor') is a label like any other", async () => {
    const { prompts } = newClient();
    await expect(prompts.getPrompt('greeting', { label: 'constructor' })).rejects.toThrow("no label 'constructor'");
    await writeLabel(admin, table, 'greeting', 'constructor', 2, v2);
    prompts.invalidate('greeting');
    expect(await prompts.getPrompt('greeting', { label: 'constructor' })).toMatchObject({ version: 2, label: 'constructor' });
  });

  test('version and label together, or a stickiness key that is not a string, are rejected with a clear error', async () => {
    const { prompts, reads } = newClient();
    await expect(prompts.getPrompt('greeting', { label: 'production', version: 2 })).rejects.toThrow('give `version` or `label`, not both');
    await expect(prompts.getPrompt('greeting', { label: 'production', stickinessKey: 42 as unknown as string }))
      .rejects.toThrow(new PromptServingError('`stickinessKey` must be a string, got number'));
    expect(reads()).toBe(0);
  });

  test('a label whose prompt the source deleted keeps serving its content, flagged sourceDeleted, while CURRENT is not found', async () => {
    // GIVEN a prompt the source deleted: CURRENT is a tombstone, the catalog no longer lists it, the label stays
    await publish(admin, table, 'retired', 1, v1);
    await writeLabel(admin, table, 'retired', 'production', 1, v1, { source_deleted_at: '2026-12-01T18:00:00.000Z' });
    await markDeleted(admin, table, 'retired');
    const { prompts } = newClient();
    // WHEN / THEN
    await expect(prompts.getPrompt('retired')).rejects.toBeInstanceOf(PromptNotFoundError);
    const labeled = await prompts.getPrompt('retired', { label: 'production' });
    expect(labeled).toMatchObject({ version: 1, label: 'production', sourceDeleted: true });
    expect(labeled.content).toEqual(v1);
  });

  test('a label moved and a label deleted are seen after invalidate (the cache tier sees it by the epoch)', async () => {
    const { prompts } = newClient();
    await writeLabel(admin, table, 'greeting', 'moving', 1, v1);
    expect((await prompts.getPrompt('greeting', { label: 'moving' })).version).toBe(1);
    await writeLabel(admin, table, 'greeting', 'moving', 3, v3);
    expect((await prompts.getPrompt('greeting', { label: 'moving' })).version).toBe(1); // fresh in memory
    prompts.invalidate('greeting');
    expect((await prompts.getPrompt('greeting', { label: 'moving' })).version).toBe(3);
    await deleteLabel(admin, table, 'greeting', 'moving');
    prompts.invalidate('greeting');
    await expect(prompts.getPrompt('greeting', { label: 'moving' })).rejects.toThrow("no label 'moving'");
  });

  test('preload with labels: the first labeled reads are served from memory', async () => {
    const { prompts, reads } = newClient();
    await preload(prompts, ['greeting'], { labels: ['production', 'staging'] });
    const before = reads();
    expect((await prompts.getPrompt('greeting', { label: 'staging' })).version).toBe(2);
    expect((await prompts.getPrompt('greeting', { label: 'production' })).version).toBe(1);
    expect(reads()).toBe(before);
    await expect(preload(prompts, ['greeting'], { labels: ['Bad'] })).rejects.toThrow('not a valid label');
  });

  test('preload with a bad label name throws before any read starts (nothing left running unawaited)', async () => {
    const { prompts, reads } = newClient();
    const before = reads();
    await expect(preload(prompts, ['greeting', 'farewell'], { labels: ['production', 'Bad'] })).rejects.toThrow('not a valid label');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reads()).toBe(before);
    expect(prompts.stats().misses).toBe(0);
  });
});

describe('rollouts', () => {
  const keys = Array.from({ length: 400 }, (_, i) => `user-${i}`);

  test('with a stickiness key, arm B exactly for the keys whose bucket is under the share; the candidate read once', async () => {
    // GIVEN production on v1 rolling out v3 to 25 %
    await writeLabel(admin, table, 'greeting', 'ro-sticky', 1, v1, { rollout: rolloutMap('r-sticky', 3, v3, 2500) });
    const { prompts, keys: asked } = newClient();
    // WHEN every key reads twice
    const served: Prompt[] = [];
    for (const key of [...keys, ...keys]) served.push(await prompts.getPrompt('greeting', { label: 'ro-sticky', stickinessKey: key }));
    // THEN each key's arm is the hash's, the same both times, with the arm's version and content
    keys.forEach((key, i) => {
      const arm = rolloutBucket('greeting', 'ro-sticky', key) < 2500 ? 'B' : 'A';
      for (const p of [served[i], served[i + keys.length]]) {
        expect(p.rollout).toEqual({ label: 'ro-sticky', rolloutId: 'r-sticky', arm, percentBp: 2500, candidateVersion: 3 });
        expect(p.version).toBe(arm === 'B' ? 3 : 1);
        expect(p.checksum).toBe(checksum(arm === 'B' ? v3 : v1));
        expect(p.label).toBe('ro-sticky');
      }
    });
    const b = served.slice(0, keys.length).filter((p) => p.rollout?.arm === 'B').length;
    expect(b).toBe(keys.filter((k) => rolloutBucket('greeting', 'ro-sticky', k) < 2500).length);
    expect(b).toBeGreaterThan(50);
    expect(asked.filter((k) => k === 'greeting/v000003')).toHaveLength(1);
    expect(prompts.stats().rolloutFaults).toBe(0);
  });

  test('without a key, each read picks its arm at random by the share', async () => {
    await writeLabel(admin, table, 'greeting', 'ro-random', 1, v1, { rollout: rolloutMap('r-random', 2, v2, 5000) });
    const { prompts } = newClient();
    const arms = { A: 0, B: 0 };
    for (let i = 0; i < 1000; i++) arms[(await prompts.getPrompt('greeting', { label: 'ro-random' })).rollout!.arm]++;
    expect(arms.A).toBeGreaterThan(400);
    expect(arms.B).toBeGreaterThan(400);
  });

  test.each([
    ['percent out of range', (m: Record<string, unknown>) => ({ ...m, percent_bp: 12000 }), 'percent_bp 12000 is not a whole number from 0 to 10000'],
    ['candidate missing', (m: Record<string, unknown>) => ({ ...m, candidate_version: undefined }), 'candidate_version absent'],
    ['candidate version item absent', (m: Record<string, unknown>) => ({ ...m, candidate_version: 9 }), 'candidate version item v000009 is absent'],
    ['checksum mismatch', (m: Record<string, unknown>) => ({ ...m, candidate_checksum: checksum(v2) }), `candidate v000003 has checksum ${checksum(v3)}`],
    ['not a map', () => 'fifty percent', 'rollout is not a map'],
  ])('a malformed rollout (%s) fails alone: arm A for every key, counted, logged once, never thrown', async (_name, edit, reason) => {
    // GIVEN
    const label = `bad-${_name.replace(/[^a-z]+/g, '-')}`;
    await writeLabel(admin, table, 'greeting', label, 1, v1, { rollout: edit(rolloutMap('r-bad', 3, v3, 10000)) });
    const log = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const { prompts } = newClient();
    // WHEN
    const served = await Promise.all(keys.slice(0, 50).map((key) => prompts.getPrompt('greeting', { label, stickinessKey: key })));
    // THEN
    for (const p of served) {
      expect(p).toMatchObject({ version: 1, checksum: checksum(v1), label });
      expect(p.content).toEqual(v1);
    }
    expect(prompts.stats().rolloutFaults).toBe(50);
    const warnings = log.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('cannot serve arm B'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(reason);
  });

  test('past maxAgeSeconds, a stale serve keeps each key on its arm while one background read refreshes the label', async () => {
    // GIVEN a rollout at 50 %, read once by every key
    await writeLabel(admin, table, 'greeting', 'ro-stale', 1, v1, { rollout: rolloutMap('r-stale', 2, v2, 5000) });
    const clock = fakeDate();
    const { prompts, reads } = newClient({ maxAgeSeconds: 10, staleWhileRevalidateSeconds: 60 });
    const fresh = await Promise.all(keys.map((key) => prompts.getPrompt('greeting', { label: 'ro-stale', stickinessKey: key })));
    const before = reads();
    // WHEN the copy expires (within the stale-while-revalidate window)
    clock.advanceSeconds(11);
    const stale = await Promise.all(keys.map((key) => prompts.getPrompt('greeting', { label: 'ro-stale', stickinessKey: key })));
    // THEN every key is served its arm again, flagged stale, and the label item is read once in the background
    expect(stale.map((p) => p.rollout?.arm)).toEqual(fresh.map((p) => p.rollout?.arm));
    expect(stale.map((p) => p.version)).toEqual(fresh.map((p) => p.version));
    expect(stale[0].stale).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reads() - before).toBe(1);
    const refreshed = await prompts.getPrompt('greeting', { label: 'ro-stale', stickinessKey: keys[0] });
    expect(refreshed).toMatchObject({ stale: false, rollout: fresh[0].rollout });
  });

  test('a rollout stepped 10 % → 50 % → 100 % only moves keys from A to B; removing it returns every key to A', async () => {
    await writeLabel(admin, table, 'greeting', 'ro-steps', 1, v1, { rollout: rolloutMap('r-steps', 2, v2, 1000) });
    const { prompts, reads } = newClient();
    const arms = async () => Promise.all(keys.map(async (key) => (await prompts.getPrompt('greeting', { label: 'ro-steps', stickinessKey: key })).rollout?.arm ?? 'A'));
    const at10 = await arms();
    for (const [percentBp, expected] of [[5000, 0], [10000, 0]] as const) {
      await setRollout(admin, table, 'greeting', 'ro-steps', rolloutMap('r-steps', 2, v2, percentBp));
      prompts.invalidate('greeting');
      const before = reads();
      const now = await arms();
      expect(reads() - before).toBe(2); // the label item and the candidate (invalidate dropped exact versions too), once for 400 reads
      expect(now.filter((arm, i) => arm === 'A' && at10[i] === 'B')).toHaveLength(expected);
      expect(now.filter((arm) => arm === 'B')).toHaveLength(keys.filter((k) => rolloutBucket('greeting', 'ro-steps', k) < percentBp).length);
    }
    await removeRollout(admin, table, 'greeting', 'ro-steps');
    prompts.invalidate('greeting');
    const aborted = await Promise.all(keys.map((key) => prompts.getPrompt('greeting', { label: 'ro-steps', stickinessKey: key })));
    expect(aborted.every((p) => p.version === 1 && p.rollout === undefined)).toBe(true);
  });
});
