/**
 * The release function and the rollout controller as deployed: each runs from its staged asset ALONE (the
 * as-deployed harness: nothing resolvable but the asset and the runtime's AWS SDK), with the environment the
 * construct gave it, against DynamoDB Local and the local Lambda / EventBridge / CloudWatch stand-ins.
 */
import { Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsStandIns } from './aws-stand-ins';
import { PromptServingTable, PromptSource } from '../../src';
import { fullSync, useServingTable, writePrompt } from '../admin/fixture';
import { DeployedProcess, startFunction, SynthesizedApp, synthesize } from '../support/as-deployed';
import { localEndpoint } from '../support/table';

const table = useServingTable();
const aws = new AwsStandIns();
let synth: SynthesizedApp;
const started: DeployedProcess[] = [];
const PIPELINE_ROLE = 'arn:aws:iam::111122223333:role/ReleasePipeline';
const CONTROLLER_ROLE = 'arn:aws:iam::111122223333:role/RolloutController';

beforeAll(async () => {
  await aws.start();
  synth = synthesize((app) => {
    const stack = new Stack(app, 'Governed', { env: { account: '111122223333', region: 'us-east-1' } });
    const gate = lambda.Function.fromFunctionArn(stack, 'Gate', 'arn:aws:lambda:us-east-1:111122223333:function:gate');
    const alarm = new cloudwatch.Alarm(stack, 'CheckoutErrors', {
      alarmName: 'checkout-errors', metric: new cloudwatch.Metric({ namespace: 'Shop', metricName: 'Errors' }), threshold: 1, evaluationPeriods: 1,
    });
    const prompts = new PromptServingTable(stack, 'Prompts', {
      source: PromptSource.bedrock(), governance: { activationGate: gate, rolloutAlarms: [alarm] },
    });
    prompts.grantRelease(new iam.Role(stack, 'Pipeline', { assumedBy: new iam.AccountRootPrincipal(), roleName: 'ReleasePipeline' }), { labels: ['production'] });
  });
});
afterAll(async () => {
  for (const p of started) await p.stop();
  synth?.cleanup();
  await aws.stop();
});
beforeEach(() => aws.reset());

async function start(prefix: string): Promise<DeployedProcess> {
  const fn = synth.fn(prefix);
  const proc = await startFunction(fn, {
    refs: (logicalId, attribute) => {
      if (logicalId.startsWith('PromptsTable')) return attribute === undefined ? table.tableName : undefined;
      if (logicalId.startsWith('CheckoutErrors')) return 'checkout-errors';
      if (logicalId.startsWith('Pipeline')) return PIPELINE_ROLE;
      if (logicalId.startsWith('PromptsGovernanceRolloutControllerRole')) return CONTROLLER_ROLE;
      return undefined;
    },
    extraEnv: {
      AWS_ENDPOINT_URL_DYNAMODB: localEndpoint(),
      AWS_ENDPOINT_URL_LAMBDA: aws.endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: aws.endpoint,
      AWS_ENDPOINT_URL_CLOUDWATCH: aws.endpoint,
    },
  });
  started.push(proc);
  return proc;
}

const urlEvent = (callerArn: string, body: unknown) => ({
  version: '2.0',
  rawPath: '/',
  body: Buffer.from(JSON.stringify(body)).toString('base64'),
  isBase64Encoded: true,
  requestContext: { http: { method: 'POST' }, authorizer: { iam: { userArn: callerArn, accountId: '111122223333' } } },
});

