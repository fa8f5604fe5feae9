/**
 * The release function as deployed (its staged asset alone, the construct's environment) when a dependency accepts
 * connections and never answers: EventBridge, the activation gate, the table. It answers within its deadline, and
 * a move retried with its client token after a timeout never moves twice.
 */
import * as net from 'node:net';
import { GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { Duration, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsStandIns } from './aws-stand-ins';
import { PromptServingTable, PromptSource } from '../../src';
import { PARTITION_KEY, SORT_KEY, labelSortKey } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { fullSync, useServingTable, writePrompt } from '../admin/fixture';
import { DeployedProcess, startFunction, SynthesizedApp, synthesize } from '../support/as-deployed';
import { localEndpoint } from '../support/table';

jest.setTimeout(60_000);

const table = useServingTable();
const aws = new AwsStandIns();
let synth: SynthesizedApp;
let silent: SilentServer;
const started: DeployedProcess[] = [];
const PIPELINE = 'arn:aws:sts::111122223333:assumed-role/ReleasePipeline/build-9';
/** The release function's timeout (30 s) is what its caller can wait at most; it must answer well before. */
const FUNCTION_TIMEOUT_MS = 30_000;

interface SilentServer { readonly endpoint: string; readonly accepted: number; close(): Promise<void> }

/** A TCP server on loopback that accepts every connection and never answers (a dependency that hangs). */
async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    get accepted() { return accepted; },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

beforeAll(async () => {
  await aws.start();
  silent = await startSilentServer();
  synth = synthesize((app) => {
    const stack = new Stack(app, 'Governed', { env: { account: '111122223333', region: 'us-east-1' } });
    const gate = lambda.Function.fromFunctionArn(stack, 'Gate', 'arn:aws:lambda:us-east-1:111122223333:function:gate');
    const prompts = new PromptServingTable(stack, 'Prompts', {
      source: PromptSource.bedrock(), governance: { activationGate: gate, activationGateTimeout: Duration.seconds(3) },
    });
    prompts.grantRelease(new iam.Role(stack, 'Pipeline', { assumedBy: new iam.AccountRootPrincipal(), roleName: 'ReleasePipeline' }));
  });
});
afterAll(async () => {
  for (const p of started) await p.stop();
  synth?.cleanup();
  await silent?.close();
  await aws.stop();
});
beforeEach(() => aws.reset());

/** The release function, with each of its dependencies at the stand-ins, or at the silent server when named. */
async function release(silentOn: { events?: boolean; gate?: boolean; table?: boolean } = {}): Promise<DeployedProcess> {
  const proc = await startFunction(synth.fn('PromptsGovernanceReleaseFunction'), {
    refs: (logicalId, attribute) => {
      if (logicalId.startsWith('PromptsTable')) return attribute === undefined ? table.tableName : undefined;
      if (logicalId.startsWith('Pipeline')) return 'arn:aws:iam::111122223333:role/ReleasePipeline';
      return undefined;
    },
    extraEnv: {
      AWS_ENDPOINT_URL_DYNAMODB: silentOn.table ? silent.endpoint : localEndpoint(),
      AWS_ENDPOINT_URL_LAMBDA: silentOn.gate ? silent.endpoint : aws.endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: silentOn.events ? silent.endpoint : aws.endpoint,
    },
  });
  started.push(proc);
  return proc;
}

const urlEvent = (body: unknown) => ({
  version: '2.0',
  rawPath: '/',
  body: JSON.stringify(body),
  isBase64Encoded: false,
  requestContext: { http: { method: 'POST' }, authorizer: { iam: { userArn: PIPELINE, accountId: '111122223333' } } },
});

/** Invokes and measures: the answer's status, body and how long it took. */
async function timed(fn: DeployedProcess, body: unknown): Promise<{ status: number; body: any; ms: number }> {
  const t0 = Date.now();
  const out = await fn.invoke<any>(urlEvent(body));
  expect(out).toMatchObject({ missing: [], violations: [] });
  return { status: out.result.statusCode, body: JSON.parse(out.result.body), ms: Date.now() - t0 };
}

async function auditActions(promptId: string): Promise<string[]> {
  const out = await table.client.send(new QueryCommand({
    TableName: table.tableName,
    KeyConditionExpression: '#pk = :p AND begins_with(#sk, :a)',
    ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
    ExpressionAttributeValues: { ':p': { S: promptId }, ':a': { S: 'AUDIT#' } },
    ConsistentRead: true,
  }));
  return (out.Items ?? []).map((i) => String(fromItem(i).action));
}

async function readLabel(_fx: unknown, promptId: string, label: string): Promise<Record<string, any> | undefined> {
  const out = await table.client.send(new GetItemCommand({
    TableName: table.tableName, ConsistentRead: true, Key: { [PARTITION_KEY]: { S: promptId }, [SORT_KEY]: { S: labelSortKey(label) } },
  }));
  return out.Item && fromItem(out.Item);
}

async function rolloutOn(promptId: string, label: string): Promise<number | undefined> {
  return (await readLabel(table, promptId, label))?.rollout?.percent_bp;
}

test('with EventBridge silent, a committed step answers in time, and its retry with the same client token moves nothing', async () => {
  // GIVEN: production on v1, a rollout of v2 at 10 % with steps 50 and 100
  writePrompt(table, 'greeting', 'A');
  await fullSync(table);
  writePrompt(table, 'greeting', 'B');
  await fullSync(table);
  const fn = await release({ events: true });
  expect((await timed(fn, { action: 'set-label', promptId: 'greeting', label: 'production', version: 1 })).status).toBe(200);
  expect((await timed(fn, { action: 'rollout-start', promptId: 'greeting', label: 'production', version: 2, percent: 10, steps: [50, 100] })).status).toBe(200);
  // WHEN: "next step", then the same intent retried (the caller did not see the answer)
  const step = { action: 'rollout-step', promptId: 'greeting', label: 'production', clientToken: 'step-intent-1' };
  const first = await timed(fn, step);
  const retry = await timed(fn, step);
  // THEN: the first answers well within the function's timeout, reporting the event as best-effort
  expect(first.status).toBe(200);
  expect(first.ms).toBeLessThan(FUNCTION_TIMEOUT_MS / 3);
  expect(first.body.result).toMatchObject({ action: 'rollout-step', percent: 50, changed: true, auditEvent: 'failed' });
  expect(first.body.result.replayed).toBeUndefined();
  // ... and the retry answers that move, moving nothing: still 50 %, one rollout-step record
  expect(retry.status).toBe(200);
  expect(retry.body.result).toMatchObject({ action: 'rollout-step', percent: 50, changed: true, replayed: true, at: first.body.result.at });
  expect(await rolloutOn('greeting', 'production')).toBe(5000);
  expect((await auditActions('greeting')).filter((a) => a === 'rollout-step')).toHaveLength(1);
  expect(silent.accepted).toBeGreaterThan(0);
  // A new intent (a new token) does step again.
  const next = await timed(fn, { ...step, clientToken: 'step-intent-2' });
  expect(next.body.result).toMatchObject({ percent: 100, changed: true });
});

test('a client token reused for another request by the same caller is refused, naming it', async () => {
  // GIVEN
  writePrompt(table, 'greeting', 'A');
  await fullSync(table);
  const fn = await release();
  expect((await timed(fn, { action: 'set-label', promptId: 'greeting', label: 'production', version: 1, clientToken: 'intent-1' })).status).toBe(200);
  // WHEN
  const reused = await timed(fn, { action: 'set-label', promptId: 'greeting', label: 'staging', version: 1, clientToken: 'intent-1' });
  // THEN
  expect(reused.status).toBe(422);
  expect(reused.body.error).toMatchObject({ code: 'ClientTokenReused', detail: { clientToken: 'intent-1' } });
  expect(await readLabel(table, 'greeting', 'staging')).toBeUndefined();
});

test('with the gate silent, a move is denied (fail closed) within the gate timeout, audited, and nothing moves', async () => {
  // GIVEN
  writePrompt(table, 'greeting', 'A');
  await fullSync(table);
  const fn = await release({ gate: true });
  // WHEN
  const answer = await timed(fn, { action: 'set-label', promptId: 'greeting', label: 'production', version: 1, clientToken: 'gate-intent' });
  // THEN
  expect(answer.status).toBe(403);
  expect(answer.body.error).toMatchObject({ code: 'GateDenied', detail: { reason: expect.stringMatching(/did not answer within 3000 ms/) } });
  expect(answer.ms).toBeLessThan(3_000 + 5_000);
  expect(await readLabel(table, 'greeting', 'production')).toBeUndefined();
  expect(await auditActions('greeting')).toContain('gate-deny');
});

test('with the table silent, the function answers DeadlineExceeded, saying nothing moved, within its deadline', async () => {
  // GIVEN
  const fn = await release({ table: true });
  // WHEN
  const answer = await timed(fn, { action: 'rollout-step', promptId: 'greeting', label: 'production', clientToken: 'table-intent' });
  // THEN
  expect(answer.status).toBe(504);
  expect(answer.body.error).toMatchObject({ code: 'DeadlineExceeded', detail: { committed: 'no' } });
  expect(answer.ms).toBeLessThan(FUNCTION_TIMEOUT_MS / 3);
});
