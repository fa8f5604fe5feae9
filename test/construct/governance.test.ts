import { App, CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { newServingTable, newStack } from './util';
import { PromptServingTable } from '../../src';

const TABLE_ARN = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsTable'), 'Arn'] };
const RELEASE_FN = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsGovernanceReleaseFunction'), 'Arn'] };

function withAlarm(stack: Stack): cloudwatch.Alarm {
  return new cloudwatch.Alarm(stack, 'CheckoutErrors', {
    alarmName: 'checkout-errors',
    metric: new cloudwatch.Metric({ namespace: 'Shop', metricName: 'Errors' }),
    threshold: 1,
    evaluationPeriods: 1,
  });
}

function gateFunction(stack: Stack): lambda.Function {
  return new lambda.Function(stack, 'Gate', { runtime: lambda.Runtime.NODEJS_22_X, handler: 'index.handler', code: lambda.Code.fromInline('exports.handler=async()=>({allow:true,reason:"ok"})') });
}

function envOf(template: Template, prefix: string): Record<string, any> {
  const fns = template.findResources('AWS::Lambda::Function');
  const ids = Object.keys(fns).filter((k) => k.startsWith(prefix));
  expect(ids).toHaveLength(1);
  return fns[ids[0]].Properties.Environment.Variables;
}

/** The function whose logical id starts with `prefix` has at least these environment variables (matchers allowed). */
function expectEnv(template: Template, prefix: string, variables: Record<string, unknown>): void {
  const fns = template.findResources('AWS::Lambda::Function');
  const ids = Object.keys(fns).filter((k) => k.startsWith(prefix));
  expect(ids).toHaveLength(1);
  Template.fromJSON({ Resources: { [ids[0]]: fns[ids[0]] } })
    .hasResourceProperties('AWS::Lambda::Function', { Environment: { Variables: Match.objectLike(variables) } });
}

describe('without governance', () => {
  test('no release path is created and grantRelease says how to turn it on', () => {
    // GIVEN
    const stack = newStack();
    const prompts = newServingTable(stack);
    const role = new iam.Role(stack, 'Pipeline', { assumedBy: new iam.AccountRootPrincipal() });
    // THEN
    Template.fromStack(stack).resourceCountIs('AWS::Lambda::Url', 0);
    expect(prompts.releaseFunction).toBeUndefined();
    expect(() => prompts.grantRelease(role)).toThrow('grantRelease needs the release path: set `governance` on the PromptServingTable (`governance: {}` for the defaults)');
  });
});

describe('release function', () => {
  test('sits behind a function URL with AWS_IAM auth, with table access limited to GetItem, Query, PutItem, DeleteItem and ConditionCheckItem', () => {
    // GIVEN
    const stack = newStack();
    newServingTable(stack, { governance: {} });
    const template = Template.fromStack(stack);
    // THEN
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'AWS_IAM', TargetFunctionArn: RELEASE_FN });
    template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: Match.stringLikeRegexp('^PromptsGovernanceReleaseRole') }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'], Resource: TABLE_ARN },
          {
            Effect: 'Allow',
            Action: 'events:PutEvents',
            Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':events:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':event-bus/default']] },
          },
        ]),
      },
    });
    expectEnv(template, 'PromptsGovernanceReleaseFunction', {
      PROMPT_SERVING_TABLE_NAME: { Ref: Match.stringLikeRegexp('^PromptsTable') },
      PROMPT_SERVING_GATE_TIMEOUT_MS: '10000',
      PROMPT_SERVING_ROLLOUT_ALARMS: '[]',
      PROMPT_SERVING_RELEASE_SCOPES: '[]',
    });
    // No TTL unless audit retention is asked for.
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', { TimeToLiveSpecification: Match.absent() });
  });

  test('grantRelease: InvokeFunctionUrl with the AWS_IAM condition and InvokeFunction only via the URL; no table action', () => {
    // GIVEN
    const stack = newStack();
    const prompts = newServingTable(stack, { governance: {} });
    const role = new iam.Role(stack, 'Pipeline', { assumedBy: new iam.AccountRootPrincipal() });
    // WHEN
    prompts.grantRelease(role);
    // THEN
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: Match.stringLikeRegexp('^Pipeline') }],
      PolicyDocument: {
        Statement: [
          { Effect: 'Allow', Action: 'lambda:InvokeFunctionUrl', Resource: RELEASE_FN, Condition: { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } } },
          { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: RELEASE_FN, Condition: { Bool: { 'lambda:InvokedViaFunctionUrl': true } } },
        ],
      },
    });
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p) => JSON.stringify(p.Properties.Roles).includes('Pipeline'))
      .flatMap((p) => p.Properties.PolicyDocument.Statement);
    expect(JSON.stringify(statements)).not.toContain('dynamodb:');
  });

  test('a grant scoped to labels is recorded in the release function\'s configuration by role ARN; unscoped grants as "*"', () => {
    // GIVEN
    const stack = newStack();
    const prompts = newServingTable(stack, { governance: {} });
    const pipeline = new iam.Role(stack, 'Pipeline', { assumedBy: new iam.AccountRootPrincipal() });
    const ops = new iam.User(stack, 'Ops');
    // WHEN
    prompts.grantRelease(pipeline, { labels: ['production', 'production'] });
    prompts.grantRelease(ops);
    // THEN
    const scopes = envOf(Template.fromStack(stack), 'PromptsGovernanceReleaseFunction').PROMPT_SERVING_RELEASE_SCOPES;
    expect(stack.resolve(scopes)).toEqual({
      'Fn::Join': ['', [
        '[{"principal":"', { 'Fn::GetAtt': [stack.getLogicalId(pipeline.node.defaultChild as CfnElement), 'Arn'] }, '","labels":["production"]},{"principal":"',
        { 'Fn::GetAtt': [stack.getLogicalId(ops.node.defaultChild as CfnElement), 'Arn'] }, '","labels":"*"}]',
      ]],
    });
  });

  test.each([
    ['a principal that is not a role or user', (_stack: Stack) => new iam.AccountPrincipal('111122223333'), /grantRelease with `labels` needs a grantee whose principal is an IAM role or user/],
    ['an invalid label name', (stack: Stack) => new iam.Role(stack, 'R', { assumedBy: new iam.AccountRootPrincipal() }), /`labels` of grantRelease: label name "Prod!" must match/],
    ['a reserved label name', (stack: Stack) => new iam.Role(stack, 'R', { assumedBy: new iam.AccountRootPrincipal() }), /label name 'current' is reserved/],
  ])('grantRelease with labels throws for %s', (name, grantee, message) => {
    // GIVEN
    const stack = newStack();
    const prompts = newServingTable(stack, { governance: {} });
    const labels = name.includes('reserved') ? ['current'] : name.includes('invalid') ? ['Prod!'] : ['production'];
    // THEN
    expect(() => prompts.grantRelease(grantee(stack), { labels })).toThrow(message);
  });

  test('activationGate: both governance functions may invoke it, and its ARN and timeout are in their configuration', () => {
    // GIVEN
    const stack = newStack();
    const gate = gateFunction(stack);
    newServingTable(stack, { governance: { activationGate: gate, activationGateTimeout: Duration.seconds(5) } });
    const template = Template.fromStack(stack);
    // THEN
    for (const role of ['PromptsGovernanceReleaseRole', 'PromptsGovernanceRolloutControllerRole']) {
      template.hasResourceProperties('AWS::IAM::Policy', {
        Roles: [{ Ref: Match.stringLikeRegexp(`^${role}`) }],
        PolicyDocument: { Statement: Match.arrayWith([{ Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: Match.arrayWith([{ 'Fn::GetAtt': [Match.stringLikeRegexp('^Gate'), 'Arn'] }]) }]) },
      });
    }
    expectEnv(template, 'PromptsGovernanceReleaseFunction', {
      PROMPT_SERVING_GATE_FUNCTION: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Gate'), 'Arn'] },
      PROMPT_SERVING_GATE_TIMEOUT_MS: '5000',
    });
    expect(envOf(template, 'PromptsSyncFunction').PROMPT_SERVING_GATE_SYNC).toBeUndefined();
  });

  test('with governance the sync may put audit events on the default bus; without it, not', () => {
    // GIVEN
    const governed = newStack();
    newServingTable(governed, { governance: {} });
    const plain = newStack();
    newServingTable(plain);
    // THEN
    Template.fromStack(governed).hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: Match.stringLikeRegexp('^PromptsSyncFunctionRole') }],
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Allow', Action: 'events:PutEvents' })]) },
    });
    expect(JSON.stringify(Template.fromStack(plain).toJSON())).not.toContain('events:PutEvents');
    expect(JSON.stringify(Template.fromStack(plain).toJSON())).not.toContain('PROMPT_SERVING_AUDIT');
  });

  test('gateSync: the sync asks the gate too; the sync always audits with its role as the actor', () => {
    // GIVEN
    const stack = newStack();
    const gate = gateFunction(stack);
    newServingTable(stack, { governance: { activationGate: gate, gateSync: true } });
    const template = Template.fromStack(stack);
    // THEN
    expectEnv(template, 'PromptsSyncFunction', {
      PROMPT_SERVING_AUDIT: 'true',
      PROMPT_SERVING_ACTOR_ARN: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsSyncFunctionRole'), 'Arn'] },
      PROMPT_SERVING_GATE_SYNC: 'true',
      PROMPT_SERVING_GATE_FUNCTION: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Gate'), 'Arn'] },
    });
  });

  test('auditRetention turns on the table\'s TTL on expires_at and tells the writers the retention in seconds', () => {
    // GIVEN
    const stack = newStack();
    newServingTable(stack, { governance: { auditRetention: Duration.days(90) } });
    const template = Template.fromStack(stack);
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', { TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true } });
    expect(envOf(template, 'PromptsGovernanceReleaseFunction').PROMPT_SERVING_AUDIT_RETENTION_SECONDS).toBe('7776000');
    expect(envOf(template, 'PromptsSyncFunction').PROMPT_SERVING_AUDIT_RETENTION_SECONDS).toBe('7776000');
  });

  test.each([
    [{ auditRetention: Duration.hours(1) }, '`auditRetention` must be at least 1 day, got 1 hour'],
    [{ activationGateTimeout: Duration.seconds(30) }, '`activationGateTimeout` must be from 1 second to 20 seconds, got 30 seconds'],
    [{ gateSync: true }, '`gateSync` needs an `activationGate` to ask; set one, or leave `gateSync` off'],
  ])('throws for %p', (governance, message) => {
    expect(() => newServingTable(newStack(), { governance })).toThrow(message);
  });
});

