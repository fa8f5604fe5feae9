/**
 * The BUNDLED sync handler (assets/sync/sync.lambda/index.js, what the construct deploys) invoked with
 * real event shapes, its SDK clients pointed at DynamoDB Local and the Bedrock stand-in through the
 * standard `AWS_ENDPOINT_URL_*` environment variables.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { Env, SyncMetric } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { seedPublished, textDraft } from '../support/bedrock-fixtures';
import { BedrockStandIn } from '../support/bedrock-stand-in';
import { createServingTable, deleteTable, localDynamoDBClient, localEndpoint } from '../support/table';

const ASSET = path.join(__dirname, '../../assets/sync/sync.lambda/index.js');
const EXAMPLES = path.join(__dirname, '../../examples/prompts');

let ddb: DynamoDBClient;
let tableName: string;
let standIn: BedrockStandIn;
let logs: string[];
const savedEnv = { ...process.env };

beforeAll(() => {
  if (!existsSync(ASSET)) throw new Error(`${ASSET} is missing: run \`npx projen bundle\` (npm test does)`);
});

beforeEach(async () => {
  ddb = localDynamoDBClient();
  tableName = await createServingTable(ddb, 'handler');
  standIn = new BedrockStandIn({ requestsPerSecond: 1000 });
  await standIn.start();
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_DYNAMODB: localEndpoint(),
    AWS_ENDPOINT_URL_BEDROCK_AGENT: standIn.endpoint,
    [Env.tableName]: tableName,
    [Env.sourceType]: 'bedrock',
    [Env.sourceOptions]: JSON.stringify({ version: 'LATEST', maxRequestsPerSecond: 1000 }),
    [Env.metricsNamespace]: 'Test/PromptServing',
  });
  logs = [];
  jest.spyOn(console, 'log').mockImplementation((line: string) => { logs.push(line); });
});

afterEach(async () => {
  jest.restoreAllMocks();
  process.env = { ...savedEnv };
  await standIn.stop();
  await deleteTable(ddb, tableName);
  ddb.destroy();
});

/** Loads a fresh copy of the bundle (its SDK clients read the environment at load time, as in Lambda). */
function loadHandler(): (event: unknown, context?: { getRemainingTimeInMillis(): number }) => Promise<any> {
  let handler: any;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a fresh module instance per test
  jest.isolateModules(() => { handler = require(ASSET).handler; });
  return handler;
}

async function pointer(id: string): Promise<Record<string, any> | undefined> {
  const out = await ddb.send(new GetItemCommand({
    TableName: tableName, Key: { prompt_id: { S: id }, version: { S: 'CURRENT' } }, ConsistentRead: true,
  }));
  return out.Item && fromItem(out.Item);
}

function cloudTrailEvent(eventName: string, detail: Record<string, unknown>, errorCode?: string) {
  return {
    'version': '0',
    'id': 'e1',
    'detail-type': 'AWS API Call via CloudTrail',
    'source': 'aws.bedrock',
    'detail': { eventSource: 'bedrock.amazonaws.com', eventName, errorCode, ...detail },
  };
}

test('a scheduled event runs a full sync, logs the report and emits EMF metrics', async () => {
  // GIVEN
  const ids = seedPublished(standIn, 4);
  const handler = loadHandler();
  // WHEN
  const report = await handler({ 'detail-type': 'Scheduled Event', 'source': 'aws.events', 'detail': {} });
  const again = await handler({});
  // THEN
  expect(report).toMatchObject({ mode: 'full', written: 4, failed: 0 });
  expect(again).toMatchObject({ mode: 'full', written: 0, unchanged: 4 });
  for (const id of ids) expect(await pointer(id)).toMatchObject({ status: 'ACTIVE', source: 'bedrock', source_version: '1' });
  const emf = logs.map((l) => JSON.parse(l)).filter((l) => l._aws);
  expect(emf).toHaveLength(2);
  expect(emf[0]._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: 'Test/PromptServing', Dimensions: [['TableName']] });
  expect(emf[0]).toMatchObject({ TableName: tableName, [SyncMetric.written]: 4, [SyncMetric.fullSyncSucceeded]: 1 });
  expect(emf[1]).toMatchObject({ [SyncMetric.written]: 0, [SyncMetric.unchanged]: 4 });
});

