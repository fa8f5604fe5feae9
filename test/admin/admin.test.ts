import { unlinkSync } from 'node:fs';
import * as path from 'node:path';
import { fullSync, readCurrent, syncVersions, useServingTable, versionItems } from './fixture';
import {
  PromptAdmin,
  PromptAdminError,
  PromptDeletedError,
  AdminPromptNotFoundError,
  PromptTableError,
  PromptVersionNotFoundError,
} from '../../src/admin';

const fx = useServingTable();

describe('inspecting a prompt', () => {
  test('listVersions gives every version oldest first, which one CURRENT copies, and the pointer status', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two', 'three']);
    await fx.admin.activate('greeting', 2, { activatedBy: 'alice' });
    const versions = await versionItems(fx, 'greeting');
    const pointer = await readCurrent(fx, 'greeting');
    fx.counter.reset();
    // WHEN
    const history = await fx.admin.listVersions('greeting');
    // THEN
    expect(fx.counter.snapshot()).toEqual({ Query: 1 });
    expect(history).toEqual({
      promptId: 'greeting',
      status: 'ACTIVE',
      currentVersionNumber: 2,
      latestVersionNumber: 3,
      activatedAt: pointer!.activated_at,
      activatedBy: 'alice',
      versions: [...versions.values()].map((v) => ({
        versionNumber: v.version_number,
        checksum: v.checksum,
        syncedAt: v.synced_at,
        sourceVersion: v.source_version,
        current: v.version_number === 2,
      })),
    });
  });

  test('get returns the pointer by default and one immutable version item on request, as stored', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two']);
    const versions = await versionItems(fx, 'greeting');
    // WHEN
    const current = await fx.admin.get('greeting');
    const first = await fx.admin.get('greeting', { version: 1 });
    // THEN
    expect(current).toEqual(await readCurrent(fx, 'greeting'));
    expect(current).toMatchObject({ version: 'CURRENT', version_number: 2, text: 'two' });
    expect(first).toEqual(versions.get('v000001'));
  });
});

describe('refusals', () => {
  test('an unknown version is PromptVersionNotFoundError and nothing is written', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one', 'two']);
    fx.counter.reset();
    // WHEN
    const error = await fx.admin.activate('greeting', 7).catch((err: unknown) => err);
    // THEN
    expect(error).toBeInstanceOf(PromptVersionNotFoundError);
    expect(error).toBeInstanceOf(AdminPromptNotFoundError);
    expect(error).toBeInstanceOf(PromptAdminError);
    expect(error).toMatchObject({
      name: 'PromptVersionNotFoundError', promptId: 'greeting', versionNumber: 7, message: "version 7 of prompt 'greeting' not found",
    });
    expect(fx.counter.writes()).toBe(0);
    await expect(fx.admin.get('greeting', { version: 7 })).rejects.toThrow(PromptVersionNotFoundError);
  });

  test.each([0, -1, 1.5, 1_000_000, NaN])('version number %p can never exist: PromptVersionNotFoundError without a table call', async (n) => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one']);
    fx.counter.reset();
    // WHEN
    const errors = await Promise.all([
      fx.admin.activate('greeting', n).catch((err: unknown) => err),
      fx.admin.get('greeting', { version: n }).catch((err: unknown) => err),
    ]);
    // THEN
    for (const error of errors) expect(error).toBeInstanceOf(PromptVersionNotFoundError);
    expect(fx.counter.snapshot()).toEqual({});
  });

  test('a prompt deleted at the source is PromptDeletedError: it stays DELETED and nothing is written', async () => {
    // GIVEN
    await syncVersions(fx, 'gone', ['one', 'two']);
    unlinkSync(path.join(fx.dir, 'gone.md'));
    await fullSync(fx);
    const deleted = await readCurrent(fx, 'gone');
    fx.counter.reset();
    // WHEN
    const error = await fx.admin.activate('gone', 1).catch((err: unknown) => err);
    // THEN
    expect(error).toBeInstanceOf(PromptDeletedError);
    expect(error).toMatchObject({ name: 'PromptDeletedError', promptId: 'gone' });
    expect((error as Error).message).toMatch(/deleted at the source; add it back there/);
    expect(fx.counter.writes()).toBe(0);
    expect(await readCurrent(fx, 'gone')).toEqual(deleted);
    expect(await fx.admin.listVersions('gone')).toMatchObject({ status: 'DELETED', currentVersionNumber: 2 });
  });

  test('an unknown prompt is AdminPromptNotFoundError from activate, get and listVersions', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one']);
    fx.counter.reset();
    // WHEN
    const errors = await Promise.all([
      fx.admin.activate('nope', 1).catch((err: unknown) => err),
      fx.admin.get('nope').catch((err: unknown) => err),
      fx.admin.listVersions('nope').catch((err: unknown) => err),
    ]);
    // THEN
    for (const error of errors) {
      expect(error).toBeInstanceOf(AdminPromptNotFoundError);
      expect(error).toMatchObject({ name: 'AdminPromptNotFoundError', promptId: 'nope', message: "prompt 'nope' not found" });
    }
    expect(fx.counter.writes()).toBe(0);
  });

  test('reserved ids (the catalog) are never read or written', async () => {
    // GIVEN
    await syncVersions(fx, 'greeting', ['one']);
    fx.counter.reset();
    // WHEN
    const errors = await Promise.all([
      fx.admin.activate('#catalog', 1).catch((err: unknown) => err),
      fx.admin.get('#catalog').catch((err: unknown) => err),
      fx.admin.listVersions('').catch((err: unknown) => err),
    ]);
    // THEN
    for (const error of errors) expect(error).toBeInstanceOf(AdminPromptNotFoundError);
    expect(fx.counter.snapshot()).toEqual({});
  });

  test('a table that cannot be used is PromptTableError with the SDK error as cause', async () => {
    // GIVEN
    const admin = new PromptAdmin({ tableName: 'no-such-table', dynamoDBClient: fx.adminClient });
    // WHEN
    const error = await admin.activate('greeting', 1).catch((err: unknown) => err);
    // THEN
    expect(error).toBeInstanceOf(PromptTableError);
    expect(error).toMatchObject({ name: 'PromptTableError', tableName: 'no-such-table', cause: { name: 'ResourceNotFoundException' } });
    expect((error as Error).message).toMatch(/^activating version 1 of prompt 'greeting' in table 'no-such-table' failed: ResourceNotFoundException: /);
  });
});
