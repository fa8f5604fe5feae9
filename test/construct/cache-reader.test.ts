import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { logicalId, newCachedTable, newCacheStack, newFunction } from './cache-util';
import { newServingTable } from './util';
import { PromptServingTable } from '../../src';

describe('addReader with a cache', () => {
  test('opens 6379-6380 from the reader\'s security group to the cache\'s', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    const reader = newFunction(stack, 'Reader', vpc);
    // WHEN
    prompts.addReader(reader);
    // THEN
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: { 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'PromptsCacheSecurityGroup'), 'GroupId'] },
      SourceSecurityGroupId: { 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'ReaderSecurityGroup'), 'GroupId'] },
      IpProtocol: 'tcp',
      FromPort: 6379,
      ToPort: 6380,
    });
  });

  test('grants exactly elasticache:Connect on the cache and the reader user, beside the table read', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    const reader = newFunction(stack, 'Reader', vpc);
    // WHEN
    prompts.addReader(reader);
    // THEN
    const template = Template.fromStack(stack);
    const policy = template.findResources('AWS::IAM::Policy')[logicalId(template, 'AWS::IAM::Policy', 'ReaderServiceRoleDefaultPolicy')];
    expect(policy.Properties.PolicyDocument.Statement).toEqual([
      {
        Action: 'elasticache:Connect',
        Effect: 'Allow',
        Resource: [
          { 'Fn::GetAtt': [logicalId(template, 'AWS::ElastiCache::ServerlessCache', 'PromptsCache'), 'ARN'] },
          { 'Fn::GetAtt': [logicalId(template, 'AWS::ElastiCache::User', 'PromptsCacheReaderUser'), 'Arn'] },
        ],
      },
      {
        Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [logicalId(template, 'AWS::DynamoDB::GlobalTable', 'PromptsTable'), 'Arn'] },
      },
    ]);
  });

  test('sets the environment contract with the reader user', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    const reader = newFunction(stack, 'Reader', vpc);
    // WHEN
    prompts.addReader(reader);
    // THEN
    const template = Template.fromStack(stack);
    const cacheId = logicalId(template, 'AWS::ElastiCache::ServerlessCache', 'PromptsCache');
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(template, 'AWS::Lambda::Function', 'Reader')];
    expect(fn.Properties.Environment.Variables).toEqual({
      PROMPT_SERVING_TABLE_NAME: { Ref: logicalId(template, 'AWS::DynamoDB::GlobalTable', 'PromptsTable') },
      PROMPT_SERVING_CACHE_ENDPOINT: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [cacheId, 'Endpoint.Address'] }, ':', { 'Fn::GetAtt': [cacheId, 'Endpoint.Port'] }]] },
      PROMPT_SERVING_CACHE_TLS: 'true',
      PROMPT_SERVING_CACHE_AUTH: 'iam',
      PROMPT_SERVING_CACHE_USER: 'stackpromptscachebc43863b-reader',
      PROMPT_SERVING_CACHE_NAME: { Ref: cacheId },
      PROMPT_SERVING_CACHE_RESOURCE_TYPE: 'ServerlessCache',
      PROMPT_SERVING_CACHE_CLUSTER: 'true',
    });
  });

  test('throws at synth for a reader outside any VPC, naming the prop and the fix', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    const reader = newFunction(stack, 'Reader');
    // WHEN / THEN
    expect(() => prompts.addReader(reader)).toThrow(
      /^`fn` must be a Lambda function in the cache's VPC, got 'Stack\/Reader \(not in a VPC\)'\. Create the function with `vpc` set to the cache's VPC/);
    // Nothing was half-done: no grant and no environment on the rejected function.
    expect(reader.role?.node.tryFindChild('DefaultPolicy')).toBeUndefined();
    expect(stack.resolve((reader.node.defaultChild as lambda.CfnFunction).environment)).toBeUndefined();
  });

  test('throws at synth for a reader in another VPC', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    const other = new ec2.Vpc(stack, 'OtherVpc', { maxAzs: 2, natGateways: 0 });
    const reader = newFunction(stack, 'Reader', other);
    // WHEN / THEN
    expect(() => prompts.addReader(reader)).toThrow(/`fn` must be a Lambda function in the cache's VPC, got 'Stack\/Reader \(in subnets of another VPC\)'/);
  });

  test('without a cache, a reader needs no VPC and gets only the table name', () => {
    // GIVEN
    const stack = new Stack();
    const prompts = newServingTable(stack);
    const reader = newFunction(stack, 'Reader');
    // WHEN
    prompts.addReader(reader);
    // THEN
    const template = Template.fromStack(stack);
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(template, 'AWS::Lambda::Function', 'Reader')];
    expect(Object.keys(fn.Properties.Environment.Variables)).toEqual(['PROMPT_SERVING_TABLE_NAME']);
    template.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
  });

  test('dynamoDbGatewayEndpoint adds a DynamoDB gateway endpoint on the cache subnets\' route tables', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc, { dynamoDbGatewayEndpoint: true });
    // THEN
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
      VpcEndpointType: 'Gateway',
      ServiceName: { 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, '.dynamodb']] },
      RouteTableIds: [
        { Ref: logicalId(template, 'AWS::EC2::RouteTable', 'PrivateSubnet1') },
        { Ref: logicalId(template, 'AWS::EC2::RouteTable', 'PrivateSubnet2') },
      ],
    });
  });

  test('no gateway endpoint unless asked for', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newCachedTable(stack, vpc);
    // THEN
    Template.fromStack(stack).resourceCountIs('AWS::EC2::VPCEndpoint', 0);
  });
});

