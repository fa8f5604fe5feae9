import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeSending, fullSync, readCurrent, syncVersions, useServingTable, versionItems, writePrompt } from './fixture';
import { ActivationConflictError, ActivationResult, MAX_ACTIVATION_ATTEMPTS } from '../../src/admin';
import { checksum, contentOf, versionKey } from '../../src/schema';

const fx = useServingTable();

/** Rounds of the randomized race, at least. */
const ROUNDS = 50;
/**
 * Rounds at most: past ROUNDS the race goes on until each order and each lost guarded write has happened (on a
 * loaded machine a sync that loses its write can be rarer than one round in fifty).
 */
const MAX_ROUNDS = 4 * ROUNDS;
/** Rounds past ROUNDS start only within this long of the race's start, so the test ends on its named checks (ms). */
const EXTRA_ROUNDS_UNTIL_MS = 90_000;
/** The random race's deadline: EXTRA_ROUNDS_UNTIL_MS, then one round of room, generously. */
const RANDOM_RACE_TIMEOUT_MS = 150_000;
/** Upper bound of the sync's random head start in each round (ms). */
const SYNC_HEAD_START_MS = 10;
/** How long one writing sync takes, until the first round measures it (ms). */
const INITIAL_SYNC_ESTIMATE_MS = 50;

/** How one racing activation ended: its result, or what it threw. */
interface ActivationOutcome {
  readonly result?: ActivationResult;
  readonly error?: unknown;
}

