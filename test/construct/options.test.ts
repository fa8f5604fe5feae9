import { Duration, RemovalPolicy, Size } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { newServingTable, newStack, synth } from './util';
import { PromptSource, PromptVersionSelection } from '../../src';

describe('table options', () => {
  test('tableName names the table', () => {
    // WHEN
    const template = synth({ tableName: 'prompts-prod' });
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', { TableName: 'prompts-prod' });
  });

  test('billing takes provisioned capacity with auto scaling', () => {
    // WHEN
    const template = synth({
      billing: dynamodb.Billing.provisioned({
        readCapacity: dynamodb.Capacity.fixed(10),
        writeCapacity: dynamodb.Capacity.autoscaled({ maxCapacity: 20 }),
      }),
    });
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      BillingMode: 'PROVISIONED',
      WriteProvisionedThroughputSettings: {
        WriteCapacityAutoScalingSettings: Match.objectLike({ MaxCapacity: 20 }),
      },
      Replicas: [Match.objectLike({ ReadProvisionedThroughputSettings: { ReadCapacityUnits: 10 } })],
    });
  });

  test('pointInTimeRecovery: false turns it off', () => {
    // WHEN
    const template = synth({ pointInTimeRecovery: false });
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      Replicas: [Match.objectLike({ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: false } })],
    });
  });

  test('deletionProtection: false turns it off', () => {
    // WHEN
    const template = synth({ deletionProtection: false });
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      Replicas: [Match.objectLike({ DeletionProtectionEnabled: false })],
    });
  });

  test('removalPolicy DESTROY deletes the table with the stack', () => {
    // WHEN
    const template = synth({ removalPolicy: RemovalPolicy.DESTROY, deletionProtection: false });
    // THEN
    template.hasResource('AWS::DynamoDB::GlobalTable', { DeletionPolicy: 'Delete' });
  });

  test('encryptionKey encrypts the table with that key and lets the sync use it', () => {
    // GIVEN
    const stack = newStack();
    const key = new kms.Key(stack, 'Key');
    // WHEN
    newServingTable(stack, { encryptionKey: key });
    // THEN
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
      Replicas: [Match.objectLike({
        SSESpecification: { KMSMasterKeyId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Key'), 'Arn'] } },
      })],
    });
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyName: Match.stringLikeRegexp('^PromptsSyncFunctionRoleDefaultPolicy'),
      PolicyDocument: {
        Statement: Match.arrayWith([{
          Effect: 'Allow',
          Action: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
          Resource: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Key'), 'Arn'] },
        }]),
      },
    });
  });
});

