import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { logicalId, newCachedTable, newCacheStack, newFunction } from './cache-util';
import { newServingTable } from './util';

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