describe('an activation racing a sync', () => {
  test('an activation that loses its guarded write to a sync re-reads, lands, and reports the version it replaced', async () => {
    // GIVEN
    await syncVersions(fx, 'race', ['one', 'two']);
    let interfered = false;
    beforeSending(fx.adminClient, 'PutItem', async () => {
      if (interfered) return;
      interfered = true;
      writePrompt(fx, 'race', 'three');
      await fullSync(fx);
    });
    fx.counter.reset();
    // WHEN
    const result = await fx.admin.activate('race', 1);
    // THEN
    expect(result).toMatchObject({ versionNumber: 1, previousVersionNumber: 3, latestVersionNumber: 3, changed: true });
    expect(fx.counter.count('PutItem')).toBe(2);
    const current = await readCurrent(fx, 'race');
    const versions = await versionItems(fx, 'race');
    expect(current).toMatchObject({ text: 'one', version_number: 1, latest_version_number: 3, source_checksum: versions.get('v000003')!.checksum });
    expect(versions.get('v000003')).toMatchObject({ text: 'three' });
  });

  test(`an activation that loses ${MAX_ACTIVATION_ATTEMPTS} times throws ActivationConflictError and overwrites nothing`, async () => {
    // GIVEN
    await syncVersions(fx, 'race', ['one', 'two']);
    let change = 0;
    beforeSending(fx.adminClient, 'PutItem', async () => {
      writePrompt(fx, 'race', `change ${++change}`);
      await fullSync(fx);
    });
    // WHEN
    const error = await fx.admin.activate('race', 1).catch((err: unknown) => err);
    // THEN
    expect(error).toBeInstanceOf(ActivationConflictError);
    expect(error).toMatchObject({ name: 'ActivationConflictError', promptId: 'race', versionNumber: 1, attempts: MAX_ACTIVATION_ATTEMPTS });
    expect(await readCurrent(fx, 'race')).toMatchObject({ text: `change ${MAX_ACTIVATION_ATTEMPTS}`, version_number: 2 + MAX_ACTIVATION_ATTEMPTS });
  });

  test('a sync that loses its guarded write to an activation re-reads the pointer and puts the source change on top', async () => {
    // GIVEN
    await syncVersions(fx, 'race', ['one', 'two']);
    let activation: Promise<ActivationResult> | undefined;
    beforeSending(fx.client, 'TransactWriteItems', async () => {
      if (activation) return;
      activation = fx.admin.activate('race', 1);
      await activation;
    });
    writePrompt(fx, 'race', 'three');
    fx.counter.reset();
    // WHEN
    const report = await fullSync(fx);
    // THEN
    expect(report).toMatchObject({ written: 1, failed: 0 });
    expect(await activation).toMatchObject({ versionNumber: 1, previousVersionNumber: 2, latestVersionNumber: 2, changed: true });
    expect(fx.counter.count('TransactWriteItems')).toBe(2);
    const current = await readCurrent(fx, 'race');
    const versions = await versionItems(fx, 'race');
    expect(versions.size).toBe(3);
    expect(current).toMatchObject({ text: 'three', version_number: 3, latest_version_number: 3, checksum: versions.get('v000003')!.checksum });
  });

  test(`in ${ROUNDS} or more random interleavings of a source change + full sync with an activation, neither write is lost silently`, async () => {
    // GIVEN
    await syncVersions(fx, 'race', ['round 0, v1', 'round 0, v2']);
    // The activation starts anywhere within the time one writing sync takes (as last measured), so its reads
    // and its write fall before, between and after the sync's reads and its transaction.
    let syncMs = INITIAL_SYNC_ESTIMATE_MS;
    const seen = { activationLast: 0, syncLast: 0, activationRetried: 0, syncRetried: 0 };
    const everyCaseSeen = (): boolean => Object.values(seen).every((n) => n > 0);
    const raceStarted = performance.now();
    const moreRounds = () => !everyCaseSeen() && round < MAX_ROUNDS && performance.now() - raceStarted < EXTRA_ROUNDS_UNTIL_MS;
    let round = 0;
    while (round < ROUNDS || moreRounds()) {
      round++;
      const before = (await readCurrent(fx, 'race'))!;
      const versionsBefore = await versionItems(fx, 'race');
      const target = before.version_number === 1 ? 2 : 1;
      const newVersion = before.latest_version_number + 1;
      const delays = { sync: randomInt(SYNC_HEAD_START_MS + 1), activate: randomInt(syncMs + 1) };
      writePrompt(fx, 'race', `round ${round}`);
      fx.counter.reset();
      // WHEN
      const [report, activation] = await Promise.all([
        sleep(delays.sync).then(async () => {
          const started = performance.now();
          const syncReport = await fullSync(fx);
          syncMs = Math.ceil(performance.now() - started);
          return syncReport;
        }),
        sleep(delays.activate).then(() => fx.admin.activate('race', target)).then(
          (result): ActivationOutcome => ({ result }),
          (error: unknown): ActivationOutcome => ({ error }),
        ),
      ]);
      // THEN
      if (fx.counter.count('PutItem') > 1) seen.activationRetried++;
      if (fx.counter.count('TransactWriteItems') > 1) seen.syncRetried++;
      try {
        const current = (await readCurrent(fx, 'race'))!;
        const versions = await versionItems(fx, 'race');
        // The sync's new version exists, and no version item was modified.
        expect(report).toMatchObject({ written: 1, failed: 0 });
        expect(versions.get(versionKey(newVersion))).toMatchObject({ text: `round ${round}`, version_number: newVersion });
        expect(versions.size).toBe(versionsBefore.size + 1);
        for (const [key, item] of versionsBefore) expect(versions.get(key)).toEqual(item);
        for (const item of versions.values()) expect(checksum(contentOf(item))).toBe(item.checksum);
        expect(current.latest_version_number).toBe(newVersion);

        if (activation.error !== undefined) {
          // Refused loudly; the sync's version is current.
          expect(activation.error).toBeInstanceOf(ActivationConflictError);
          expect(current).toMatchObject({ version_number: newVersion, text: `round ${round}` });
        } else if (activation.result!.latestVersionNumber === newVersion) {
          // The activation landed after the sync, on top of its new version: it is what readers get.
          const activated = versions.get(versionKey(target))!;
          expect(activation.result).toMatchObject({ changed: true, versionNumber: target, previousVersionNumber: newVersion });
          expect(current).toMatchObject({ version_number: target, checksum: activated.checksum, text: activated.text });
          seen.activationLast++;
        } else {
          // The activation landed first; the sync's guarded write saw it and put the real source change on top.
          expect(activation.result).toMatchObject({ changed: true, versionNumber: target, latestVersionNumber: newVersion - 1 });
          expect(current).toMatchObject({ version_number: newVersion, text: `round ${round}` });
          seen.syncLast++;
        }
      } catch (err) {
        throw new Error(`round ${round} (sync after ${delays.sync} ms, activation after ${delays.activate} ms): ${(err as Error).message}`);
      }
    }
    // The interleavings were real: both orders happened, and each side lost its guarded write at least once.
    expect(seen.activationLast).toBeGreaterThan(0);
    expect(seen.syncLast).toBeGreaterThan(0);
    expect(seen.activationRetried).toBeGreaterThan(0);
    expect(seen.syncRetried).toBeGreaterThan(0);
  }, RANDOM_RACE_TIMEOUT_MS);
});
