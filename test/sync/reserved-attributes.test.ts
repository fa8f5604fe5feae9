/**
 * Reserved attributes are the table's, never the source's: a prompt file's front matter, a Bedrock field or a
 * hand-written version item can never set an attribute the table, the release path or the readers give meaning to.
 * Checked in `validate`, in the sync (directory and Bedrock sources, and the engine's content check as the last
 * line), and by the label writer, which copies only what it owns. The synth-time check is in
 * test/construct/prompt-file-check.test.ts.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { validateDirectory } from '../../src/cli/commands';
import { parseReleaseRequest } from '../../src/governance/requests';
import { TTL_ATTRIBUTE } from '../../src/governance-construct/governance-resources';
import { labels, PromptClient } from '../../src/runtime';
import {
  Attr, AuditAttr, CONTENT_ATTRIBUTES, LabelAttr, RESERVED_ATTRIBUTES, RESERVED_ATTRIBUTE_PREFIXES, RolloutAttr,
  checksum, isReservedAttribute, reservedAttributeFor,
} from '../../src/schema';
import { toItem } from '../../src/schema/ddb-codec';
import { SyncEngine } from '../../src/sync/engine';
import { BedrockPromptSource } from '../../src/sync/sources/bedrock';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { contentProblem, pointerItem, versionItem } from '../../src/write/content';
import { labelItemFromVersion, labelItemWithRollout, RegistryAttr } from '../../src/write/label-item';
import { fullSync, readCurrent, versionItems, writePrompt } from '../admin/fixture';
import { labelRow, PIPELINE, useGovernance } from '../governance/fixture';
import { BedrockStandIn } from '../support/bedrock-stand-in';
import { MemorySource } from '../support/memory-source';

const FIXTURE = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'conformance', 'fixtures', 'reserved-attributes.json'), 'utf8'));

describe('the reserved-attribute list (conformance fixture reserved-attributes.json, run by the Python client too)', () => {
  test('the list is exactly the fixture\'s, and so are the prefixes', () => {
    expect([...RESERVED_ATTRIBUTES].sort()).toEqual(FIXTURE.attributes);
    expect([...RESERVED_ATTRIBUTE_PREFIXES]).toEqual(FIXTURE.prefixes);
  });

  test.each(FIXTURE.cases as { key: string; reserved: string | null }[])('$key → $reserved', ({ key, reserved }) => {
    expect(reservedAttributeFor(key) ?? null).toBe(reserved);
    expect(isReservedAttribute(key)).toBe(reserved !== null);
  });

  test('every attribute the schema, the release path and the sync give meaning to is reserved; the content attributes are not', () => {
    // GIVEN every attribute name of the contract's constants
    const control = [
      ...Object.values(Attr).filter((a) => !CONTENT_ATTRIBUTES.has(a)),
      ...Object.values(LabelAttr), ...Object.values(RolloutAttr), ...Object.values(AuditAttr), ...Object.values(RegistryAttr),
      TTL_ATTRIBUTE, `${Attr.promptId}_claimed`,
    ];
    // THEN
    expect(control.filter((a) => !RESERVED_ATTRIBUTES.has(a))).toEqual([]);
    expect([...CONTENT_ATTRIBUTES].filter(isReservedAttribute)).toEqual([]);
  });
});

/** Front matter for a TEXT prompt setting `key` to a value of a plausible type. */
function frontMatter(key: string, value = '1'): string {
  return `---\n${key}: ${value}\n---\nHello {{name}}\n`;
}

