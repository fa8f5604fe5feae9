import { App, Stack, Validations } from 'aws-cdk-lib';
import * as bedrock from 'aws-cdk-lib/aws-bedrock';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { IConstruct } from 'constructs';
import { FIXTURE_PROMPTS } from './util';
import { PromptServingTable, PromptServingTableProps, PromptSource } from '../../src';

const ENV = { account: '123456789012', region: 'eu-west-1' };

function build(props: Partial<PromptServingTableProps>, env?: typeof ENV): { app: App; stack: Stack; prompts: PromptServingTable } {
  const app = new App();
  const stack = new Stack(app, 'Stack', { env });
  const prompts = new PromptServingTable(stack, 'Prompts', { source: PromptSource.bedrock(), ...props });
  return { app, stack, prompts };
}

/** Every acknowledgement recorded in the tree: construct path, rule id, reason. */
function acknowledgements(root: IConstruct): Array<{ path: string; id: string; reason: string }> {
  return root.node.findAll().flatMap((construct) => construct.node.metadata
    .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
    .flatMap((entry) => Object.entries(entry.data as Record<string, string>)
      .map(([id, reason]) => ({ path: construct.node.path, id: id.replace(/^annotation::/i, ''), reason }))));
}

describe('cdk-nag AwsSolutionsChecks', () => {
  test.each<[string, () => Partial<PromptServingTableProps>, typeof ENV | undefined]>([
    ['the defaults, environment-agnostic', () => ({}), undefined],
    ['the defaults, in a fixed environment', () => ({}), ENV],
    ['a Bedrock source scoped to prompt ids', () => ({ source: PromptSource.bedrock({ promptIds: ['PROMPT0001', 'PROMPT0002'] }) }), ENV],
    ['a directory source with a dashboard', () => ({ source: PromptSource.fromDirectory(FIXTURE_PROMPTS), createDashboard: true }), undefined],
    ['provisioned billing', () => ({
      billing: dynamodb.Billing.provisioned({
        readCapacity: dynamodb.Capacity.fixed(5),
        writeCapacity: dynamodb.Capacity.autoscaled({ maxCapacity: 10 }),
      }),
    }), undefined],
  ])('finds nothing unacknowledged with %s', (_, props, env) => {
    // GIVEN
    const { app, stack } = build(props(), env);
    // WHEN
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    // THEN
    expect(report.violations).toEqual([]);
    expect(report.success).toBe(true);
  });

  test('finds nothing unacknowledged with a customer managed key', () => {
    // GIVEN
    const app = new App();
    const stack = new Stack(app, 'Stack', { env: ENV });
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
    new PromptServingTable(stack, 'Prompts', { source: PromptSource.bedrock(), encryptionKey: key });
    // WHEN
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    // THEN
    expect(report.violations).toEqual([]);
  });

  test('finds nothing unacknowledged with prompt ids known only at deploy time', () => {
    // GIVEN
    const app = new App();
    const stack = new Stack(app, 'Stack');
    const prompt = new bedrock.CfnPrompt(stack, 'Prompt', { name: 'greeting' });
    new PromptServingTable(stack, 'Prompts', { source: PromptSource.bedrock({ promptIds: [prompt.attrId] }) });
    // WHEN
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    // THEN
    expect(report.violations).toEqual([]);
  });

  test('acknowledges exactly the deliberate findings, each with its reason in words', () => {
    // GIVEN
    const { stack } = build({}, ENV);
    // WHEN
    const acks = acknowledgements(stack);
    // THEN
    expect(acks.map(({ path, id }) => ({ path, id }))).toEqual([
      { path: 'Stack/Prompts/DeadLetterQueue', id: 'AwsSolutions-SQS3' },
      { path: 'Stack/Prompts/DeadLetterQueue', id: 'Serverless-SQSRedrivePolicy' },
      { path: 'Stack/Prompts/SyncFunction', id: 'AwsSolutions-L1' },
      { path: 'Stack/Prompts/SyncFunction', id: 'Serverless-LambdaLatestVersion' },
      { path: 'Stack/Prompts/SyncFunction', id: 'Serverless-LambdaDLQ' },
      { path: 'Stack/Prompts/SyncFunction', id: 'Serverless-LambdaTracing' },
      { path: 'Stack/Prompts/SourceReadPolicy', id: 'AwsSolutions-IAM5[Resource::*]' },
      {
        path: 'Stack/Prompts/SourceReadPolicy',
        id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:eu-west-1:123456789012:prompt/*]',
      },
    ]);
    for (const { reason } of acks) {
      expect(reason.split(' ').length).toBeGreaterThanOrEqual(12);
    }
  });

  test('a wildcard added to the sync function\'s role later is still reported', () => {
    // GIVEN
    const { app, stack, prompts } = build({});
    // WHEN
    prompts.syncFunction.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: ['*'] }));
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    // THEN
    expect(report.violations.map((violation) => violation.ruleName)).toEqual(['AwsSolutions-IAM5[Resource::*]']);
    expect(report.violations[0].violatingResources.map((resource) => resource.constructPath))
      .toEqual(['Stack/Prompts/SyncFunctionRole/DefaultPolicy/Resource']);
  });
});

describe('cdk-nag ServerlessChecks', () => {
  test.each<[string, () => Partial<PromptServingTableProps>, typeof ENV | undefined]>([
    ['the defaults, environment-agnostic', () => ({}), undefined],
    ['the defaults, in a fixed environment', () => ({}), ENV],
    ['a directory source with a dashboard', () => ({ source: PromptSource.fromDirectory(FIXTURE_PROMPTS), createDashboard: true }), undefined],
    ['active tracing', () => ({ syncTracing: lambda.Tracing.ACTIVE }), ENV],
  ])('finds nothing unacknowledged with %s (and AwsSolutions neither)', (_, props, env) => {
    // GIVEN
    const { app, stack } = build(props(), env);
    // WHEN
    const serverless = new ServerlessChecks(app).validateScope(stack);
    const solutions = new AwsSolutionsChecks(app).validateScope(stack);
    // THEN
    expect(serverless.violations).toEqual([]);
    expect(solutions.violations).toEqual([]);
  });

  test('with active tracing, the tracing finding is not acknowledged (it does not arise) and X-Ray\'s wildcard is', () => {
    // GIVEN
    const { stack } = build({ syncTracing: lambda.Tracing.ACTIVE }, ENV);
    // WHEN
    const ids = acknowledgements(stack).map(({ path, id }) => `${path} ${id}`);
    // THEN
    expect(ids).not.toContain('Stack/Prompts/SyncFunction Serverless-LambdaTracing');
    expect(ids).toContain('Stack/Prompts/SyncFunctionRole AwsSolutions-IAM5[Resource::*]');
  });

  test('an app-level wildcard added later is still reported by AwsSolutions even with active tracing', () => {
    // GIVEN
    const { app, stack, prompts } = build({ syncTracing: lambda.Tracing.ACTIVE }, ENV);
    // WHEN
    prompts.syncFunction.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::bucket/*'] }));
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    // THEN
    expect(report.violations.map((violation) => violation.ruleName)).toEqual(['AwsSolutions-IAM5[Resource::arn:aws:s3:::bucket/*]']);
  });
});
