/**
 * The release path end to end with real parts: a governed rollout across a fleet of reader processes.
 *
 * - The app is synthesized as a user's app is (a serving table with the serverless cache and `governance` with an
 *   activation gate and a rollout alarm); the release function, the rollout controller AND the invalidation function
 *   each run from their staged asset alone (test/support/as-deployed.ts), with the environment the template gives
 *   them. The invalidation function is fed from DynamoDB Local's stream by the template's event source mapping
 *   (test/support/as-deployed-stream.ts), polled 4 times a second as Lambda polls a shard.
 * - The cache is a real redis-server (TLS, one-node cluster, the template's writer ACL user and a reader user limited
 *   to the library's reader rules); the gate, EventBridge and CloudWatch are the local stand-ins (./aws-stand-ins.ts).
 * - 20 Node.js reader processes and 2 Python reader processes, each at the client's DEFAULT settings (epoch read every
 *   500 ms), poll label `production` for the same 200 stickiness keys every 100 ms and report, per poll, the version
 *   and arm served for each key (test/support/rollout-fleet-reader.ts, test/support/rollout_fleet_reader.py).
 * - The rollout moves ONLY through the release path: `set-label` and `rollout-start` are function-URL requests to the
 *   release function (the caller's principal as Lambda's AWS_IAM auth hands it over); the scheduled steps (10 → 50 →
 *   100 %) and the promotion are taken by the rollout controller on EventBridge "Scheduled Event"s, its clock moved
 *   forward by a preloaded offset (the schedule's minutes, not waited for); the second rollout is aborted by a
 *   CloudWatch "Alarm State Change" event as EventBridge delivers it.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { build } from 'esbuild';
import { AwsStandIns } from './aws-stand-ins';
import { PromptCache, PromptServingTable, PromptSource } from '../../src';
import { AUDIT_SORT_KEY_PREFIX, Env, l2AccessRules, l2KeyPattern, L2_READER_COMMANDS, L2_WRITER_COMMANDS, PARTITION_KEY, rolloutBucket, SORT_KEY } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { createStreamTable } from '../invalidation/cache-fixture';
import { DeployedProcess, startFunction, SynthesizedApp, SynthesizedFunction, synthesize } from '../support/as-deployed';
import { driveMapping, MappingDriver } from '../support/as-deployed-stream';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { deleteTable, localDynamoDBClient, localEndpoint } from '../support/table';

const NODE_READERS = 20;
const PYTHON_READERS = 2;
const KEYS = Array.from({ length: 200 }, (_, k) => `user-${k}`);
const PROMPT = 'greeting';
const LABEL = 'production';
const POLL_MS = 100;
/** Lambda polls each shard of a DynamoDB stream four times a second. */
const STREAM_POLL_MS = 250;
/** The bound asserted for the abort to reach every reader (the tier's propagation: stream poll + epoch poll + a poll). */
const PROPAGATION_BOUND_MS = 3000;
const ACCOUNT = '111122223333';
const PIPELINE_ROLE = `arn:aws:iam::${ACCOUNT}:role/ReleasePipeline`;
const PIPELINE = `arn:aws:sts::${ACCOUNT}:assumed-role/ReleasePipeline/build-16`;
const CONTROLLER_ROLE = `arn:aws:iam::${ACCOUNT}:role/RolloutController`;
const ALARM = 'checkout-errors';
const READER_USER = 'prompt-reader';
const CACHE_NAME = 'prompts-cache';

/** The controller's clock runs this many ms ahead of the machine's (read on every Date.now() of its process). */
const CLOCK_PRELOAD = String.raw`
const fs = require('node:fs');
const file = process.env.FLEET_CLOCK_OFFSET_FILE;
const now = Date.now.bind(Date);
Date.now = () => { let offset = 0; try { offset = Number(fs.readFileSync(file, 'utf8')) || 0; } catch {} return now() + offset; };
`;

/** One poll of one reader: when, the version and arm served per key, and its [rollout faults, store errors, L2 errors] so far. */
interface Poll { readonly t: number; readonly v: string; readonly a: string; readonly e: [number, number, number] }
/** When each reader first served what was waited for; readers that did not, with their last poll. */
interface Served { readonly at: Record<string, number>; readonly missing: string[] }
interface Reader {
  readonly name: string;
  readonly polls: Poll[];
  readonly errors: string[];
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  /** The client's stats() (Node camelCase, Python snake_case), written as the reader stops. */
  stats?: Record<string, number>;
}