test('the release function, from its asset alone: grants enforced, the gate asked, the move and its audit event made', async () => {
  // GIVEN
  writePrompt(table, 'greeting', 'Hello');
  await fullSync(table);
  const release = await start('PromptsGovernanceReleaseFunction');
  const pipeline = 'arn:aws:sts::111122223333:assumed-role/ReleasePipeline/build-7';
  // WHEN
  const moved = await release.invoke<any>(urlEvent(pipeline, { action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }));
  const refused = await release.invoke<any>(urlEvent(pipeline, { action: 'set-label', promptId: 'greeting', label: 'staging', version: 1 }));
  const noCaller = await release.invoke<any>({ body: '{}', requestContext: { http: { method: 'POST' } } });
  // THEN
  for (const r of [moved, refused, noCaller]) expect(r).toMatchObject({ missing: [], violations: [] });
  expect(moved.result.statusCode).toBe(200);
  expect(JSON.parse(moved.result.body).result).toMatchObject({ target: 'production', toVersion: 1, changed: true });
  expect(refused.result.statusCode).toBe(403);
  expect(JSON.parse(refused.result.body).error).toEqual({ code: 'Forbidden', message: `${pipeline} may move only the labels it was granted (production), not 'staging'` });
  expect(noCaller.result.statusCode).toBe(403);
  expect(aws.gateCalls).toEqual([expect.objectContaining({ promptId: 'greeting', target: 'production', toVersion: 1 })]);
  expect(aws.events).toEqual([expect.objectContaining({ Source: 'cdk-prompt-serving', detail: expect.objectContaining({ action: 'label', actor: pipeline }) })]);
});

test('the rollout controller, from its asset alone: a CloudWatch "Alarm State Change" event to ALARM aborts the rollout naming it', async () => {
  // GIVEN
  writePrompt(table, 'greeting', 'A');
  await fullSync(table);
  writePrompt(table, 'greeting', 'B');
  await fullSync(table);
  const release = await start('PromptsGovernanceReleaseFunction');
  const operator = 'arn:aws:sts::111122223333:assumed-role/Operator/alice';
  const pipeline = 'arn:aws:sts::111122223333:assumed-role/ReleasePipeline/build-8';
  await release.invoke(urlEvent(pipeline, { action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }));
  const startAnswer = await release.invoke<any>(urlEvent(pipeline, {
    action: 'rollout-start', promptId: 'greeting', label: 'production', version: 2, percent: 10, alarms: ['checkout-errors'],
  }));
  expect(startAnswer.result.statusCode).toBe(200);
  const unknownAlarm = await release.invoke<any>(urlEvent(operator, {
    action: 'rollout-start', promptId: 'greeting', label: 'staging', version: 2, percent: 10, alarms: ['not-watched'],
  }));
  const controller = await start('PromptsGovernanceRolloutControllerFunction');
  // WHEN: the event as EventBridge delivers it (CloudWatch "Alarm State Change").
  const aborted = await controller.invoke<any>({
    'version': '0',
    'id': 'c4c1c1c9-6542-e61b-6ef0-8c4d36933a92',
    'detail-type': 'CloudWatch Alarm State Change',
    'source': 'aws.cloudwatch',
    'account': '111122223333',
    'time': '2026-12-01T18:05:00Z',
    'region': 'us-east-1',
    'resources': ['arn:aws:cloudwatch:us-east-1:111122223333:alarm:checkout-errors'],
    'detail': {
      alarmName: 'checkout-errors',
      state: { value: 'ALARM', reason: 'Threshold Crossed: 1 datapoint [3.0] was greater than the threshold (1.0).', timestamp: '2026-12-01T18:05:00.000+0000' },
      previousState: { value: 'OK', timestamp: '2026-12-01T17:00:00.000+0000' },
      configuration: { metrics: [] },
    },
  });
  // THEN
  expect(unknownAlarm.result.statusCode).toBe(400);
  expect(JSON.parse(unknownAlarm.result.body).error.message).toMatch(/unknown alarm 'not-watched'.*\(checkout-errors\)/);
  expect(aborted).toMatchObject({ missing: [], violations: [] });
  expect(aborted.result.actions).toEqual([expect.objectContaining({ promptId: 'greeting', label: 'production', outcome: 'aborted', detail: 'checkout-errors' })]);
  expect(aws.events.map((e) => [e.detail.action, e.detail.actor])).toEqual([
    ['label', pipeline], ['rollout-start', pipeline], ['rollout-abort', CONTROLLER_ROLE],
  ]);
  // The scheduled pass finds nothing left to do.
  expect((await controller.invoke<any>({ 'detail-type': 'Scheduled Event', 'source': 'aws.events' })).result).toEqual({ actions: [] });
});
