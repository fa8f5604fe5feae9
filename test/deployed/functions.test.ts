/**
 * Every Lambda function of the README's stacks (test/deployed/readme-app.ts) run from its isolated asset
 * (test/support/as-deployed.ts): nothing beside the asset but its layers and what the Lambda runtime provides,
 * against DynamoDB Local (its stream included), a TLS cluster-mode redis-server with the template's ACL users, and
 * the Bedrock stand-in; invoked with events shaped as AWS delivers them.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { buildSync } from 'esbuild';
import { createClient } from 'redis';
import { buildReadmeApp, prepareReaderApp } from './readme-app';
import { CURRENT, decodeStreamValue, Env, incarnationOf, l2AccessRules, l2EpochKey, l2ItemKey, l2KeyPattern, L2_READER_COMMANDS, L2_WRITER_COMMANDS, parseEpoch } from '../../src/schema';
import { createStreamTable } from '../invalidation/cache-fixture';
import { DeployedProcess, resourceId, startFunction, SynthesizedApp, SynthesizedFunction, synthesize } from '../support/as-deployed';
import { driveMapping } from '../support/as-deployed-stream';
import { seedPublished, textDraft } from '../support/bedrock-fixtures';
import { BedrockStandIn } from '../support/bedrock-stand-in';
import { freePort } from '../support/dynamodb-local';
import { ADMIN_AUTH, RedisServer, startRedisServer } from '../support/redis-server';
import { createServingTable, deleteTable, localDynamoDBClient, localEndpoint } from '../support/table';

const root = path.resolve(__dirname, '../..');
const ddb = localDynamoDBClient();
let work: string;
let synth: SynthesizedApp;
let cached: string; // the Cached stack's table: stream on, behind the cache
let streamArn: string;
let cache: RedisServer;
let bedrock: BedrockStandIn;
let cacheUsers: { name: string; password: string; rules: string }[];
const covered = new Set<string>();
const started: DeployedProcess[] = [];
const tables: string[] = [];

const CACHE_NAME = 'prompts-cache';
const event = { variables: { audience: 'executives', sentences: 3, document: 'Q3 revenue grew.' } };

beforeAll(async () => {
  work = await prepareReaderApp();
  // The readers' entries are the README's blocks plus one export each, so the test can read the client's stats().
  fs.appendFileSync(path.join(work, 'lambda', 'inference.mjs'), '\nexport const stats = () => prompts.stats();\n');
  fs.appendFileSync(path.join(work, 'lambda', 'inference.js'), '\nexport const stats = () => prompts.stats();\n');
  fs.appendFileSync(path.join(work, 'lambda', 'reader-py', 'handler.py'), '\n\ndef stats(event, context):\n    return prompts.stats()\n');
  synth = synthesize((app) => { buildReadmeApp(app, work); });
  ({ table: cached, streamArn } = await createStreamTable(ddb));
  tables.push(cached);
  const env = (prefix: string) => synth.templates.Cached.Resources[resourceId(synth.templates.Cached, 'AWS::Lambda::Function', prefix)].Properties.Environment.Variables;
  const writer = env('PromptsInvalidationFunction')[Env.cacheUser];
  const reader = env('ReaderEsm')[Env.cacheUser];
  cacheUsers = [
    { name: reader, password: 'unused', rules: `nopass ${l2AccessRules(l2KeyPattern(cached), L2_READER_COMMANDS)}` },
    { name: writer, password: 'unused', rules: `nopass ${l2AccessRules(l2KeyPattern(cached), L2_WRITER_COMMANDS)}` },
  ];
  cache = await startRedisServer({ tls: true, cluster: true, users: cacheUsers });
  bedrock = new BedrockStandIn();
  await bedrock.start();
}, 120_000);

afterAll(async () => {
  for (const fn of started) await fn.stop();
  await cache?.stop();
  await bedrock?.stop();
  for (const t of tables) await deleteTable(ddb, t);
  ddb.destroy();
  synth?.cleanup();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** Tokens of the Cached and Directory stacks → the local parts; `table` is what the table's `Ref` means here. */