const admin = localDynamoDBClient();
const aws = new AwsStandIns();
const started: DeployedProcess[] = [];
const readers: Reader[] = [];
let work: string;
let table: string;
let streamArn: string;
let synth: SynthesizedApp;
let cache: RedisServer;
let release: DeployedProcess;
let controller: DeployedProcess;
let mapping: MappingDriver;
let polling = false;
let pollLoop: Promise<void> = Promise.resolve();
let clockOffsetFile: string;

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'fleet-rollout-'));
  clockOffsetFile = path.join(work, 'clock-offset');
  fs.writeFileSync(clockOffsetFile, '0');
  fs.writeFileSync(path.join(work, 'clock.cjs'), CLOCK_PRELOAD);
  await aws.start();
  ({ table, streamArn } = await createStreamTable(admin));
  synth = synthesize((app) => {
    const stack = new Stack(app, 'Governed', { env: { account: ACCOUNT, region: 'us-east-1' } });
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 2, natGateways: 0, subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }] });
    const gate = lambda.Function.fromFunctionArn(stack, 'Gate', `arn:aws:lambda:us-east-1:${ACCOUNT}:function:gate`);
    const alarm = new cloudwatch.Alarm(stack, 'CheckoutErrors', {
      alarmName: ALARM, metric: new cloudwatch.Metric({ namespace: 'Shop', metricName: 'Errors' }), threshold: 1, evaluationPeriods: 1,
    });
    const prompts = new PromptServingTable(stack, 'Prompts', {
      source: PromptSource.bedrock(),
      cache: PromptCache.serverless({ vpc }),
      governance: { activationGate: gate, rolloutAlarms: [alarm] },
    });
    prompts.grantRelease(new iam.Role(stack, 'Pipeline', { assumedBy: new iam.AccountRootPrincipal(), roleName: 'ReleasePipeline' }), { labels: [LABEL] });
  });
  const invalidationFn = synth.fn('PromptsInvalidationFunction');
  cache = await startRedisServer({
    tls: true,
    cluster: true,
    users: [
      { name: READER_USER, password: 'unused', rules: `nopass ${l2AccessRules(l2KeyPattern(table), L2_READER_COMMANDS)}` },
      { name: invalidationFn.environment[Env.cacheUser] as string, password: 'unused', rules: `nopass ${l2AccessRules(l2KeyPattern(table), L2_WRITER_COMMANDS)}` },
    ],
  });

  // Three versions of the prompt, written by the real sync engine (CURRENT ends on v3; the label is ours to move).
  const dir = path.join(work, 'prompts');
  fs.mkdirSync(dir);
  for (const n of [1, 2, 3]) {
    fs.writeFileSync(path.join(dir, `${PROMPT}.md`), `Hello v${n} {{name}}`);
    await new SyncEngine({ dynamoDBClient: admin, tableName: table, source: new DirectoryPromptSource(dir) }).fullSync();
  }

  // The functions, as deployed.
  const invalidation = await start(invalidationFn);
  release = await start(synth.fn('PromptsGovernanceReleaseFunction'));
  controller = await start(synth.fn('PromptsGovernanceRolloutControllerFunction'), {
    NODE_OPTIONS: `--require ${path.join(work, 'clock.cjs')}`, FLEET_CLOCK_OFFSET_FILE: clockOffsetFile,
  });
  mapping = driveMapping(synth.eventSourceMappings[invalidationFn.logicalId], streamArn, localEndpoint(), (e) => invalidation.call(e));
  polling = true;
  pollLoop = (async () => {
    // bounded: at most 10 minutes of polls, whatever the tests do
    for (let i = 0; polling && i < (10 * 60_000) / STREAM_POLL_MS; i++) {
      await mapping.poller.drain().catch((err) => process.stderr.write(`stream poll failed: ${err}\n`));
      await sleep(STREAM_POLL_MS);
    }
  })();

  // The label starts on v1, through the release path.
  expect(await releaseRequest({ action: 'set-label', promptId: PROMPT, label: LABEL, version: 1 })).toMatchObject({ toVersion: 1, changed: true });
  await startReaders();
}, 180_000);