test('the asset carries its own Bedrock client: it syncs real events with the installed one unloadable', async () => {
  // GIVEN the bundle, and no @aws-sdk/client-bedrock-agent to load (as if the Lambda runtime lacked it)
  const bundle = readFileSync(ASSET, 'utf8');
  expect(bundle).not.toMatch(/require\(["']@aws-sdk\/client-bedrock-agent["']\)/);
  const external = new Set(bundle.match(/require\(["']@aws-sdk\/[a-z0-9-]+["']\)/g)?.map((r) => r.slice(9, -2)));
  external.delete('@aws-sdk/signature-v4-crt'); // optional SigV4a signers the SDK tries to load lazily, in a try/catch
  external.delete('@aws-sdk/signature-v4a');
  // The runtime's own clients for the table and, with governance, for audit events and the activation gate.
  expect([...external].sort()).toEqual(['@aws-sdk/client-dynamodb', '@aws-sdk/client-eventbridge', '@aws-sdk/client-lambda']);
  const [a, b] = seedPublished(standIn, 2);
  let handler: any;
  jest.isolateModules(() => {
    jest.doMock('@aws-sdk/client-bedrock-agent', () => {
      throw new Error('@aws-sdk/client-bedrock-agent is not installed');
    });
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a fresh module instance
    handler = require(ASSET).handler;
  });
  // WHEN a scheduled event and then a CloudTrail event arrive
  const full = await handler({ 'detail-type': 'Scheduled Event', 'source': 'aws.events', 'detail': {} });
  standIn.updateDraft(a, textDraft('changed', 'Changed {{topic}}'));
  standIn.createVersion(a);
  const one = await handler(cloudTrailEvent('CreatePromptVersion', { requestParameters: { promptIdentifier: a } }));
  // THEN both synced through the bundled client, paced by the table's shared budget
  expect(full).toMatchObject({ mode: 'full', written: 2, failed: 0 });
  expect(one).toMatchObject({ mode: 'prompt', writtenIds: [a] });
  expect(await pointer(b)).toMatchObject({ status: 'ACTIVE' });
  const budget = await ddb.send(new GetItemCommand({ TableName: tableName, Key: { prompt_id: { S: '#bedrock-budget' }, version: { S: 'BUCKET' } } }));
  expect(Number(budget.Item?.next_slot_at?.N)).toBeGreaterThan(0);
});

test('a CloudTrail CreatePromptVersion event syncs just that prompt (id given as an ARN)', async () => {
  // GIVEN
  const [a, b] = seedPublished(standIn, 2);
  const handler = loadHandler();
  // WHEN
  const report = await handler(cloudTrailEvent('CreatePromptVersion', {
    requestParameters: { promptIdentifier: `arn:aws:bedrock:us-east-1:123456789012:prompt/${a}` },
  }));
  // THEN
  expect(report).toMatchObject({ mode: 'prompt', writtenIds: [a] });
  expect(await pointer(a)).toMatchObject({ status: 'ACTIVE' });
  expect(await pointer(b)).toBeUndefined();
});

test('a CloudTrail DeletePrompt event marks the prompt DELETED; failed calls are ignored', async () => {
  // GIVEN
  const [a] = seedPublished(standIn, 1);
  const handler = loadHandler();
  await handler({});
  standIn.deletePrompt(a);
  // WHEN
  const failedCall = await handler(cloudTrailEvent('DeletePrompt', { requestParameters: { promptIdentifier: a } }, 'AccessDenied'));
  const afterFailedCall = await pointer(a);
  const report = await handler(cloudTrailEvent('DeletePrompt', { requestParameters: { promptIdentifier: a } }));
  // THEN
  expect(failedCall).toEqual({ ignored: 'failed call (AccessDenied)' });
  expect(afterFailedCall).toMatchObject({ status: 'ACTIVE' });
  expect(report).toMatchObject({ deletedIds: [a] });
  expect(await pointer(a)).toMatchObject({ status: 'DELETED' });
});

test('a CloudTrail UpdatePrompt of the draft does not change what LATEST serves', async () => {
  // GIVEN
  const [a] = seedPublished(standIn, 1);
  const handler = loadHandler();
  await handler({});
  standIn.updateDraft(a, textDraft('edited', 'Unpublished edit about {{topic}}'));
  // WHEN
  const report = await handler(cloudTrailEvent('UpdatePrompt', { requestParameters: { promptIdentifier: a } }));
  // THEN
  expect(report).toMatchObject({ written: 0, unchanged: 1 });
  expect((await pointer(a))!.text).toContain('prompt 0');
});

describe('deploy-time custom resource', () => {
  let server: http.Server;
  let responses: any[];
  let responseUrl: string;

  beforeEach(async () => {
    responses = [];
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => { responses.push({ method: req.method, body: JSON.parse(body) }); res.end(); });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    responseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/response?signature=x`;
  });

  afterEach(() => new Promise<void>((r) => server.close(() => r())));

  const request = (RequestType: string) => ({
    RequestType,
    ResponseURL: responseUrl,
    StackId: 'stack',
    RequestId: 'req-1',
    LogicalResourceId: 'InitialSync',
    ResourceType: 'Custom::PromptSync',
    ResourceProperties: { ServiceToken: 'arn' },
  });

  test('Create runs a full sync and answers SUCCESS with the counts', async () => {
    // GIVEN
    seedPublished(standIn, 3);
    // WHEN
    await loadHandler()(request('Create'));
    // THEN
    expect(responses).toEqual([{
      method: 'PUT',
      body: expect.objectContaining({
        Status: 'SUCCESS',
        RequestId: 'req-1',
        LogicalResourceId: 'InitialSync',
        StackId: 'stack',
        PhysicalResourceId: `${tableName}-sync`,
        Data: { Written: 3, Unchanged: 0, Deleted: 0, Failed: 0, Deferred: 0 },
      }),
    }]);
  });

  test('a first sync that cannot finish in time still answers SUCCESS and defers the rest to the schedule', async () => {
    // GIVEN an invocation with less time left than the handler keeps back to finish
    seedPublished(standIn, 3);
    const context = { getRemainingTimeInMillis: () => 1 };
    // WHEN
    const report = await loadHandler()(request('Create'), context);
    // THEN
    expect(report).toMatchObject({ deferred: 3, written: 0, complete: false });
    expect(responses[0].body).toMatchObject({ Status: 'SUCCESS', Data: { Written: 0, Deferred: 3 } });
    const emf = logs.map((l) => JSON.parse(l)).find((l) => l._aws);
    expect(emf[SyncMetric.fullSyncSucceeded]).toBeUndefined();
  });

  test('Delete answers SUCCESS without touching the table', async () => {
    // GIVEN
    const [a] = seedPublished(standIn, 1);
    // WHEN
    await loadHandler()({ ...request('Delete'), PhysicalResourceId: 'p-1' });
    // THEN
    expect(responses[0].body).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'p-1' });
    expect(await pointer(a)).toBeUndefined();
  });

  test('a Create whose sync cannot list the source answers FAILED, once, without throwing', async () => {
    // GIVEN
    process.env.AWS_ENDPOINT_URL_BEDROCK_AGENT = 'http://127.0.0.1:9';
    // WHEN
    const result = await loadHandler()(request('Create'));
    // THEN answered once, and not thrown (a throw would make Lambda retry and answer again)
    expect(result).toEqual({ failed: expect.stringMatching(/^sync failed: /) });
    expect(responses).toHaveLength(1);
    expect(responses[0].body).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/^sync failed: /) });
  });

  test('an Update whose sync fails answers SUCCESS with the error, so a rollback cannot get stuck', async () => {
    // GIVEN
    process.env.AWS_ENDPOINT_URL_BEDROCK_AGENT = 'http://127.0.0.1:9';
    // WHEN
    const result = await loadHandler()({ ...request('Update'), PhysicalResourceId: 'p-1' });
    // THEN
    expect(result).toEqual({ failed: expect.stringMatching(/^sync failed: /) });
    expect(responses).toEqual([{
      method: 'PUT',
      body: expect.objectContaining({ Status: 'SUCCESS', PhysicalResourceId: 'p-1', Data: { Error: expect.stringMatching(/^sync failed: /) } }),
    }]);
  });
});

test('a directory source syncs the example prompts', async () => {
  // GIVEN
  Object.assign(process.env, { [Env.sourceType]: 'directory', [Env.sourceOptions]: JSON.stringify({ path: EXAMPLES }) });
  // WHEN
  const report = await loadHandler()({});
  // THEN
  expect(report).toMatchObject({ written: 3, failed: 0 });
  expect(await pointer('support-triage')).toMatchObject({ template_type: 'CHAT', source: 'directory' });
});

test('a missing environment variable fails naming it', async () => {
  // GIVEN
  delete process.env[Env.tableName];
  // WHEN / THEN
  await expect(loadHandler()({})).rejects.toThrow(`environment variable ${Env.tableName} is not set`);
});