describe('a prompt file setting a reserved attribute is refused, naming the file and the key', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reserved-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('validate refuses each reserved attribute (every name on the list) and keeps the good file', async () => {
    // GIVEN one file per reserved name (but the id keys, which give the prompt id), and a good file
    const names = (FIXTURE.attributes as string[]).filter((n) => n !== Attr.promptId);
    names.forEach((name, i) => fs.writeFileSync(path.join(dir, `p${i}.md`), frontMatter(name)));
    fs.writeFileSync(path.join(dir, 'good.md'), 'Hello {{name}}');
    // WHEN
    const result = await validateDirectory(dir);
    // THEN
    expect(result.files).toBe(names.length + 1);
    expect(result.problems).toHaveLength(names.length);
    names.forEach((name, i) => expect(result.problems).toContain(
      `p${i}.md: the key \`${name}\` is reserved: an attribute the table, the release path or the readers give meaning to; a prompt cannot set it (rename the key, or leave it out)`,
    ));
    expect(result.problems.join('\n')).not.toContain('good.md');
  });

  test('other spellings of a reserved name, and the namespace kept for future control fields, are refused too', async () => {
    // GIVEN
    fs.writeFileSync(path.join(dir, 'camel.md'), frontMatter('expiresAt'));
    fs.writeFileSync(path.join(dir, 'future.yaml'), 'text: Hi\n_priority: high\n');
    fs.writeFileSync(path.join(dir, 'rollout.json'), JSON.stringify({ text: 'Hi', rollout: { percent_bp: 10000 } }));
    // WHEN
    const result = await validateDirectory(dir);
    // THEN
    expect(result.problems).toEqual([
      expect.stringMatching(/^camel\.md: the key `expiresAt` \(a spelling of `expires_at`\) is reserved/),
      expect.stringMatching(/^future\.yaml: the key `_priority` is reserved: in the namespace kept for the table's future control fields/),
      expect.stringMatching(/^rollout\.json: the key `rollout` is reserved/),
    ]);
  });
});

describe('the sync refuses a prompt setting a reserved attribute: it fails alone, counted, and nothing served changes', () => {
  const fx = useGovernance();
  const { table } = fx;

  test('directory source: the file fails with its name and the key; the others sync; what it served stays', async () => {
    // GIVEN two prompts synced
    writePrompt(table, 'greeting', 'Hello v1 {{name}}');
    writePrompt(table, 'farewell', 'Bye v1 {{name}}');
    expect((await fullSync(table)).written).toBe(2);
    // WHEN greeting's file gains the table's TTL attribute, and farewell changes too
    writePrompt(table, 'greeting', '---\nexpires_at: 1\n---\nHello v2 {{name}}');
    writePrompt(table, 'farewell', 'Bye v2 {{name}}');
    const report = await fullSync(table);
    // THEN
    expect(report.writtenIds).toEqual(['farewell']);
    expect(report.failed).toBe(1);
    expect(report.failures).toEqual([{ id: 'greeting', reason: expect.stringMatching(/^greeting\.md: the key `expires_at` is reserved/), retryable: false }]);
    const current = await readCurrent(table, 'greeting');
    expect(current).toMatchObject({ text: 'Hello v1 {{name}}', version_number: 1 });
    expect(current![TTL_ATTRIBUTE]).toBeUndefined();
    expect([...(await versionItems(table, 'greeting')).keys()]).toEqual(['v000001']);
  });

  test('any source: the engine\'s content check refuses a reserved key as the last line (the prompt fails alone)', async () => {
    // GIVEN a source that does not check (an in-memory source)
    const source = new MemorySource();
    source.set('greeting', { template_type: 'TEXT', text: 'Hi', source_deleted_at: '2026-01-01T00:00:00Z' } as any);
    source.set('farewell', { template_type: 'TEXT', text: 'Bye' });
    // WHEN
    const report = await new SyncEngine({ dynamoDBClient: table.client, tableName: table.tableName, source }).fullSync();
    // THEN
    expect(report.writtenIds).toEqual(['farewell']);
    expect(report.failures).toEqual([{ id: 'greeting', reason: expect.stringMatching(/^the key `source_deleted_at` is reserved/), retryable: false }]);
    expect(await readCurrent(table, 'greeting')).toBeUndefined();
    expect(contentProblem('x', { template_type: 'TEXT', text: 'Hi', rollout: {} } as any)).toMatch(/the key `rollout` is reserved/);
  });

  test('a prompt author cannot decide what a label serves: rollout in front matter, then a label move to that version', async () => {
    // GIVEN v1 and v2 synced; `production` on v1
    writePrompt(table, 'greeting', 'Hello v1 {{name}}');
    await fullSync(table);
    writePrompt(table, 'greeting', 'Hello v2 {{name}}');
    await fullSync(table);
    const v2 = (await versionItems(table, 'greeting')).get('v000002')!;
    await fx.engine.setLabel(parseReleaseRequest({ action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }) as any, PIPELINE);
    // WHEN the author's v3 carries a rollout to v2 at 100 % in its front matter
    const attack = `---\nrollout:\n  rollout_id: sneaky\n  candidate_version: 2\n  candidate_checksum: "${v2.checksum}"\n  percent_bp: 10000\n---\nHello v3 {{name}}`;
    writePrompt(table, 'greeting', attack);
    const report = await fullSync(table);
    // THEN the sync refuses it, naming the file and the key; no v3 exists
    expect(report.failures).toEqual([{ id: 'greeting', reason: expect.stringMatching(/^greeting\.md: the key `rollout` is reserved/), retryable: false }]);
    expect([...(await versionItems(table, 'greeting')).keys()]).toEqual(['v000001', 'v000002']);

    // AND WHEN a v3 carrying that map is in the table anyway (synced before sources refused it) and a release
    // manager points `production` at it
    const v3Content = { template_type: 'TEXT', text: 'Hello v3 {{name}}', input_variables: ['name'] };
    const hostile = {
      rollout: { rollout_id: 'sneaky', candidate_version: 2, candidate_checksum: v2.checksum, percent_bp: 10000 },
      expires_at: 1,
      source_deleted_at: '2026-01-01T00:00:00.000Z',
    };
    await table.client.send(new PutItemCommand({
      TableName: table.tableName,
      Item: toItem({
        ...v3Content,
        ...hostile,
        prompt_id: 'greeting',
        version: 'v000003',
        version_number: 3,
        checksum: checksum({ ...v3Content, ...hostile }),
        source: 'directory',
        source_version: 'x',
        synced_at: '2026-12-01T17:00:00.000Z',
        schema_version: 2,
      }),
    }));
    await fx.engine.setLabel(parseReleaseRequest({ action: 'set-label', promptId: 'greeting', label: 'production', version: 3 }) as any, PIPELINE);
    // THEN the label holds the content and what a label owns, none of the version's control fields
    const label = await labelRow(table, 'greeting', 'production');
    expect(label).toMatchObject({ version_number: 3, text: 'Hello v3 {{name}}' });
    expect(label!.rollout).toBeUndefined();
    expect(label!.expires_at).toBeUndefined();
    expect(label!.source_deleted_at).toBeUndefined();
    // AND a reader serves v3, not v2, to every key, with no rollout and not deleted
    const reader = new PromptClient({ tableName: table.tableName, dynamoDBClient: table.client, features: [labels] });
    for (const key of ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi']) {
      const served = await reader.getPrompt('greeting', { label: 'production', stickinessKey: key });
      expect({ version: served.version, rollout: served.rollout, sourceDeleted: served.sourceDeleted })
        .toEqual({ version: 3, rollout: undefined, sourceDeleted: false });
    }
  });
});