afterAll(async () => {
  polling = false;
  await pollLoop;
  mapping?.poller.close();
  await stopReaders();
  for (const p of started) await p.stop();
  await cache?.stop();
  await aws.stop();
  await deleteTable(admin, table);
  admin.destroy();
  synth?.cleanup();
  if (work) fs.rmSync(work, { recursive: true, force: true });
}, 60_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Closes every reader's stdin: each ends its poll, writes its stats and exits; one that does not within 5 s is killed. */
async function stopReaders(): Promise<void> {
  for (const r of readers) r.child.stdin?.end();
  await Promise.all(readers.map(async (r) => {
    const timer = setTimeout(() => r.child.kill('SIGKILL'), 5000);
    await r.exited;
    clearTimeout(timer);
  }));
}

async function start(fn: SynthesizedFunction, env: Record<string, string> = {}): Promise<DeployedProcess> {
  const proc = await startFunction(fn, {
    refs: (logicalId, attribute) => {
      if (logicalId.startsWith('PromptsTable')) return attribute === undefined ? table : undefined;
      if (logicalId.startsWith('PromptsCache')) {
        if (attribute === 'Endpoint.Address') return 'localhost';
        if (attribute === 'Endpoint.Port') return String(cache.port);
        if (attribute === undefined) return CACHE_NAME;
      }
      if (logicalId.startsWith('CheckoutErrors')) return ALARM;
      if (logicalId.startsWith('Pipeline')) return PIPELINE_ROLE;
      if (logicalId.startsWith('PromptsGovernanceRolloutControllerRole')) return CONTROLLER_ROLE;
      return undefined;
    },
    extraEnv: {
      AWS_ENDPOINT_URL_DYNAMODB: localEndpoint(),
      AWS_ENDPOINT_URL_LAMBDA: aws.endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: aws.endpoint,
      AWS_ENDPOINT_URL_CLOUDWATCH: aws.endpoint,
      NODE_EXTRA_CA_CERTS: path.join(cache.certDir!, 'ca.crt'),
      ...env,
    },
  });
  started.push(proc);
  if (proc.initError) throw new Error(`${fn.logicalId} did not start: ${proc.initError}`);
  return proc;
}

/** A request to the release function's URL, signed by the pipeline's role (as Lambda's AWS_IAM auth hands it over). */
async function releaseRequest(body: Record<string, unknown>): Promise<any> {
  const answer = await release.call<{ statusCode: number; body: string }>({
    version: '2.0',
    rawPath: '/',
    body: Buffer.from(JSON.stringify(body)).toString('base64'),
    isBase64Encoded: true,
    requestContext: { http: { method: 'POST' }, authorizer: { iam: { userArn: PIPELINE, accountId: ACCOUNT } } },
  });
  if (answer.statusCode !== 200) throw new Error(`release ${body.action}: ${answer.statusCode} ${answer.body}`);
  return JSON.parse(answer.body).result;
}

/** One EventBridge "Scheduled Event" to the controller, its clock `offsetMs` ahead. */
async function scheduledTick(offsetMs: number): Promise<any[]> {
  fs.writeFileSync(clockOffsetFile, String(offsetMs));
  const time = new Date(Date.now() + offsetMs).toISOString().replace(/\.\d+Z$/, 'Z');
  const { actions } = await controller.call<{ actions: any[] }>({
    'version': '0',
    'id': `tick-${offsetMs}`,
    'detail-type': 'Scheduled Event',
    'source': 'aws.events',
    'account': ACCOUNT,
    time,
    'region': 'us-east-1',
    'resources': [`arn:aws:events:us-east-1:${ACCOUNT}:rule/rollout-schedule`],
    'detail': {},
  });
  return actions;
}

async function startReaders(): Promise<void> {
  const bundle = path.join(work, 'reader', 'index.js');
  await build({ entryPoints: [path.join(__dirname, '../support/rollout-fleet-reader.ts')], bundle: true, platform: 'node', target: 'node20', outfile: bundle, logLevel: 'error', external: ['redis', '@redis/*'] });
  const caFile = path.join(cache.certDir!, 'ca.crt');
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    TABLE_NAME: table,
    DYNAMODB_ENDPOINT: localEndpoint(),
    CACHE_PORT: String(cache.port),
    CACHE_CA: cache.ca!,
    CACHE_CA_FILE: caFile,
    CACHE_USER: READER_USER,
    PROMPT_ID: PROMPT,
    LABEL,
    KEYS: JSON.stringify(KEYS),
    POLL_MS: String(POLL_MS),
    MAX_LIFETIME_MS: '240000',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_REGION: 'us-east-1',
    AWS_EC2_METADATA_DISABLED: 'true',
    // node-redis is loaded at run time (as the reader layer provides it), from the project's node_modules here
    NODE_PATH: path.resolve(__dirname, '../../node_modules'),
    PYTHON_CLIENT_PATH: path.resolve(__dirname, '../../python'),
  };
  const spawnReader = (name: string, command: string, args: string[]) => {
    const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const reader: Reader = { name, polls: [], errors: [], child, exited: new Promise((resolve) => child.once('exit', () => resolve())) };
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = JSON.parse(line);
      if (m.t !== undefined) reader.polls.push(m);
      if (m.stats !== undefined) reader.stats = m.stats;
    });
    child.stderr!.on('data', (d: Buffer) => { if (reader.errors.length < 20) reader.errors.push(d.toString()); });
    readers.push(reader);
  };
  // Started in waves of 6, each once the previous one serves: a fleet's containers do not all start in one second.
  for (let i = 0; i < NODE_READERS + PYTHON_READERS; i++) {
    if (i < NODE_READERS) spawnReader(`node-${i}`, process.execPath, [bundle]);
    else spawnReader(`python-${i - NODE_READERS}`, '/usr/bin/python3', ['-B', path.resolve(__dirname, '../support/rollout_fleet_reader.py')]);
    if (readers.length % 6 === 0) expect((await untilServed('1'.repeat(KEYS.length), 0, 60_000, NO_ROLLOUT)).missing).toEqual([]);
  }
  // Every reader serves v1 to every key before the rollout starts.
  const at = await untilServed('1'.repeat(KEYS.length), Date.now(), 60_000, NO_ROLLOUT);
  expect(at.missing).toEqual([]);
}