describe('addReader on an imported table with the owner\'s cache', () => {
  test('a reader in another stack gets the same cache grant, ports and environment as on the owning table', () => {
    // GIVEN a cached table in one stack and an import of it, with its cache, in another stack of the app
    const { app, stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    const readers = new Stack(app, 'Readers', { env: { account: '123456789012', region: 'eu-west-1' } });
    const fn = newFunction(readers, 'Reader', vpc);
    const imported = PromptServingTable.fromTableAttributes(readers, 'Prompts', { tableName: prompts.tableName, cache: prompts.cache });
    // WHEN
    imported.addReader(fn);
    // THEN exactly elasticache:Connect on the cache and reader user, beside the table read
    const template = Template.fromStack(readers);
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((p: any) => p.Properties.PolicyDocument.Statement);
    expect(statements.map((s: any) => s.Action)).toEqual(['elasticache:Connect', ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query']]);
    expect(statements[0].Resource).toHaveLength(2);
    // AND the cache's ports are opened to it, by an ingress rule on the cache's group that lives in the reader's
    // stack (so the cache's stack does not depend on its readers: no cycle)
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      IpProtocol: 'tcp', FromPort: 6379, ToPort: 6380, GroupId: { 'Fn::ImportValue': Match.stringLikeRegexp('CacheSecurityGroup') },
    });
    const ownerIngress = Template.fromStack(stack).findResources('AWS::EC2::SecurityGroupIngress', { Properties: { FromPort: 6379 } });
    expect(Object.values(ownerIngress).map((r: any) => r.Properties.Description)).toEqual(['Prompt cache invalidation function']);
    // AND the cache environment is set, the L2 turned on by the endpoint
    const env = Object.values(template.findResources('AWS::Lambda::Function'))[0].Properties.Environment.Variables;
    expect(Object.keys(env).sort()).toEqual([
      'PROMPT_SERVING_CACHE_AUTH', 'PROMPT_SERVING_CACHE_CLUSTER', 'PROMPT_SERVING_CACHE_ENDPOINT', 'PROMPT_SERVING_CACHE_NAME',
      'PROMPT_SERVING_CACHE_RESOURCE_TYPE', 'PROMPT_SERVING_CACHE_TLS', 'PROMPT_SERVING_CACHE_USER', 'PROMPT_SERVING_TABLE_NAME',
    ]);
  });

  test('an imported table with a cache rejects a reader outside the cache\'s VPC', () => {
    // GIVEN
    const { app, stack, vpc } = newCacheStack();
    const prompts = newCachedTable(stack, vpc);
    const readers = new Stack(app, 'Readers', { env: { account: '123456789012', region: 'eu-west-1' } });
    const imported = PromptServingTable.fromTableAttributes(readers, 'Prompts', { tableName: prompts.tableName, cache: prompts.cache });
    // WHEN / THEN
    expect(() => imported.addReader(newFunction(readers, 'Reader'))).toThrow(/`fn` must be a Lambda function in the cache's VPC/);
  });
});