test('CURRENT and version items built from content never carry a reserved attribute from it (activation, a gated sync move)', () => {
  // GIVEN content read from a version item that holds control fields (written before sources refused them)
  const content = { template_type: 'TEXT', text: 'Hi', rollout: { percent_bp: 10000 }, expires_at: 1, source_deleted_at: 'x', _future: 1, note: 'kept' } as any;
  const meta = { versionNumber: 3, checksum: 'sha256:' + 'a'.repeat(64), source: 'directory', sourceVersion: 'x', syncedAt: '2026-12-01T17:00:00.000Z' };
  // WHEN
  const current = pointerItem('greeting', content, { ...meta, latestVersionNumber: 3, sourceChecksum: meta.checksum, sourceRevision: 'r' });
  const version = versionItem('greeting', content, meta);
  // THEN
  for (const item of [current, version]) {
    expect(Object.keys(item).filter((k) => ['rollout', 'expires_at', 'source_deleted_at', '_future'].includes(k))).toEqual([]);
    expect(item.note).toEqual({ S: 'kept' });
  }
  expect(current.status).toEqual({ S: 'ACTIVE' });
});

describe('the label writer copies only what a label owns', () => {
  const version = {
    prompt_id: 'greeting',
    version: 'v000003',
    version_number: 3,
    checksum: 'sha256:' + 'a'.repeat(64),
    source: 'directory',
    source_version: 'x',
    synced_at: '2026-12-01T17:00:00.000Z',
    schema_version: 2,
    template_type: 'TEXT',
    text: 'Hi',
    extra_note: 'kept',
  };
  const stamp = { at: '2026-12-01T18:00:00.000Z', by: PIPELINE };

  test('a label item is the same whether or not the version carries reserved attributes', () => {
    // GIVEN every reserved name a label does not take from its version (its identity and provenance it does), on the version
    const hostile = Object.fromEntries((FIXTURE.attributes as string[]).filter((n) => !(n in version) && n !== Attr.sourceUpdatedAt).map((n) => [n, 'x']));
    // WHEN
    const clean = labelItemFromVersion('greeting', 'production', version, stamp, 1);
    const dirty = labelItemFromVersion('greeting', 'production', { ...version, ...hostile, _future: 'x' }, stamp, 1);
    // THEN
    expect(dirty).toEqual(clean);
    expect(clean.extra_note).toEqual({ S: 'kept' });
  });

  test('a rollout change keeps the label\'s own attributes and drops any other reserved one it was written with', () => {
    // GIVEN a label item written before the label writer kept to its own attributes
    const old = { ...labelItemFromVersion('greeting', 'production', version, stamp, 1), ...toItem({ expires_at: 1, claim_token: 't', source_deleted_at: '2026-12-01T17:30:00.000Z' }) };
    // WHEN
    const next = labelItemWithRollout(old, undefined, stamp, 2);
    // THEN
    expect(next.expires_at).toBeUndefined();
    expect(next.claim_token).toBeUndefined();
    expect(next.source_deleted_at).toEqual({ S: '2026-12-01T17:30:00.000Z' });
    expect(next.text).toEqual({ S: 'Hi' });
    expect(next.revision).toEqual({ N: '2' });
  });
});