describe('sync options', () => {
  test('syncSchedule sets the reconcile rate', () => {
    // WHEN
    const template = synth({ syncSchedule: Duration.hours(1) });
    // THEN
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 hour)' });
  });

  test('syncOnSourceChange: false leaves out the CloudTrail rule', () => {
    // WHEN
    const template = synth({ syncOnSourceChange: false });
    // THEN
    template.resourceCountIs('AWS::Events::Rule', 1);
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: Match.anyValue(), EventPattern: Match.absent() });
  });

  test('syncOnDeploy: false leaves out the deploy-time sync', () => {
    // WHEN
    const template = synth({ syncOnDeploy: false });
    // THEN
    template.resourceCountIs('Custom::PromptSync', 0);
  });

  test('syncTimeout sets the function timeout and how long CloudFormation waits for the deploy-time sync', () => {
    // WHEN
    const template = synth({ syncTimeout: Duration.minutes(5) });
    // THEN
    template.hasResourceProperties('AWS::Lambda::Function', { Timeout: 300 });
    template.hasResourceProperties('Custom::PromptSync', { ServiceTimeout: '1200' });
  });

  test('the longest deploy-time wait stays within CloudFormation\'s hour', () => {
    // WHEN
    const template = synth({ syncTimeout: Duration.minutes(15), syncRetryAttempts: 2 });
    // THEN
    template.hasResourceProperties('Custom::PromptSync', { ServiceTimeout: '3000' });
  });

  test('syncMemorySize sets the function memory', () => {
    // WHEN
    const template = synth({ syncMemorySize: Size.gibibytes(1) });
    // THEN
    template.hasResourceProperties('AWS::Lambda::Function', { MemorySize: 1024 });
  });

  test('syncTracing ACTIVE turns on X-Ray for the sync function and lets it write traces', () => {
    // WHEN
    const template = synth({ syncTracing: lambda.Tracing.ACTIVE });
    // THEN
    template.hasResourceProperties('AWS::Lambda::Function', { Handler: 'index.handler', TracingConfig: { Mode: 'Active' } });
    template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: Match.stringLikeRegexp('^PromptsSyncFunctionRole') }],
      PolicyDocument: { Statement: Match.arrayWith([{ Effect: 'Allow', Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], Resource: '*' }]) },
    });
  });

  test('syncLogRetention sets the log retention', () => {
    // WHEN
    const template = synth({ syncLogRetention: logs.RetentionDays.ONE_WEEK });
    // THEN
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 7 });
  });

  test('syncRetryAttempts applies to Lambda and EventBridge retries alike', () => {
    // WHEN
    const template = synth({ syncRetryAttempts: 0 });
    // THEN
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { MaximumRetryAttempts: 0 });
    template.allResourcesProperties('AWS::Events::Rule', {
      Targets: [Match.objectLike({ RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 3600 } })],
    });
    template.hasResourceProperties('Custom::PromptSync', { ServiceTimeout: '900' });
  });

  test('metricsNamespace reaches the sync function and the alarms', () => {
    // WHEN
    const template = synth({ metricsNamespace: 'Team/Prompts' });
    // THEN
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ PROMPT_SERVING_METRICS_NAMESPACE: 'Team/Prompts' }) },
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'Team/Prompts', MetricName: 'FullSyncSucceeded' });
  });
});

describe('Bedrock source options', () => {
  test('are passed to the sync function and the deploy-time sync', () => {
    // WHEN
    const template = synth({
      source: PromptSource.bedrock({
        promptIds: ['PROMPT0001', 'PROMPT0002', 'PROMPT0001'],
        promptVersion: PromptVersionSelection.DRAFT,
        maxRequestsPerSecond: 2.5,
      }),
    });
    // THEN
    const options = '{"version":"DRAFT","promptIds":["PROMPT0001","PROMPT0002"],"maxRequestsPerSecond":2.5}';
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ PROMPT_SERVING_SOURCE_OPTIONS: options }) },
    });
    template.hasResourceProperties('Custom::PromptSync', { SourceOptions: options });
  });

  test('without promptIds, the sync may list every prompt and read any of them', () => {
    // WHEN
    const template = synth();
    // THEN
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyName: Match.stringLikeRegexp('^PromptsSourceReadPolicy'),
      PolicyDocument: {
        Statement: [
          { Effect: 'Allow', Action: 'bedrock:ListPrompts', Resource: '*' },
          {
            Effect: 'Allow',
            Action: 'bedrock:GetPrompt',
            Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':bedrock:eu-west-1:123456789012:prompt/*']] },
          },
        ],
      },
    });
  });

  test('with promptIds, GetPrompt is scoped to those prompts and their versions', () => {
    // WHEN
    const template = synth({ source: PromptSource.bedrock({ promptIds: ['PROMPT0001'] }) });
    // THEN
    const arn = (suffix: string) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:bedrock:eu-west-1:123456789012:prompt/${suffix}`]] });
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyName: Match.stringLikeRegexp('^PromptsSourceReadPolicy'),
      PolicyDocument: {
        Statement: [
          { Effect: 'Allow', Action: 'bedrock:ListPrompts', Resource: '*' },
          { Effect: 'Allow', Action: 'bedrock:GetPrompt', Resource: [arn('PROMPT0001'), arn('PROMPT0001:*')] },
        ],
      },
    });
  });

  test('the function is created after the source policy, so the deploy-time sync can read Bedrock', () => {
    // WHEN
    const template = synth();
    // THEN
    template.hasResource('AWS::Lambda::Function', {
      DependsOn: Match.arrayWith([Match.stringLikeRegexp('^PromptsSourceReadPolicy')]),
    });
  });
});
