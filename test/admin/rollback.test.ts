import { fullSync, readCurrent, syncPrompt, syncVersions, useServingTable, versionItems, writePrompt } from './fixture';
import { contentOf } from '../../src/schema';

const fx = useServingTable();

const V1 = 'Hello {{name}}, this is version one.';
const V2 = 'Hello {{name}}, this is version two.';
const V3 = 'Hello {{name}}, this is version three.';

describe('rolling a prompt back to an older version', () => {
  test('activating an older version makes readers get it: content, version number and checksum', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', [V1, V2, V3]);
    const history = await versionItems(fx, 'greeting');
    const v1 = history.get('v000001')!;
    const v3 = history.get('v000003')!;
    fx.counter.reset();
    // WHEN
    const result = await fx.admin.activate('greeting', 1, { activatedBy: 'alice' });
    // THEN
    expect(result).toEqual({
      promptId: 'greeting',
      versionNumber: 1,
      checksum: v1.checksum,
      previousVersionNumber: 3,
      latestVersionNumber: 3,
      changed: true,
      activatedAt: expect.any(String),
    });
    expect(fx.counter.writes()).toBe(1);
    expect(fx.counter.count('PutItem')).toBe(1);
    const current = await readCurrent(fx, 'greeting');
    expect(contentOf(current!)).toEqual(contentOf(v1));
    expect(current).toMatchObject({
      text: V1,
      version_number: 1,
      checksum: v1.checksum,
      status: 'ACTIVE',
      source_version: v1.source_version,
      activated_by: 'alice',
      activated_at: result.activatedAt,
      synced_at: result.activatedAt,
      // the sync's bookkeeping is the replaced pointer's: what the source holds is still version 3
      latest_version_number: 3,
      source_checksum: v3.checksum,
      source: 'directory',
    });
    expect(await versionItems(fx, 'greeting')).toEqual(history);
  });

  test('the next full or targeted sync with no change at the source leaves the rollback in place, writing nothing', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', [V1, V2, V3]);
    await fx.admin.activate('greeting', 1);
    const rolledBack = await readCurrent(fx, 'greeting');
    fx.counter.reset();
    // WHEN
    const full = await fullSync(fx);
    const targeted = await syncPrompt(fx, 'greeting');
    // THEN
    expect(full).toMatchObject({ written: 0, unchanged: 1, failed: 0, catalogUpdated: false });
    expect(targeted).toMatchObject({ written: 0, unchanged: 1, failed: 0 });
    expect(fx.counter.writes()).toBe(0);
    expect(await readCurrent(fx, 'greeting')).toEqual(rolledBack);
  });

  test('the next real change at the source replaces the rollback with a new version number, history intact', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', [V1, V2, V3]);
    await fx.admin.activate('greeting', 1);
    const history = await versionItems(fx, 'greeting');
    writePrompt(fx, 'greeting', 'Hello {{name}}, this is version four.');
    fx.counter.reset();
    // WHEN
    const report = await fullSync(fx);
    // THEN
    expect(report).toMatchObject({ written: 1, writtenIds: ['greeting'] });
    expect(fx.counter.count('TransactWriteItems')).toBe(1);
    const current = await readCurrent(fx, 'greeting');
    expect(current).toMatchObject({ text: 'Hello {{name}}, this is version four.', version_number: 4, latest_version_number: 4 });
    expect(current!.activated_at).toBeUndefined();
    const after = await versionItems(fx, 'greeting');
    expect([...after.keys()]).toEqual(['v000001', 'v000002', 'v000003', 'v000004']);
    for (const [key, item] of history) expect(after.get(key)).toEqual(item);
  });

  test('activating the version that is already current writes nothing and says so', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', [V1, V2]);
    const before = await readCurrent(fx, 'greeting');
    fx.counter.reset();
    // WHEN
    const result = await fx.admin.activate('greeting', 2);
    // THEN
    expect(result).toEqual({
      promptId: 'greeting', versionNumber: 2, checksum: before!.checksum, previousVersionNumber: 2, latestVersionNumber: 2, changed: false,
    });
    expect(fx.counter.writes()).toBe(0);
    expect(await readCurrent(fx, 'greeting')).toEqual(before);
  });

  test('rolling forward again to the latest version serves it exactly as the sync wrote it', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', [V1, V2]);
    const synced = await readCurrent(fx, 'greeting');
    await fx.admin.activate('greeting', 1);
    // WHEN
    await fx.admin.activate('greeting', 2, { activatedBy: 'bob' });
    // THEN
    const current = await readCurrent(fx, 'greeting');
    const { activated_at: at, activated_by: by, synced_at: syncedAt, revision, ...rest } = current!;
    const { synced_at: _, revision: syncedRevision, ...syncedRest } = synced!;
    expect(rest).toEqual(syncedRest);
    expect(by).toBe('bob');
    expect(syncedAt).toBe(at);
    // AND each of the two activations was a pointer write of its own (the L2 ordering rule relies on it)
    expect(revision).toBe((syncedRevision as number) + 2);
  });
});