test('the directory source is what the sync reads: a refused file is reported by the listing itself', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reserved-'));
  try {
    fs.writeFileSync(path.join(dir, 'a.md'), frontMatter('moved_by', 'me'));
    const listing = await new DirectoryPromptSource(dir).list();
    expect(listing.prompts).toEqual([]);
    expect(listing.failures).toEqual([{ id: 'a', reason: expect.stringMatching(/^a\.md: the key `moved_by` is reserved/) }]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

describe('Bedrock source (through the real SDK and the local Bedrock stand-in)', () => {
  const fx = useGovernance();
  let standIn: BedrockStandIn;
  beforeEach(async () => {
    standIn = new BedrockStandIn();
    await standIn.start();
  });
  afterEach(async () => standIn.stop());

  test('a variant field that lands on a reserved attribute refuses that prompt, naming it and the key; the others sync', async () => {
    // GIVEN two prompts, and an SDK that models a further variant field (as a newer SDK would) which the source
    // snake-cases to the table's TTL attribute for one of them
    const variant = (text: string) => ({ name: 'main', templateType: 'TEXT' as const, templateConfiguration: { text: { text } } });
    const hostile = standIn.createPrompt({ name: 'hostile', variants: [variant('Hi')] });
    const good = standIn.createPrompt({ name: 'good', variants: [variant('Bye')] });
    const client = standIn.client({ maxAttempts: 1 });
    client.middlewareStack.add((next) => async (args) => {
      const result = await next(args);
      const output = result.output as { id?: string; variants?: Record<string, unknown>[] } | undefined;
      if (output?.id === hostile) output.variants?.forEach((v) => { v.expiresAt = 1; });
      return result;
    }, { step: 'initialize', name: 'newerSdkField' });
    const source = new BedrockPromptSource({ client, version: 'DRAFT', maxRequestsPerSecond: 1_000 });
    // WHEN
    const report = await new SyncEngine({ dynamoDBClient: fx.table.client, tableName: fx.table.tableName, source }).fullSync();
    client.destroy();
    // THEN
    expect(report.writtenIds).toEqual([good]);
    expect(report.failures).toEqual([{
      id: hostile,
      reason: `Bedrock prompt ${hostile} (version DRAFT): the key \`expires_at\` is reserved: an attribute the table, the release path or the readers give meaning to; a prompt cannot set it (rename the key, or leave it out)`,
      retryable: false,
    }]);
    expect(await readCurrent(fx.table, hostile)).toBeUndefined();
  });
});
