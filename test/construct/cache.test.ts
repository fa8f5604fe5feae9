import { Duration, Size } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import { newCachedTable, newCacheStack, logicalId } from './cache-util';
import { newServingTable, newStack, onlyResource, synth } from './util';
import { PromptCacheResourceType } from '../../src';
import { cacheStreamViewType } from '../../src/cache/cache-tier';
import { CACHE_RESOURCE_REPLICATION_GROUP, CACHE_RESOURCE_SERVERLESS, L2_READER_COMMANDS, L2_WRITER_COMMANDS } from '../../src/schema';

/** The access strings the users get (src/schema/l2.ts), with the table's Ref as the one token. */
function accessString(tableRef: string, commands: readonly string[]): unknown {
  const reader = commands === L2_READER_COMMANDS;
  return {
    'Fn::Join': ['', [
      reader ? 'on %R~cdk-prompt-serving:v3/' : 'on ~cdk-prompt-serving:v3/',
      { Ref: tableRef },
      ...(reader ? ['/* ~cdk-prompt-serving:v3/', { Ref: tableRef }] : []),
      `${reader ? '/#fill/*' : '/*'} -@all ${commands.map((c) => `+${c}`).join(' ')}`,
    ]],
  };
}

describe('serverless cache', () => {
  test('is a Valkey serverless cache, major version pinned, in two private subnets, with its own security group and user group', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc);
    // THEN
    const template = Template.fromStack(stack);
    const cache = onlyResource(template, 'AWS::ElastiCache::ServerlessCache').Properties;
    expect(cache).toEqual({
      Description: 'Prompt cache (L2) of a PromptServingTable, kept fresh by its stream',
      Engine: 'valkey',
      MajorEngineVersion: '8',
      ServerlessCacheName: 'stackpromptscachebc43863b',
      SubnetIds: [{ Ref: logicalId(template, 'AWS::EC2::Subnet', 'PrivateSubnet1') }, { Ref: logicalId(template, 'AWS::EC2::Subnet', 'PrivateSubnet2') }],
      SecurityGroupIds: [{ 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'PromptsCacheSecurityGroup'), 'GroupId'] }],
      UserGroupId: { Ref: logicalId(template, 'AWS::ElastiCache::UserGroup', 'PromptsCacheUserGroup') },
    });
  });

  test('has one IAM-authenticated user for readers and one for the invalidation function, limited to the table\'s keys', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc);
    // THEN
    const template = Template.fromStack(stack);
    const tableRef = logicalId(template, 'AWS::DynamoDB::GlobalTable', 'PromptsTable');
    template.resourceCountIs('AWS::ElastiCache::User', 2);
    template.hasResourceProperties('AWS::ElastiCache::User', {
      Engine: 'valkey',
      UserId: 'stackpromptscachebc43863b-reader',
      UserName: 'stackpromptscachebc43863b-reader',
      AuthenticationMode: { Type: 'iam' },
      AccessString: accessString(tableRef, L2_READER_COMMANDS),
      Passwords: Match.absent(),
      NoPasswordRequired: Match.absent(),
    });
    template.hasResourceProperties('AWS::ElastiCache::User', {
      Engine: 'valkey',
      UserId: 'stackpromptscachebc43863b-writer',
      UserName: 'stackpromptscachebc43863b-writer',
      AuthenticationMode: { Type: 'iam' },
      AccessString: accessString(tableRef, L2_WRITER_COMMANDS),
    });
    expect(onlyResource(template, 'AWS::ElastiCache::UserGroup').Properties).toEqual({
      Engine: 'valkey',
      UserGroupId: 'stackpromptscachebc43863b-users',
      UserIds: [
        { Ref: logicalId(template, 'AWS::ElastiCache::User', 'PromptsCacheReaderUser') },
        { Ref: logicalId(template, 'AWS::ElastiCache::User', 'PromptsCacheWriterUser') },
      ],
    });
  });

  test('the resource types are the environment contract\'s values', () => {
    expect(PromptCacheResourceType.SERVERLESS_CACHE).toBe(CACHE_RESOURCE_SERVERLESS);
    expect(PromptCacheResourceType.REPLICATION_GROUP).toBe(CACHE_RESOURCE_REPLICATION_GROUP);
  });

  test('readers may not run scripts or delete keys (their key permissions allow writing fills only); only the writer may', () => {
    for (const c of ['incr', 'del', 'eval', 'evalsha']) expect(L2_READER_COMMANDS).not.toContain(c);
    expect(L2_WRITER_COMMANDS).toEqual(expect.arrayContaining(['eval', 'evalsha', 'del']));
  });

  test('its security group admits nothing from any CIDR: only the invalidation function\'s group, on 6379-6380', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc);
    // THEN
    const template = Template.fromStack(stack);
    const cacheGroup = logicalId(template, 'AWS::EC2::SecurityGroup', 'PromptsCacheSecurityGroup');
    const group = template.findResources('AWS::EC2::SecurityGroup')[cacheGroup].Properties;
    expect(group.SecurityGroupIngress).toBeUndefined();
    const ingress = Object.values(template.findResources('AWS::EC2::SecurityGroupIngress'))
      .map((r) => r.Properties)
      .filter((p) => JSON.stringify(p.GroupId).includes(cacheGroup));
    expect(ingress).toEqual([{
      Description: 'Prompt cache invalidation function',
      GroupId: { 'Fn::GetAtt': [cacheGroup, 'GroupId'] },
      IpProtocol: 'tcp',
      FromPort: 6379,
      ToPort: 6380,
      SourceSecurityGroupId: { 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'InvalidationFunctionSecurityGroup'), 'GroupId'] },
    }]);
    for (const rule of Object.values(template.findResources('AWS::EC2::SecurityGroupIngress'))) {
      expect(rule.Properties.CidrIp).toBeUndefined();
      expect(rule.Properties.CidrIpv6).toBeUndefined();
    }
  });

  test('sets only maximum usage limits, and the customer managed key when given', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const key = new kms.Key(stack, 'CacheKey', { enableKeyRotation: true });
    // WHEN
    newCachedTable(stack, vpc, {
      cacheName: 'prompt-cache',
      maxDataStorage: Size.gibibytes(10),
      maxEcpuPerSecond: 5_000,
      encryptionKey: key,
    });
    // THEN
    Template.fromStack(stack).hasResourceProperties('AWS::ElastiCache::ServerlessCache', {
      ServerlessCacheName: 'prompt-cache',
      CacheUsageLimits: { DataStorage: { Maximum: 10, Unit: 'GB' }, ECPUPerSecond: { Maximum: 5000 } },
      KmsKeyId: { 'Fn::GetAtt': [logicalId(Template.fromStack(stack), 'AWS::KMS::Key', 'CacheKey'), 'Arn'] },
    });
    const limits = onlyResource(Template.fromStack(stack), 'AWS::ElastiCache::ServerlessCache').Properties.CacheUsageLimits;
    expect(JSON.stringify(limits)).not.toContain('Minimum');
  });

  test('exposes the cache, the invalidation function and its dead-letter queue', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    const prompts = newCachedTable(stack, vpc);
    // THEN
    const resolve = (x: unknown) => stack.resolve(x);
    const template = Template.fromStack(stack);
    const cacheId = logicalId(template, 'AWS::ElastiCache::ServerlessCache', 'PromptsCache');
    expect(resolve(prompts.cache!.cacheName)).toEqual({ Ref: cacheId });
    expect(resolve(prompts.cache!.endpointAddress)).toEqual({ 'Fn::GetAtt': [cacheId, 'Endpoint.Address'] });
    expect(resolve(prompts.cache!.endpointPort)).toEqual({ 'Fn::GetAtt': [cacheId, 'Endpoint.Port'] });
    expect(prompts.cache!.connections.securityGroups).toHaveLength(1);
    expect(prompts.cache!.clusterMode).toBe(true);
    expect(prompts.cache!.vpc).toBe(vpc);
    expect(prompts.invalidationFunction).toBeDefined();
    expect(prompts.invalidationDeadLetterQueue).toBeDefined();
  });
});