/**
 * Waits until every reader has a poll after `since` serving exactly `versions` (and reporting exactly `arms`, when
 * given); the first such poll's time per reader.
 */
async function untilServed(versions: string, since: number, timeoutMs: number, arms?: string): Promise<Served> {
  const deadline = Date.now() + timeoutMs;
  const at: Record<string, number> = {};
  const missing = () => readers.filter((r) => at[r.name] === undefined);
  // bounded in time and in rounds (one every 50 ms)
  for (let round = 0; round <= timeoutMs / 50 && missing().length > 0 && Date.now() <= deadline; round++) {
    for (const r of missing()) {
      const hit = r.polls.find((p) => p.t >= since && p.v === versions && (arms === undefined || p.a === arms));
      if (hit) at[r.name] = hit.t;
    }
    if (missing().length > 0) await sleep(50);
  }
  return { at, missing: missing().map((r) => `${r.name}: last ${JSON.stringify(r.polls[r.polls.length - 1])} ${r.errors.join(' ')}`) };
}

/** The versions every key must be served with `percentBp` of the rollout of `b` over `a`: the hash's arm, key by key. */
const expected = (a: number, b: number, percentBp: number) => KEYS.map((key) => (rolloutBucket(PROMPT, LABEL, key) < percentBp ? b : a)).join('');
/** The arm every key must report at `percentBp`. */
const expectedArms = (percentBp: number) => KEYS.map((key) => (rolloutBucket(PROMPT, LABEL, key) < percentBp ? 'B' : 'A')).join('');
/** What a label without a rollout reports for every key (no arm). */
const NO_ROLLOUT = '-'.repeat(KEYS.length);
/** CloudWatch's own timestamp format in alarm state change events (`2026-12-01T18:05:00.000+0000`). */
const cloudWatchTime = (ms: number) => new Date(ms).toISOString().replace('Z', '+0000');
const onB = (percentBp: number) => KEYS.filter((key) => rolloutBucket(PROMPT, LABEL, key) < percentBp).length;