describe('rollout controller', () => {
  test('runs every minute, and at once on an ALARM state change of the watched alarms, which it may describe', () => {
    // GIVEN
    const stack = newStack();
    const alarm = withAlarm(stack);
    newServingTable(stack, { governance: { rolloutAlarms: [alarm] } });
    const template = Template.fromStack(stack);
    const controller = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsGovernanceRolloutControllerFunction'), 'Arn'] };
    // THEN
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 minute)', Targets: [Match.objectLike({ Arn: controller })] });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        'source': ['aws.cloudwatch'],
        'detail-type': ['CloudWatch Alarm State Change'],
        'resources': [{ 'Fn::GetAtt': [Match.stringLikeRegexp('^CheckoutErrors'), 'Arn'] }],
        'detail': { state: { value: ['ALARM'] } },
      },
      Targets: [Match.objectLike({ Arn: controller })],
    });
    template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: Match.stringLikeRegexp('^PromptsGovernanceRolloutControllerRole') }],
      PolicyDocument: { Statement: Match.arrayWith([{ Effect: 'Allow', Action: 'cloudwatch:DescribeAlarms', Resource: { 'Fn::GetAtt': [Match.stringLikeRegexp('^CheckoutErrors'), 'Arn'] } }]) },
    });
    expectEnv(template, 'PromptsGovernanceRolloutControllerFunction', {
      PROMPT_SERVING_ROLLOUT_ALARMS: { 'Fn::Join': ['', ['["', { Ref: Match.stringLikeRegexp('^CheckoutErrors') }, '"]']] },
      PROMPT_SERVING_ACTOR_ARN: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsGovernanceRolloutControllerRole'), 'Arn'] },
    });
  });

  test('without rollout alarms there is no alarm rule and no DescribeAlarms', () => {
    const template = Template.fromStack((() => { const s = newStack(); newServingTable(s, { governance: {} }); return s; })());
    expect(Object.values(template.findResources('AWS::Events::Rule')).filter((r) => r.Properties.EventPattern?.source?.[0] === 'aws.cloudwatch')).toEqual([]);
    expect(JSON.stringify(template.findResources('AWS::IAM::Policy'))).not.toContain('cloudwatch:DescribeAlarms');
  });
});

describe('cdk-nag', () => {
  test.each([['AwsSolutions', AwsSolutionsChecks], ['Serverless', ServerlessChecks]] as const)('%s finds nothing unacknowledged with governance, a gate and alarms', (_name, Checks) => {
    // GIVEN
    const app = new App();
    const stack = new Stack(app, 'Stack', { env: { account: '123456789012', region: 'eu-west-1' } });
    const prompts: PromptServingTable = newServingTable(stack, {
      governance: { activationGate: gateFunction(stack), gateSync: true, rolloutAlarms: [withAlarm(stack)], auditRetention: Duration.days(30) },
    });
    prompts.grantRelease(new iam.Role(stack, 'Pipeline', { assumedBy: new iam.AccountRootPrincipal() }), { labels: ['production'] });
    // WHEN
    const report = new Checks(app).validateScope(prompts);
    // THEN
    expect(report.violations).toEqual([]);
  });
});