describe('stream and invalidation', () => {
  test('turn the stream on (new images) only with a cache', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc);
    // THEN
    Template.fromStack(stack).hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
    });
  });

  test('replicas need both images; no cache, no stream', () => {
    expect(cacheStreamViewType(true)).toBe('NEW_IMAGE');
    expect(cacheStreamViewType(true, true)).toBe('NEW_AND_OLD_IMAGES');
    expect(cacheStreamViewType(false, true)).toBeUndefined();
  });

  test('with a customer managed key on the table, the invalidation role may decrypt the stream', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const key = new kms.Key(stack, 'TableKey', { enableKeyRotation: true });
    // WHEN
    newCachedTable(stack, vpc, {}, { encryptionKey: key });
    // THEN
    const template = Template.fromStack(stack);
    const policy = template.findResources('AWS::IAM::Policy')[logicalId(template, 'AWS::IAM::Policy', 'InvalidationFunctionRoleDefaultPolicy')];
    expect(policy.Properties.PolicyDocument.Statement).toContainEqual({
      Action: ['kms:Decrypt', 'kms:DescribeKey'], Effect: 'Allow', Resource: { 'Fn::GetAtt': [logicalId(template, 'AWS::KMS::Key', 'TableKey'), 'Arn'] },
    });
  });

  test('without a cache: no stream, no VPC, no cache resources, no invalidation (the template of before)', () => {
    // GIVEN / WHEN
    const template = synth();
    // THEN
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', { StreamSpecification: Match.absent() });
    for (const type of ['AWS::ElastiCache::ServerlessCache', 'AWS::ElastiCache::ReplicationGroup', 'AWS::ElastiCache::User',
      'AWS::ElastiCache::UserGroup', 'AWS::Lambda::EventSourceMapping', 'AWS::EC2::SecurityGroup', 'AWS::EC2::VPC']) {
      template.resourceCountIs(type, 0);
    }
    template.resourceCountIs('AWS::Lambda::Function', 1); // the sync function
    template.resourceCountIs('AWS::SQS::Queue', 1);
    const prompts = newServingTable(newStack());
    expect(prompts.cache).toBeUndefined();
    expect(prompts.invalidationFunction).toBeUndefined();
    expect(prompts.invalidationDeadLetterQueue).toBeUndefined();
  });

  test('the event source mapping: pointer rows only, bisect, bounded retries and age, partial batches, a DLQ', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc);
    // THEN
    const template = Template.fromStack(stack);
    expect(onlyResource(template, 'AWS::Lambda::EventSourceMapping').Properties).toEqual({
      EventSourceArn: { 'Fn::GetAtt': [logicalId(template, 'AWS::DynamoDB::GlobalTable', 'PromptsTable'), 'StreamArn'] },
      FunctionName: { Ref: logicalId(template, 'AWS::Lambda::Function', 'InvalidationFunction') },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 3600,
      ParallelizationFactor: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      FilterCriteria: { Filters: [{ Pattern: JSON.stringify({ dynamodb: { Keys: { version: { S: ['CURRENT', { prefix: 'LABEL#' }] } } } }) }] },
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(template, 'AWS::SQS::Queue', 'InvalidationDeadLetterQueue'), 'Arn'] } } },
    });
  });

  test('the invalidation options tune the mapping', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc, {
      invalidationBatchSize: 10,
      invalidationRetryAttempts: 0,
      invalidationMaxRecordAge: Duration.minutes(10),
    });
    // THEN
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 10, MaximumRetryAttempts: 0, MaximumRecordAgeInSeconds: 600,
    });
  });

  test('the invalidation function: Node.js 22, in the cache\'s subnets, egress only to the cache, the writer\'s environment', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc);
    // THEN
    const template = Template.fromStack(stack);
    const cacheId = logicalId(template, 'AWS::ElastiCache::ServerlessCache', 'PromptsCache');
    const fnGroup = logicalId(template, 'AWS::EC2::SecurityGroup', 'InvalidationFunctionSecurityGroup');
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Handler: 'index.handler',
      Timeout: 30,
      VpcConfig: {
        SubnetIds: [{ Ref: logicalId(template, 'AWS::EC2::Subnet', 'PrivateSubnet1') }, { Ref: logicalId(template, 'AWS::EC2::Subnet', 'PrivateSubnet2') }],
        SecurityGroupIds: [{ 'Fn::GetAtt': [fnGroup, 'GroupId'] }],
      },
      Environment: {
        Variables: {
          PROMPT_SERVING_TABLE_NAME: { Ref: logicalId(template, 'AWS::DynamoDB::GlobalTable', 'PromptsTable') },
          PROMPT_SERVING_CACHE_ENDPOINT: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [cacheId, 'Endpoint.Address'] }, ':', { 'Fn::GetAtt': [cacheId, 'Endpoint.Port'] }]] },
          PROMPT_SERVING_CACHE_TLS: 'true',
          PROMPT_SERVING_CACHE_AUTH: 'iam',
          PROMPT_SERVING_CACHE_USER: 'stackpromptscachebc43863b-writer',
          PROMPT_SERVING_CACHE_NAME: { Ref: cacheId },
          PROMPT_SERVING_CACHE_RESOURCE_TYPE: 'ServerlessCache',
          PROMPT_SERVING_CACHE_CLUSTER: 'true',
          AWS_NODEJS_CONNECTION_REUSE_ENABLED: '1',
        },
      },
    });
    const group = template.findResources('AWS::EC2::SecurityGroup')[fnGroup].Properties;
    expect(group.SecurityGroupEgress).toBeUndefined(); // no allow-all: the one egress rule is below
    const egress = Object.values(template.findResources('AWS::EC2::SecurityGroupEgress')).map((r) => r.Properties);
    expect(egress).toEqual([{
      Description: 'Prompt cache invalidation function',
      GroupId: { 'Fn::GetAtt': [fnGroup, 'GroupId'] },
      IpProtocol: 'tcp',
      FromPort: 6379,
      ToPort: 6380,
      DestinationSecurityGroupId: { 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'PromptsCacheSecurityGroup'), 'GroupId'] },
    }]);
  });

  test('the invalidation role: connect as the writer, read the stream, park failures, attach to the VPC; nothing on the table', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc);
    // THEN
    const template = Template.fromStack(stack);
    const cacheId = logicalId(template, 'AWS::ElastiCache::ServerlessCache', 'PromptsCache');
    const tableId = logicalId(template, 'AWS::DynamoDB::GlobalTable', 'PromptsTable');
    const policy = template.findResources('AWS::IAM::Policy')[logicalId(template, 'AWS::IAM::Policy', 'InvalidationFunctionRoleDefaultPolicy')];
    expect(policy.Properties.PolicyDocument.Statement).toEqual([
      { Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Effect: 'Allow', Resource: { 'Fn::GetAtt': [logicalId(template, 'AWS::Logs::LogGroup', 'InvalidationFunctionLogs'), 'Arn'] } },
      {
        Action: 'elasticache:Connect',
        Effect: 'Allow',
        Resource: [{ 'Fn::GetAtt': [cacheId, 'ARN'] }, { 'Fn::GetAtt': [logicalId(template, 'AWS::ElastiCache::User', 'PromptsCacheWriterUser'), 'Arn'] }],
      },
      { Action: ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'], Effect: 'Allow', Resource: { 'Fn::GetAtt': [logicalId(template, 'AWS::SQS::Queue', 'InvalidationDeadLetterQueue'), 'Arn'] } },
      { Action: 'dynamodb:ListStreams', Effect: 'Allow', Resource: { 'Fn::GetAtt': [tableId, 'StreamArn'] } },
      { Action: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'], Effect: 'Allow', Resource: { 'Fn::GetAtt': [tableId, 'StreamArn'] } },
    ]);
    const role = template.findResources('AWS::IAM::Role')[logicalId(template, 'AWS::IAM::Role', 'InvalidationFunctionRole')];
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    expect(role.Properties.Policies).toEqual([{
      PolicyName: 'VpcNetworkInterfaces',
      PolicyDocument: {
        Version: '2012-10-17',
        Statement: [{
          Effect: 'Allow',
          Resource: '*',
          Action: ['ec2:CreateNetworkInterface', 'ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets',
            'ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'],
        }],
      },
    }]);
  });
});