function refs(table: string, cachePort?: number) {
  return (logicalId: string, attribute?: string): string | undefined => {
    if (logicalId.startsWith('PromptsTable')) return attribute === undefined ? table : undefined;
    if (logicalId.startsWith('PromptsCache')) {
      if (attribute === 'Endpoint.Address') return 'localhost';
      if (attribute === 'Endpoint.Port') return String(cachePort ?? cache.port);
      if (attribute === undefined) return CACHE_NAME;
    }
    return undefined;
  };
}

interface StartOverrides { readonly layerDirs?: readonly string[]; readonly assetDir?: string; readonly cachePort?: number }

async function start(fn: SynthesizedFunction, table: string, options: StartOverrides = {}): Promise<DeployedProcess> {
  const proc = await startFunction({ ...fn, layerDirs: options.layerDirs ?? fn.layerDirs }, {
    refs: refs(table, options.cachePort),
    assetDir: options.assetDir,
    extraEnv: {
      AWS_ENDPOINT_URL_DYNAMODB: localEndpoint(),
      AWS_ENDPOINT_URL_BEDROCK_AGENT: bedrock.endpoint,
      NODE_EXTRA_CA_CERTS: path.join(cache.certDir!, 'ca.crt'),
      SSL_CERT_FILE: path.join(cache.certDir!, 'ca.crt'),
    },
  });
  started.push(proc);
  if (options.layerDirs === undefined && options.assetDir === undefined) covered.add(`${fn.stack}/${fn.logicalId}`);
  return proc;
}

