/**
 * The read-provenance vectors (test/conformance/fixtures/provenance.json) against the Node client, DynamoDB Local
 * behind it; python/tests/test_provenance.py runs the same file against the Python client.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DynamoDBClient, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { failNextGetItems, fakeDate } from './fixtures';
import { labels, emfReadMetrics, logReads, otelReadAttributes, PromptClient, PromptClientOptions, PromptFallback, ReadInfo } from '../../src/runtime';
import { provenance, readInfo } from '../../src/runtime/provenance';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

interface Step {
  readonly read?: string;
  readonly version?: number;
  readonly label?: string;
  readonly stickinessKey?: string;
  readonly fallback?: PromptFallback;
  readonly advance?: number;
  readonly failTable?: boolean;
  readonly expect?: {
    source: string;
    stale: boolean;
    version: number;
    ageSeconds: number;
    requestedVersion?: number;
    label?: string;
    rolloutId?: string;
    arm?: 'A' | 'B';
  };
}
/** A vector's ReadInfo: `null` where the client has `undefined`. */
type NullableInfo = { [K in keyof ReadInfo]: undefined extends ReadInfo[K] ? Exclude<ReadInfo[K], undefined> | null : ReadInfo[K] };
const fromVector = (info: NullableInfo): ReadInfo => Object.fromEntries(
  Object.entries(info).map(([k, v]) => [k, v === null ? undefined : v]),
) as unknown as ReadInfo;
const FIXTURE = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'conformance', 'fixtures', 'provenance.json'), 'utf8')) as {
  items: Record<string, AttributeValue>[];
  scenarios: { name: string; options: PromptClientOptions; steps: Step[] }[];
  logLine: { info: NullableInfo; expected: Record<string, unknown> };
  logLineLabeled: { info: NullableInfo; expected: Record<string, unknown> };
  otel: { info: NullableInfo; expected: Record<string, unknown> }[];
  emf: { reads: { source: ReadInfo['source']; stale: boolean }[]; tableName: string; expected: Record<string, unknown> };
};

let admin: DynamoDBClient;
let table: string;
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  for (const Item of FIXTURE.items) await admin.send(new PutItemCommand({ TableName: table, Item }));
});

afterEach(() => {
  jest.useRealTimers();
  for (const c of opened.splice(0)) c.destroy();
});

afterAll(async () => {
  await deleteTable(admin, table);
  admin.destroy();
});

test.each(FIXTURE.scenarios.map((s) => [s.name, s] as const))('%s', async (_name, scenario) => {
  const clock = fakeDate();
  const ddb = localDynamoDBClient({ maxAttempts: 1 });
  opened.push(ddb);
  const reads: ReadInfo[] = [];
  const prompts = new PromptClient({
    ...scenario.options, tableName: table, dynamoDBClient: ddb, onRead: (info) => reads.push(info), features: [labels],
  });
  for (const step of scenario.steps) {
    if (step.advance !== undefined) clock.advanceSeconds(step.advance);
    if (step.failTable === true) failNextGetItems(ddb, 1000, 'InternalServerError');
    if (step.read === undefined) continue;
    const { version, fallback, label, stickinessKey } = step;
    const prompt = await prompts.getPrompt(step.read, { version, fallback, label, stickinessKey });
    const info = reads.at(-1)!;
    const want = step.expect!;
    expect({ source: prompt.provenance.source, stale: prompt.provenance.stale, version: prompt.version })
      .toEqual({ source: want.source, stale: want.stale, version: want.version });
    expect({ label: prompt.label, rolloutId: prompt.rollout?.rolloutId, arm: prompt.rollout?.arm })
      .toEqual({ label: want.label, rolloutId: want.rolloutId, arm: want.arm });
    expect(Math.abs(prompt.provenance.ageSeconds - want.ageSeconds)).toBeLessThan(0.5);
    expect(info).toMatchObject({
      tableName: table,
      promptId: step.read,
      version: want.version,
      requestedVersion: want.requestedVersion,
      checksum: prompt.checksum,
      source: want.source,
      stale: want.stale,
    });
    expect({ label: info.label, rolloutId: info.rolloutId, arm: info.arm }).toEqual({ label: want.label, rolloutId: want.rolloutId, arm: want.arm });
    expect(Math.abs(info.ageSeconds - want.ageSeconds)).toBeLessThan(0.5);
  }
  expect(reads).toHaveLength(scenario.steps.filter((s) => s.read !== undefined).length);
  await new Promise((r) => setTimeout(r, 20)); // background refreshes settle before the SDK client is destroyed
});

test.each([['CURRENT', FIXTURE.logLine], ['labeled, rollout arm', FIXTURE.logLineLabeled]] as const)('logReads writes the vector\'s line (%s)', (_name, vector) => {
  const lines: string[] = [];
  logReads({ write: (l) => lines.push(l) })(fromVector(vector.info), undefined as unknown as PromptClient);
  expect(JSON.parse(lines[0])).toEqual(vector.expected);
});

test.each(FIXTURE.otel.map((v, i) => [i, v] as const))('otelReadAttributes sets the vector\'s attributes (%i)', (_i, vector) => {
  const set: Record<string, unknown>[] = [];
  const hook = otelReadAttributes(() => ({ trace: { getActiveSpan: () => ({ setAttributes: (a: Record<string, unknown>) => set.push(a) }) } }));
  hook!(fromVector(vector.info), undefined as unknown as PromptClient);
  expect(set).toEqual([vector.expected]);
});

test('emfReadMetrics writes the vector\'s line', () => {
  const ddb = localDynamoDBClient({ maxAttempts: 1 });
  opened.push(ddb);
  const client = new PromptClient({ tableName: FIXTURE.emf.tableName, dynamoDBClient: ddb });
  const lines: string[] = [];
  const metrics = emfReadMetrics({ write: (l) => lines.push(l) });
  for (const r of FIXTURE.emf.reads) {
    metrics.onRead({
      tableName: FIXTURE.emf.tableName,
      promptId: 'p',
      version: 1,
      requestedVersion: undefined,
      checksum: 'c',
      ageSeconds: 0,
      label: undefined,
      rolloutId: undefined,
      arm: undefined,
      ...r,
    }, client);
  }
  metrics.flush();
  expect(lines).toHaveLength(1);
  const line = JSON.parse(lines[0]);
  expect(typeof line._aws.Timestamp).toBe('number');
  delete line._aws.Timestamp;
  expect(line).toEqual(FIXTURE.emf.expected);
});

test('surface.json: ReadInfo has the listed fields, in order', () => {
  const surface = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'conformance', 'fixtures', 'surface.json'), 'utf8')) as {
    readInfo: { fields: string[] };
  };
  const info = readInfo('t', {
    id: 'p',
    version: 2,
    checksum: 'c',
    provenance: provenance('l1', false, Date.now()),
    label: 'canary',
    rollout: { rolloutId: 'r', arm: 'B' },
  }, undefined);
  expect(Object.keys(info)).toEqual(surface.readInfo.fields);
});