/** A share written, and when (the moment its request was sent: no reader can see it before). */
const writes: { at: number; a: number; b: number; percentBp: number }[] = [];

async function auditTrail(): Promise<Record<string, any>[]> {
  const out = await admin.send(new QueryCommand({
    TableName: table,
    ConsistentRead: true,
    KeyConditionExpression: '#pk = :id AND begins_with(#sk, :p)',
    ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
    ExpressionAttributeValues: { ':id': { S: PROMPT }, ':p': { S: AUDIT_SORT_KEY_PREFIX } },
  }));
  return (out.Items ?? []).map(fromItem);
}

test('a 10 % → 50 % → 100 % rollout through the release path: every reader serves exactly the hash\'s arm at each step, and no key goes back', async () => {
  const rolloutStart = Date.now();
  // WHEN the pipeline starts a scheduled rollout of v2 at 10 % ...
  writes.push({ at: Date.now(), a: 1, b: 2, percentBp: 1000 });
  const startAnswer = await releaseRequest({ action: 'rollout-start', promptId: PROMPT, label: LABEL, version: 2, percent: 10, steps: [50, 100], stepIntervalSeconds: 60 });
  expect(startAnswer).toMatchObject({ changed: true });
  let reached = await untilServed(expected(1, 2, 1000), writes[0].at, 15_000, expectedArms(1000));
  expect(reached.missing).toEqual([]);
  const share10 = onB(1000);

  // ... and the controller's schedule, one interval later, takes 50 %, then 100 %, then promotes after the bake time
  const steps: [number, number][] = [[65_000, 5000], [130_000, 10_000]];
  const taken: number[] = [];
  for (const [offset, percentBp] of steps) {
    // an early tick (10 s later on the controller's clock) is not due and moves nothing
    expect((await scheduledTick(offset - 55_000)).map((a: any) => a.outcome)).toEqual(['not-due']);
    writes.push({ at: Date.now(), a: 1, b: 2, percentBp });
    const actions = await scheduledTick(offset);
    expect(actions).toEqual([expect.objectContaining({ promptId: PROMPT, label: LABEL, outcome: 'stepped' })]);
    reached = await untilServed(expected(1, 2, percentBp), writes[writes.length - 1].at, 15_000, expectedArms(percentBp));
    expect(reached.missing).toEqual([]);
    taken.push(onB(percentBp));
  }
  writes.push({ at: Date.now(), a: 2, b: 2, percentBp: 10_000 });
  expect(await scheduledTick(195_000)).toEqual([expect.objectContaining({ promptId: PROMPT, label: LABEL, outcome: 'promoted' })]);
  reached = await untilServed('2'.repeat(KEYS.length), writes[writes.length - 1].at, 15_000, NO_ROLLOUT);
  expect(reached.missing).toEqual([]);

  // THEN every reader served B to exactly the keys the hash puts below each share (waited for above), which is about
  // 10 %, 50 % and all of them ...
  expect(share10).toBeGreaterThan(KEYS.length * 0.04);
  expect(share10).toBeLessThan(KEYS.length * 0.18);
  expect(taken[0]).toBeGreaterThan(KEYS.length * 0.4);
  expect(taken[0]).toBeLessThan(KEYS.length * 0.6);
  expect(taken[1]).toBe(KEYS.length);
  // ... and in every poll of every reader, Node.js and Python alike: no read failed, no key ever went back from v2 to
  // v1, and no key was served v2 before a share covering its bucket had been written (so exactly the hash's keys moved)
  const problems: string[] = [];
  for (const r of readers) {
    const last = new Map<number, string>();
    for (const p of r.polls.filter((x) => x.t >= rolloutStart)) {
      const share = writes.filter((w) => w.at <= p.t).reduce((max, w) => Math.max(max, w.percentBp), 0);
      for (let k = 0; k < KEYS.length; k++) {
        const v = p.v[k];
        if (v === 'x') problems.push(`${r.name}: read of ${KEYS[k]} failed at ${p.t}`);
        if (last.get(k) === '2' && v === '1') problems.push(`${r.name}: ${KEYS[k]} went back from v2 to v1 at ${p.t}`);
        if (v === '2' && rolloutBucket(PROMPT, LABEL, KEYS[k]) >= share) problems.push(`${r.name}: ${KEYS[k]} on v2 at ${p.t} before its share was written`);
        // the arm the reader reports (prompt.rollout.arm, for the caller's log) is the version it served
        if ((p.a[k] === 'A' && v !== '1') || (p.a[k] === 'B' && v !== '2')) problems.push(`${r.name}: ${KEYS[k]} arm ${p.a[k]} with v${v} at ${p.t}`);
        last.set(k, v);
      }
    }
  }
  expect(problems.slice(0, 10)).toEqual([]);
  process.stdout.write(`fleet rollout: ${readers.length} readers, ${KEYS.length} keys; on B at 10 %: ${share10}, 50 %: ${taken[0]}, 100 %: ${taken[1]}\n`);
}, 150_000);