/** A local stand-in of CloudFormation's pre-signed response URL: records what the function PUT. */
async function responseUrl(): Promise<{ url: string; bodies: any[]; close(): Promise<void> }> {
  const bodies: any[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => { body += d.toString(); });
    req.on('end', () => {
      bodies.push({ method: req.method, ...JSON.parse(body) });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cfn-response?X-Amz-Signature=local`,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function customResourceEvent(stack: string, requestType: 'Create' | 'Update' | 'Delete', url: string, physicalId?: string) {
  const template = synth.templates[stack];
  const id = resourceId(template, 'Custom::PromptSync', 'Prompts');
  const { ServiceToken, ...properties } = template.Resources[id].Properties;
  return {
    RequestType: requestType,
    ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:sync',
    ResponseURL: url,
    StackId: `arn:aws:cloudformation:us-east-1:123456789012:stack/${stack}/guid`,
    RequestId: `req-${requestType}`,
    LogicalResourceId: id,
    ResourceType: 'Custom::PromptSync',
    ResourceProperties: { ServiceToken, ...properties },
    ...(requestType === 'Create' ? {} : { PhysicalResourceId: physicalId, OldResourceProperties: { ServiceToken, ...properties } }),
  };
}

const scheduled = {
  'version': '0',
  'id': 'e1',
  'detail-type': 'Scheduled Event',
  'source': 'aws.events',
  'account': '123456789012',
  'time': new Date().toISOString(),
  'region': 'us-east-1',
  'resources': ['arn:aws:events:us-east-1:123456789012:rule/reconcile'],
  'detail': {},
};

function cloudTrailEvent(promptId: string, eventName = 'UpdatePrompt') {
  return {
    'version': '0',
    'id': 'e2',
    'detail-type': 'AWS API Call via CloudTrail',
    'source': 'aws.bedrock',
    'account': '123456789012',
    'time': new Date().toISOString(),
    'region': 'us-east-1',
    'resources': [],
    'detail': {
      eventVersion: '1.09',
      eventSource: 'bedrock.amazonaws.com',
      eventName,
      awsRegion: 'us-east-1',
      eventTime: new Date().toISOString(),
      requestParameters: { promptIdentifier: promptId },
      responseElements: { id: promptId },
    },
  };
}

async function pointer(table: string, promptId: string) {
  return (await ddb.send(new GetItemCommand({ TableName: table, Key: { prompt_id: { S: promptId }, version: { S: CURRENT } } }))).Item;
}

describe.each(['Cached', 'Replica'])('the Bedrock sync function of the %s stack, from its isolated asset', (stack) => {
  test('answers CloudFormation Create/Update/Delete on the response URL, syncs on the schedule and on a CloudTrail change', async () => {
    // GIVEN a table of its own and two published prompts at the (stand-in) source
    const table = await createServingTable(ddb, `bedrock-${stack.toLowerCase()}`);
    tables.push(table);
    const [first, second] = seedPublished(bedrock, 2, stack);
    const fn = await start(synth.fn('PromptsSyncFunction', stack), table);
    expect(fn.initError).toBeUndefined();
    const cfn = await responseUrl();
    try {
      // WHEN CloudFormation creates the custom resource
      const created = await fn.invoke(customResourceEvent(stack, 'Create', cfn.url));
      // THEN one SUCCESS PUT, and the prompts are served from the table
      expect(created).toMatchObject({ missing: [], violations: [] });
      expect(created.error).toBeUndefined();
      expect(cfn.bodies).toEqual([expect.objectContaining({ method: 'PUT', Status: 'SUCCESS', RequestId: 'req-Create' })]);
      expect(await pointer(table, first)).toMatchObject({ version_number: { N: '1' }, status: { S: 'ACTIVE' } });
      const physicalId = cfn.bodies[0].PhysicalResourceId;

      // WHEN the schedule fires
      expect(await fn.call(scheduled)).toMatchObject({ mode: 'full', failed: 0 });

      // WHEN a prompt changes at the source and its CloudTrail event arrives
      bedrock.updateDraft(second, { variants: textDraft(`${stack}-1`, 'Changed about {{topic}}').variants });
      bedrock.createVersion(second);
      expect(await fn.call(cloudTrailEvent(second))).toMatchObject({ failed: 0 });
      expect(await pointer(table, second)).toMatchObject({ version_number: { N: '2' } });

      // WHEN CloudFormation updates, then deletes the resource
      await fn.call(customResourceEvent(stack, 'Update', cfn.url, physicalId));
      await fn.call(customResourceEvent(stack, 'Delete', cfn.url, physicalId));
      expect(cfn.bodies.map((b) => [b.RequestId, b.Status, b.PhysicalResourceId])).toEqual([
        ['req-Create', 'SUCCESS', physicalId], ['req-Update', 'SUCCESS', physicalId], ['req-Delete', 'SUCCESS', physicalId],
      ]);
    } finally {
      await cfn.close();
    }
  });
});

describe('the cache tier as deployed', () => {
  let invalidation: DeployedProcess;
  let stream: ReturnType<typeof driveMapping>;
  let inspect: ReturnType<typeof createClient>;

  beforeAll(async () => {
    const fn = synth.fn('PromptsInvalidationFunction');
    invalidation = await start(fn, cached);
    stream = driveMapping(synth.eventSourceMappings[fn.logicalId], streamArn, localEndpoint(), async (e) => invalidation.call(e));
    inspect = createClient({ url: cache.url, ...ADMIN_AUTH, socket: { tls: true, ca: cache.ca, servername: 'localhost', reconnectStrategy: false } });
    inspect.on('error', () => undefined);
    await inspect.connect();
  });

  afterAll(async () => {
    stream?.poller.close();
    await inspect?.close().catch(() => undefined);
  });

  test('the directory sync function (prompts from its layer) fills the table; the invalidation function writes every pointer through', async () => {
    // GIVEN the Directory stack's sync function, from its asset and its prompts layer, writing to the cached table
    const sync = await start(synth.fn('PromptsSyncFunction', 'Directory'), cached);
    const report = await sync.call<any>(scheduled);
    expect(report).toMatchObject({ mode: 'full', failed: 0 });
    expect(report.written).toBeGreaterThan(0);
    const epochBefore = parseEpoch(await inspect.get(l2EpochKey(cached)))?.counter ?? 0;

    // WHEN the stream is read as the template's event source mapping reads it
    const delivered = await stream.poller.drain();

    // THEN every CURRENT row reached the invalidation function, none failed, and each pointer is in the cache
    expect(delivered).toBeGreaterThanOrEqual(report.written);
    expect(stream.onFailure()).toEqual([]);
    expect(stream.poller.invocations.every((i) => !i.threw && i.failures === 0)).toBe(true);
    // (a stream value of this table's incarnation, and the epoch moved on under that incarnation)
    const incarnation = incarnationOf(streamArn);
    expect(incarnation).toBeDefined();
    const value = decodeStreamValue(await inspect.get(l2ItemKey(cached, 'summarize', CURRENT)), 'summarize', CURRENT);
    expect(value).toMatchObject({ inc: incarnation, seq: expect.stringMatching(/^\d+$/), item: expect.objectContaining({ version_number: { N: '1' } }) });
    const epochAfter = parseEpoch(await inspect.get(l2EpochKey(cached)));
    expect(epochAfter).toEqual({ counter: expect.any(Number), incarnation });
    expect(epochAfter!.counter).toBeGreaterThan(epochBefore);
    // AND the function asked for nothing its asset does not carry
    expect(await invalidation.invoke({ Records: [] })).toMatchObject({ missing: [], violations: [] });
  });

  test.each(['ReaderEsm', 'ReaderCjs'])('the README\'s %s (NodejsFunction, default bundling) serves from the cache through the layer', async (prefix) => {
    const fn = synth.fn(prefix, 'Cached');
    expect(fn.layerDirs).toHaveLength(1);
    const reader = await start(fn, cached);
    const result = await reader.invoke<any>(event);
    expect(result).toMatchObject({ missing: [], violations: [], error: undefined });
    expect(result.result).toMatchObject({ prompt: 'summarize', version: 1, request: expect.stringContaining('executives') });
    const stats = await reader.callExport<any>('stats');
    expect(stats).toMatchObject({ l2Unavailable: 0, storeReads: 0 });
    expect(stats.l2Hits).toBeGreaterThanOrEqual(1);
    expect(reader.logs.filter((l) => l.includes('"level":"ERROR"'))).toEqual([]);
  });

  test('the README\'s Python reader (Code.fromAsset of its folder) serves from the cache through the layer', async () => {
    const fn = synth.fn('ReaderPython');
    expect(fs.readdirSync(fn.assetDir)).toEqual(['handler.py']);
    const reader = await start(fn, cached);
    expect(reader.initError).toBeUndefined();
    const result = await reader.invoke<string>({ body: 'Q3 revenue grew.' });
    expect(result.error).toBeUndefined();
    expect(result.violations).toEqual([]);
    expect(result.missing).not.toContain('redis');
    expect(result.result).toContain('executives');
    const stats = await reader.callExport<any>('stats');
    expect(reader.logs.filter((l) => l.includes('ERROR'))).toEqual([]);
    expect(stats).toMatchObject({ l2_unavailable: 0, store_reads: 0 });
    expect(stats.l2_hits).toBeGreaterThanOrEqual(1);
  });

  test.each(['ReaderEsm', 'ReaderCjs'])('the README\'s %s without the cache (Directory stack) serves from the table', async (prefix) => {
    const fn = synth.fn(prefix, 'Directory');
    expect(fn.layerDirs).toEqual([]);
    const reader = await start(fn, cached);
    const result = await reader.invoke<any>(event);
    expect(result).toMatchObject({ missing: [], violations: [] });
    expect(result.result).toMatchObject({ prompt: 'summarize', version: 1 });
    expect(await reader.callExport<any>('stats')).toMatchObject({ l2Hits: 0, l2Unavailable: 0 });
  });

  test('a change reaches the cached readers through the stream with no table read', async () => {
    const fn = synth.fn('ReaderCjs', 'Cached');
    const reader = await start(fn, cached);
    await reader.call(event);
    const before = await reader.callExport<any>('stats');
    // WHEN the pointer changes in the table (as a sync writes it) and the stream is drained
    const item = (await pointer(cached, 'summarize'))!;
    await ddb.send(new PutItemCommand({
      TableName: cached,
      Item: { ...item, version_number: { N: '2' }, text: { S: 'Changed: {{document}} for {{audience}} in {{sentences}}' }, revision: { N: String(Number(item.revision?.N ?? 1) + 1) } },
    }));
    await stream.poller.drain();
    expect(stream.onFailure()).toEqual([]);
    // THEN the reader serves version 2 within a few epoch polls, without reading the table
    const deadline = Date.now() + 5000;
    let served: any;
    while (Date.now() < deadline) {
      served = await reader.call<any>(event);
      if (served.version === 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(served).toMatchObject({ version: 2, request: expect.stringContaining('Changed:') });
    expect((await reader.callExport<any>('stats')).storeReads).toBe(before.storeReads);
  });

  test('the cache down: batches are retried as the mapping says, then the on-failure record names them', async () => {
    // GIVEN the cache stopped
    await cache.stop();
    try {
      const item = (await pointer(cached, 'summarize'))!;
      await ddb.send(new PutItemCommand({ TableName: cached, Item: { ...item, revision: { N: String(Number(item.revision?.N ?? 1) + 1) } } }));
      // WHEN the stream is drained
      await stream.poller.drain();
      // THEN the record was tried 1 + MaximumRetryAttempts times and parked with its sequence numbers
      const mapping = synth.eventSourceMappings[synth.fn('PromptsInvalidationFunction').logicalId];
      expect(stream.onFailure()).toEqual([expect.objectContaining({
        requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: mapping.MaximumRetryAttempts + 1 },
        DDBStreamBatchInfo: expect.objectContaining({ batchSize: 1, streamArn }),
      })]);
    } finally {
      cache = await startRedisServer({ tls: true, cluster: true, certsFrom: cache, users: cacheUsers });
    }
  });
});

describe('the harness fails what a deployment would fail', () => {
  test('an invalidation asset that loads node-redis at run time (the old bundle) fails from its isolated copy, yet loads in place', async () => {
    // GIVEN the handler bundled with `redis` left external, as before this fix
    const broken = fs.mkdtempSync(path.join(os.tmpdir(), 'broken-asset-'));
    buildSync({
      entryPoints: [path.join(root, 'src/invalidation/invalidation.lambda.ts')],
      bundle: true,
      platform: 'node',
      target: 'node22',
      outfile: path.join(broken, 'index.js'),
      external: ['@aws-sdk/*', 'redis'],
      logLevel: 'silent',
      tsconfig: path.join(root, 'tsconfig.dev.json'),
    });
    try {
      // WHEN it is started from its isolated copy
      const fn = await start(synth.fn('PromptsInvalidationFunction'), cached, { assetDir: broken });
      // THEN its init fails with the module it lacks
      expect(fn.initError).toMatch(/Cannot find module 'redis'/);
      expect((await fn.invoke({ Records: [] })).missing).toContain('redis');
      // AND in the repository the same file finds node_modules/redis a few folders up: why in-place tests cannot see it
      const inRepo = path.join(root, '.tmp', `broken-${process.pid}.js`);
      fs.copyFileSync(path.join(broken, 'index.js'), inRepo);
      try {
        expect(require.resolve('redis', { paths: [path.dirname(inRepo)] })).toContain(fs.realpathSync(path.join(root, 'node_modules')));
      } finally {
        fs.rmSync(inRepo, { force: true });
      }
    } finally {
      fs.rmSync(broken, { recursive: true, force: true });
    }
  });

  test('a module resolved from outside the asset fails the invocation (the preload hook)', async () => {
    // GIVEN an asset whose code reaches for a module by an absolute path outside it
    const broken = fs.mkdtempSync(path.join(os.tmpdir(), 'escaping-asset-'));
    fs.writeFileSync(path.join(broken, 'index.js'),
      `exports.handler = async () => require(${JSON.stringify(path.join(root, 'node_modules', 'redis'))}).createClient !== undefined;`);
    try {
      const fn = await start(synth.fn('PromptsInvalidationFunction'), cached, { assetDir: broken });
      const result = await fn.invoke({ Records: [] });
      expect(result.violations).toEqual([expect.stringContaining('resolved outside the asset')]);
      expect(result.error?.message).toMatch(/as-deployed/);
    } finally {
      fs.rmSync(broken, { recursive: true, force: true });
    }
  });
});

describe('a cache reader without its layer fails loudly, never worse than no cache', () => {
  test('Node.js: one ERROR line naming the fix with the ReaderCacheUnavailable metric, stats().l2Unavailable, reads from the table', async () => {
    const fn = synth.fn('ReaderEsm', 'Cached');
    const reader = await start(fn, cached, { layerDirs: [] });
    const first = await reader.invoke<any>(event);
    await reader.call(event);
    expect(first.result).toMatchObject({ prompt: 'summarize' });
    // The cache adapter and node-redis both come from the layer (docs/adr/0003-reader-layer.md)
    expect(first.missing).toContain('cdk-prompt-serving-cache');
    expect(first.violations).toEqual([]);
    expect(await reader.callExport<any>('stats')).toMatchObject({ l2Unavailable: 1, l2Hits: 0 });
    const errors = reader.logs.filter((l) => l.includes('"level":"ERROR"')).map((l) => JSON.parse(l));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      message: expect.stringMatching(/PROMPT_SERVING_CACHE_ENDPOINT is set but node-redis \(redis\) cannot be loaded: attach the reader layer/),
      ReaderCacheUnavailable: 1,
      _aws: { CloudWatchMetrics: [{ Namespace: 'CdkPromptServing', Dimensions: [['TableName']], Metrics: [{ Name: 'ReaderCacheUnavailable', Unit: 'Count' }] }] },
    });
  });

  test('Python: the same line, metric and stats()["l2_unavailable"], reads from the table', async () => {
    // GIVEN the client copied in with the handler (as without a layer) but no redis-py
    const fn = synth.fn('ReaderPython');
    const asset = fs.mkdtempSync(path.join(os.tmpdir(), 'py-reader-'));
    fs.cpSync(fn.assetDir, asset, { recursive: true });
    fs.cpSync(path.join(fn.layerDirs[0], 'python', 'cdk_prompt_serving_runtime'), path.join(asset, 'cdk_prompt_serving_runtime'), { recursive: true });
    try {
      const reader = await start(fn, cached, { layerDirs: [], assetDir: asset });
      const result = await reader.invoke<string>({ body: 'x' });
      expect(result.violations).toEqual([]);
      expect(result.missing).toContain('redis');
      expect(result.result).toContain('executives');
      expect(await reader.callExport<any>('stats')).toMatchObject({ l2_unavailable: 1, l2_hits: 0 });
      const errors = reader.logs.filter((l) => l.startsWith('{') && l.includes('"level": "ERROR"')).map((l) => JSON.parse(l));
      expect(errors).toEqual([expect.objectContaining({
        message: expect.stringMatching(/redis-py .* cannot be imported: give the function the construct's reader layer/),
        ReaderCacheUnavailable: 1,
        TableName: cached,
      })]);
    } finally {
      fs.rmSync(asset, { recursive: true, force: true });
    }
  });
});

describe('a cache reader that cannot reach the cache fails loudly, never worse than no cache', () => {
  test.each(['ReaderCjs', 'ReaderPython'])('%s: one ERROR line naming the fix with the metric, counted in stats(), reads from the table', async (prefix) => {
    // GIVEN the cache endpoint pointing at a port nothing listens on
    const dead = await freePort();
    const reader = await start(synth.fn(prefix, 'Cached'), cached, { cachePort: dead });
    // WHEN it serves two requests
    const python = prefix === 'ReaderPython';
    const request = python ? { body: 'x' } : event;
    const first = await reader.invoke<any>(request);
    await reader.call(request);
    // THEN both were served from the table
    expect(first).toMatchObject({ violations: [], error: undefined });
    expect(JSON.stringify(first.result)).toContain('executives');
    const stats = await reader.callExport<any>('stats');
    expect(python ? stats.l2_unavailable : stats.l2Unavailable).toBe(1);
    // AND one ERROR line said why and how to fix it, as an EMF record of the readers' metric
    const errors = reader.logs.filter((l) => l.startsWith('{') && /"level": ?"ERROR"/.test(l)).map((l) => JSON.parse(l));
    expect(errors).toEqual([expect.objectContaining({
      message: expect.stringMatching(new RegExp(`PROMPT_SERVING_CACHE_ENDPOINT is set but the cache at localhost:${dead} (cannot|could not) be reached.*security group`)),
      ReaderCacheUnavailable: 1,
      TableName: cached,
      _aws: expect.objectContaining({ CloudWatchMetrics: [{ Namespace: 'CdkPromptServing', Dimensions: [['TableName']], Metrics: [{ Name: 'ReaderCacheUnavailable', Unit: 'Count' }] }] }),
    })]);
  });
});

test('every Lambda function of the README\'s stacks ran from its isolated asset', () => {
  expect([...covered].sort()).toEqual(synth.functions.map((f) => `${f.stack}/${f.logicalId}`).sort());
});
