import { Match, Template } from 'aws-cdk-lib/assertions';
import { onlyResource, synth } from './util';

describe('PromptServingTable with only a Bedrock source', () => {
  let template: Template;
  beforeAll(() => {
    // GIVEN / WHEN
    template = synth();
  });

  test('creates one table keyed prompt_id (HASH, S) and version (RANGE, S)', () => {
    // THEN
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 1);
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      KeySchema: [
        { AttributeName: 'prompt_id', KeyType: 'HASH' },
        { AttributeName: 'version', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'prompt_id', AttributeType: 'S' },
        { AttributeName: 'version', AttributeType: 'S' },
      ],
    });
  });

  test('bills the table on demand', () => {
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      BillingMode: 'PAY_PER_REQUEST',
      WriteProvisionedThroughputSettings: Match.absent(),
    });
  });

  test('turns point-in-time recovery and deletion protection on', () => {
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      Replicas: [Match.objectLike({
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
      })],
    });
  });

  test('retains the table when it leaves the stack', () => {
    // THEN
    template.hasResource('AWS::DynamoDB::GlobalTable', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });

  test('encrypts with an AWS owned key', () => {
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', { SSESpecification: Match.absent() });
  });

  test('has no stream', () => {
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', { StreamSpecification: Match.absent() });
  });

  test('runs the sync function on Node.js 22 or newer', () => {
    // WHEN
    const runtime: string = onlyResource(template, 'AWS::Lambda::Function').Properties.Runtime;
    // THEN
    expect(runtime).toMatch(/^nodejs\d+\.x$/);
    expect(Number(/\d+/.exec(runtime)![0])).toBeGreaterThanOrEqual(22);
  });

  test('gives the sync function its table, source and metrics namespace', () => {
    // THEN
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          PROMPT_SERVING_TABLE_NAME: { Ref: Match.stringLikeRegexp('^PromptsTable') },
          PROMPT_SERVING_SOURCE: 'bedrock',
          PROMPT_SERVING_SOURCE_OPTIONS: '{"version":"LATEST","maxRequestsPerSecond":5}',
          PROMPT_SERVING_METRICS_NAMESPACE: 'CdkPromptServing',
        }),
      },
    });
  });

  test('sizes the sync function at 512 MiB and 10 minutes', () => {
    // THEN
    template.hasResourceProperties('AWS::Lambda::Function', { MemorySize: 512, Timeout: 600 });
  });

  test('logs the sync function to its own log group kept for a month', () => {
    // THEN
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    template.hasResourceProperties('AWS::Lambda::Function', {
      LoggingConfig: { LogGroup: { Ref: Match.stringLikeRegexp('^PromptsSyncFunctionLogs') } },
    });
  });

  test('gives the sync function a role of its own with no managed policies', () => {
    // THEN
    template.resourceCountIs('AWS::IAM::Role', 1);
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: Match.objectLike({
        Statement: [Match.objectLike({ Principal: { Service: 'lambda.amazonaws.com' } })],
      }),
      ManagedPolicyArns: Match.absent(),
    });
  });

  test('lets the sync function make exactly the DynamoDB calls the engine makes, on the table only', () => {
    // THEN
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([{
          Effect: 'Allow',
          Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:Scan', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          Resource: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsTable'), 'Arn'] },
        }]),
      },
    });
  });

  test('retries a failed sync twice within an hour, then dead-letters it', () => {
    // THEN
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      MaximumRetryAttempts: 2,
      MaximumEventAgeInSeconds: 3600,
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsDeadLetterQueue'), 'Arn'] } } },
    });
    template.hasResourceProperties('AWS::Lambda::Function', { DeadLetterConfig: Match.absent() });
  });

  test('runs the sync function on arm64, without X-Ray tracing', () => {
    // THEN
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Architectures: ['arm64'],
      TracingConfig: Match.absent(),
    });
  });

  test('creates an encrypted, TLS-only dead-letter queue keeping messages 14 days', () => {
    // THEN
    template.resourceCountIs('AWS::SQS::Queue', 1);
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 1_209_600 });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({
          Effect: 'Deny',
          Action: 'sqs:*',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        })]),
      },
    });
  });

  test('schedules a full sync every 15 minutes, dead-lettering undeliverable events', () => {
    // THEN
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(15 minutes)',
      Targets: [Match.objectLike({
        Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsSyncFunction'), 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsDeadLetterQueue'), 'Arn'] } },
      })],
    });
  });

  test('syncs a prompt on its successful CloudTrail-recorded changes', () => {
    // THEN
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        'source': ['aws.bedrock'],
        'detail-type': ['AWS API Call via CloudTrail'],
        'detail': {
          eventSource: ['bedrock.amazonaws.com'],
          eventName: ['CreatePrompt', 'UpdatePrompt', 'CreatePromptVersion', 'DeletePrompt'],
          errorCode: [{ exists: false }],
        },
      },
      Targets: [Match.objectLike({
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
        DeadLetterConfig: Match.anyValue(),
      })],
    });
  });

  test('lets both rules, and nothing else, invoke the sync function', () => {
    // THEN
    template.resourceCountIs('AWS::Lambda::Permission', 2);
    template.allResourcesProperties('AWS::Lambda::Permission', {
      Principal: 'events.amazonaws.com',
      SourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsSync(Schedule|OnSourceChange)'), 'Arn'] },
    });
  });

  test('syncs at deploy time through a custom resource served by the sync function itself', () => {
    // THEN
    template.resourceCountIs('Custom::PromptSync', 1);
    template.hasResourceProperties('Custom::PromptSync', {
      ServiceToken: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsSyncFunction'), 'Arn'] },
      ServiceTimeout: '2100',
      TableName: { Ref: Match.stringLikeRegexp('^PromptsTable') },
      Source: 'bedrock',
      SourceOptions: '{"version":"LATEST","maxRequestsPerSecond":5}',
      ContentFingerprint: Match.absent(),
    });
    template.resourceCountIs('AWS::Lambda::Function', 1);
  });

  test('creates the seven alarms and no dashboard', () => {
    // THEN
    template.resourceCountIs('AWS::CloudWatch::Alarm', 7);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
  });
});