test('a second rollout, aborted by a CloudWatch "Alarm State Change" event: every reader is back on A within the tier\'s propagation time', async () => {
  // GIVEN v3 rolling out over v2 (what the first rollout promoted), stepped to 50 % by the schedule
  const rolloutStart = Date.now();
  const shares = [{ at: rolloutStart, percentBp: 1000 }];
  expect(await releaseRequest({
    action: 'rollout-start', promptId: PROMPT, label: LABEL, version: 3, percent: 10, steps: [50, 100], stepIntervalSeconds: 60, alarms: [ALARM],
  })).toMatchObject({ changed: true });
  expect((await untilServed(expected(2, 3, 1000), rolloutStart, 15_000, expectedArms(1000))).missing).toEqual([]);
  shares.push({ at: Date.now(), percentBp: 5000 });
  expect(await scheduledTick(400_000)).toEqual([expect.objectContaining({ outcome: 'stepped' })]);
  expect((await untilServed(expected(2, 3, 5000), shares[1].at, 15_000, expectedArms(5000))).missing).toEqual([]);

  // WHEN the alarm goes to ALARM and EventBridge delivers the state change to the controller
  aws.alarmStates.set(ALARM, 'ALARM');
  const fired = Date.now();
  const aborted = await controller.call<{ actions: any[] }>({
    'version': '0',
    'id': 'c4c1c1c9-6542-e61b-6ef0-8c4d36933a92',
    'detail-type': 'CloudWatch Alarm State Change',
    'source': 'aws.cloudwatch',
    'account': ACCOUNT,
    'time': new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    'region': 'us-east-1',
    'resources': [`arn:aws:cloudwatch:us-east-1:${ACCOUNT}:alarm:${ALARM}`],
    'detail': {
      alarmName: ALARM,
      state: { value: 'ALARM', reason: 'Threshold Crossed: 1 datapoint [3.0] was greater than the threshold (1.0).', timestamp: cloudWatchTime(Date.now()) },
      previousState: { value: 'OK', timestamp: cloudWatchTime(Date.now() - 3_600_000) },
      configuration: { metrics: [] },
    },
  });
  const abortWritten = Date.now();
  expect(aborted.actions).toEqual([expect.objectContaining({ promptId: PROMPT, label: LABEL, outcome: 'aborted', detail: ALARM })]);

  // THEN every reader, Node.js and Python, serves arm A (v2) to every key within the propagation bound ...
  const back = await untilServed('2'.repeat(KEYS.length), fired, 10_000, NO_ROLLOUT);
  expect(back.missing).toEqual([]);
  const latency = Object.entries(back.at).map(([name, at]) => ({ name, ms: at - fired }));
  const slowest = Math.max(...latency.map((l) => l.ms));
  const slowestPython = Math.max(...latency.filter((l) => l.name.startsWith('python')).map((l) => l.ms));
  process.stdout.write(`fleet rollout: alarm abort reached all ${readers.length} readers in ${slowest} ms from the alarm event `
    + `(${slowest - (abortWritten - fired)} ms after the controller answered; Python readers ${slowestPython} ms)\n`);
  expect(slowest).toBeLessThanOrEqual(PROPAGATION_BOUND_MS);

  // ... and before the abort no key went back from v3 to v2 or was on v3 before its share was written, and no read failed
  const problems: string[] = [];
  for (const r of readers) {
    const last = new Map<number, string>();
    for (const p of r.polls.filter((x) => x.t >= rolloutStart && x.t < fired)) {
      for (let k = 0; k < KEYS.length; k++) {
        if (p.v[k] === 'x') problems.push(`${r.name}: read of ${KEYS[k]} failed at ${p.t}`);
        if (last.get(k) === '3' && p.v[k] === '2') problems.push(`${r.name}: ${KEYS[k]} went back from v3 to v2 at ${p.t}`);
        const share = shares.filter((w) => w.at <= p.t).reduce((max, w) => Math.max(max, w.percentBp), 0);
        if (p.v[k] === '3' && rolloutBucket(PROMPT, LABEL, KEYS[k]) >= share) problems.push(`${r.name}: ${KEYS[k]} on v3 at ${p.t} before its share was written`);
        if ((p.a[k] === 'A' && p.v[k] !== '2') || (p.a[k] === 'B' && p.v[k] !== '3')) problems.push(`${r.name}: ${KEYS[k]} arm ${p.a[k]} with v${p.v[k]} at ${p.t}`);
        last.set(k, p.v[k]);
      }
    }
  }
  expect(problems.slice(0, 10)).toEqual([]);

  // AND the audit trail lists every move with its actor, in the table and as EventBridge events, in order
  const moves = [
    // action, actor, from_version, to_version, percent_bp: a rollout move records the arm A version and the candidate
    ['label', PIPELINE, undefined, 1, undefined],
    ['rollout-start', PIPELINE, 1, 2, 1000],
    ['rollout-step', CONTROLLER_ROLE, 1, 2, 5000],
    ['rollout-step', CONTROLLER_ROLE, 1, 2, 10_000],
    ['rollout-promote', CONTROLLER_ROLE, 1, 2, 10_000],
    ['rollout-start', PIPELINE, 2, 3, 1000],
    ['rollout-step', CONTROLLER_ROLE, 2, 3, 5000],
    ['rollout-abort', CONTROLLER_ROLE, 3, 2, 0],
  ];
  const shape = (r: Record<string, any>) => [r.action, r.actor, r.from_version, r.to_version, r.percent_bp];
  expect(aws.events.map((e) => shape(e.detail))).toEqual(moves);
  const records = await auditTrail();
  // (sorted by the writer's clock in the table, and the controller's ran minutes ahead: compared as a set)
  expect(records.map(shape).sort()).toEqual([...moves].sort());
  // the gate was asked before every move but the abort (which only returns to what was served)
  expect(aws.gateCalls.map((g) => [g.action, g.target, g.fromVersion, g.toVersion, g.percent])).toEqual([
    ['label', LABEL, undefined, 1, undefined], ['rollout-start', LABEL, 1, 2, 10], ['rollout-step', LABEL, 1, 2, 50], ['rollout-step', LABEL, 1, 2, 100],
    ['rollout-promote', LABEL, 1, 2, 100], ['rollout-start', LABEL, 2, 3, 10], ['rollout-step', LABEL, 2, 3, 50],
  ]);
  // nothing was lost on the way to the cache: no batch went to the event source mapping's on-failure destination
  expect(mapping.onFailure()).toEqual([]);
  expect(records.find((r) => r.action === 'rollout-abort')).toMatchObject({ target: LABEL, reason: `alarm '${ALARM}' is in ALARM` });
}, 120_000);

test('every reader ends cleanly: no rollout fault at all, and no failed table or cache read from the first rollout on', async () => {
  await stopReaders();
  for (const r of readers) {
    const during = r.polls.filter((p) => p.t >= writes[0].at);
    // [rolloutFaults, storeErrors, l2Errors] did not move between the first poll of the rollouts and the last
    expect({ name: r.name, first: during[0].e, last: during[during.length - 1].e }).toEqual({ name: r.name, first: during[0].e, last: during[0].e });
    expect({ name: r.name, rolloutFaults: during[0].e[0] }).toEqual({ name: r.name, rolloutFaults: 0 });
    expect(r.stats?.rolloutFaults ?? r.stats?.rollout_faults).toBe(0);
  }
}, 30_000);
