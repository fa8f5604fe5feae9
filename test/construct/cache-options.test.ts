import { App, Duration, Size, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { logicalId, newCacheStack, newFunction } from './cache-util';
import { newServingTable, onlyResource } from './util';
import { PromptCache, PromptCacheResourceType } from '../../src';

describe('PromptCache.replicationGroup', () => {
  test('is a Valkey replication group with transit (required) and at-rest encryption, IAM users, Multi-AZ with a replica', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newServingTable(stack, { cache: PromptCache.replicationGroup({ vpc }) });
    // THEN
    const template = Template.fromStack(stack);
    expect(onlyResource(template, 'AWS::ElastiCache::ReplicationGroup').Properties).toEqual({
      ReplicationGroupId: 'stackpromptscachebc43863b',
      ReplicationGroupDescription: 'Prompt cache (L2) of a PromptServingTable, kept fresh by its stream',
      Engine: 'valkey',
      EngineVersion: '8.0',
      CacheNodeType: 'cache.t4g.micro',
      NumCacheClusters: 2,
      AutomaticFailoverEnabled: true,
      MultiAZEnabled: true,
      Port: 6379,
      CacheSubnetGroupName: { Ref: logicalId(template, 'AWS::ElastiCache::SubnetGroup', 'PromptsCacheSubnetGroup') },
      SecurityGroupIds: [{ 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'PromptsCacheSecurityGroup'), 'GroupId'] }],
      TransitEncryptionEnabled: true,
      TransitEncryptionMode: 'required',
      AtRestEncryptionEnabled: true,
      UserGroupIds: [{ Ref: logicalId(template, 'AWS::ElastiCache::UserGroup', 'PromptsCacheUserGroup') }],
      AutoMinorVersionUpgrade: true,
    });
    template.resourceCountIs('AWS::ElastiCache::User', 2);
    template.resourceCountIs('AWS::ElastiCache::ServerlessCache', 0);
  });

  test('readers get port 6379 only, the primary endpoint and a non-cluster environment', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newServingTable(stack, { cache: PromptCache.replicationGroup({ vpc, replicas: 0 }) });
    const reader = newFunction(stack, 'Reader', vpc);
    // WHEN
    prompts.addReader(reader);
    // THEN
    const template = Template.fromStack(stack);
    const groupId = logicalId(template, 'AWS::ElastiCache::ReplicationGroup', 'PromptsCache');
    template.hasResourceProperties('AWS::ElastiCache::ReplicationGroup', { NumCacheClusters: 1, MultiAZEnabled: false, AutomaticFailoverEnabled: false });
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      SourceSecurityGroupId: { 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'ReaderSecurityGroup'), 'GroupId'] },
      FromPort: 6379,
      ToPort: 6379,
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          PROMPT_SERVING_CACHE_ENDPOINT: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [groupId, 'PrimaryEndPoint.Address'] }, ':6379']] },
          PROMPT_SERVING_CACHE_RESOURCE_TYPE: 'ReplicationGroup',
          PROMPT_SERVING_CACHE_CLUSTER: 'false',
          PROMPT_SERVING_CACHE_NAME: { Ref: groupId },
        }),
      },
      VpcConfig: Match.objectLike({ SecurityGroupIds: [{ 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'ReaderSecurityGroup'), 'GroupId'] }] }),
    });
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([{
          Action: 'elasticache:Connect',
          Effect: 'Allow',
          Resource: [
            { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':elasticache:eu-west-1:123456789012:replicationgroup:', { Ref: groupId }]] },
            { 'Fn::GetAtt': [logicalId(template, 'AWS::ElastiCache::User', 'PromptsCacheReaderUser'), 'Arn'] },
          ],
        }]),
      },
    });
  });

  test('has no ThrottledCmds alarm (node-based caches do not publish it) and metricCacheThrottledCmds says why', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    const prompts = newServingTable(stack, { cache: PromptCache.replicationGroup({ vpc }) });
    // THEN
    expect(prompts.alarms.map((a) => a.node.id)).not.toContain('CacheThrottledCmdsAlarm');
    expect(() => prompts.metricCacheThrottledCmds()).toThrow(/published for serverless caches only/);
  });
});

describe('PromptCache.fromExisting', () => {
  function existing(stack: Stack, vpc: ec2.IVpc, resourceType?: PromptCacheResourceType) {
    const securityGroup = new ec2.SecurityGroup(stack, 'ExistingCacheGroup', { vpc, allowAllOutbound: false });
    return PromptCache.fromExisting({
      vpc,
      cacheName: 'shared-cache',
      resourceType,
      endpointAddress: 'shared-cache-abc123.serverless.euw1.cache.amazonaws.com',
      securityGroups: [securityGroup],
      readerUserId: 'prompts-reader',
      writerUserId: 'prompts-writer',
    });
  }

  test('creates no cache resource, grants Connect on the named cache and users, opens its security group', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = newServingTable(stack, { cache: existing(stack, vpc) });
    const reader = newFunction(stack, 'Reader', vpc);
    // WHEN
    prompts.addReader(reader);
    // THEN
    const template = Template.fromStack(stack);
    for (const type of ['AWS::ElastiCache::ServerlessCache', 'AWS::ElastiCache::ReplicationGroup', 'AWS::ElastiCache::User', 'AWS::ElastiCache::UserGroup']) {
      template.resourceCountIs(type, 0);
    }
    const arn = (resource: string) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:elasticache:eu-west-1:123456789012:${resource}`]] });
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: { Statement: Match.arrayWith([{ Action: 'elasticache:Connect', Effect: 'Allow', Resource: [arn('serverlesscache:shared-cache'), arn('user:prompts-reader')] }]) },
    });
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: { 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'ExistingCacheGroup'), 'GroupId'] },
      FromPort: 6379,
      ToPort: 6380,
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          PROMPT_SERVING_CACHE_ENDPOINT: 'shared-cache-abc123.serverless.euw1.cache.amazonaws.com:6379',
          PROMPT_SERVING_CACHE_USER: 'prompts-reader',
          PROMPT_SERVING_CACHE_NAME: 'shared-cache',
        }),
      },
      VpcConfig: Match.objectLike({ SecurityGroupIds: [{ 'Fn::GetAtt': [logicalId(template, 'AWS::EC2::SecurityGroup', 'ReaderSecurityGroup'), 'GroupId'] }] }),
    });
    // The invalidation function still reads the stream and connects as the writer.
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::Function', { Environment: { Variables: Match.objectLike({ PROMPT_SERVING_CACHE_USER: 'prompts-writer' }) } });
  });

  test('a replication group defaults to one port and no cluster mode', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    const prompts = newServingTable(stack, { cache: existing(stack, vpc, PromptCacheResourceType.REPLICATION_GROUP) });
    // THEN
    expect(prompts.cache?.clusterMode).toBe(false);
    expect(prompts.cache?.connections.defaultPort?.toString()).toBe('6379');
  });

  test.each<[string, Record<string, unknown>, RegExp]>([
    ['the same user for both roles', { writerUserId: 'prompts-reader' }, /^`writerUserId` must differ from `readerUserId`, got 'prompts-reader'\. Readers must not/],
    ['a user id that is not one', { readerUserId: 'no spaces' }, /^`readerUserId` must be an ElastiCache user id/],
    ['no security group', { securityGroups: [] }, /^`securityGroups` must list at least one security group of the cache, got \[\]/],
    ['a port out of range', { endpointPort: 70_000 }, /^`endpointPort` must be a whole number from 1 to 65,535, got 70000/],
    ['a cache name with capitals', { cacheName: 'Shared' }, /^`cacheName` must be 1 to 40 lowercase letters/],
  ])('throws for %s', (_, override, message) => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const securityGroup = new ec2.SecurityGroup(stack, 'Group', { vpc });
    // WHEN / THEN
    expect(() => PromptCache.fromExisting({
      vpc,
      cacheName: 'shared',
      endpointAddress: 'host',
      securityGroups: [securityGroup],
      readerUserId: 'prompts-reader',
      writerUserId: 'prompts-writer',
      ...override,
    })).toThrow(message);
  });
});

describe('cache validation at synth', () => {
  test.each<[string, () => PromptCache, RegExp]>([
    ['a cache name with two hyphens', () => PromptCache.serverless({ vpc: vpcOf(), cacheName: 'a--b' }), /^`cacheName` must be 1 to 40 lowercase letters, digits or hyphens, starting with a letter, without two hyphens in a row or a hyphen at the end, got 'a--b'$/],
    ['a cache name of 41 characters', () => PromptCache.serverless({ vpc: vpcOf(), cacheName: 'a'.repeat(41) }), /^`cacheName` must be 1 to 40/],
    ['a fractional data cap', () => PromptCache.serverless({ vpc: vpcOf(), maxDataStorage: Size.mebibytes(1536) }), /^`maxDataStorage` must be whole GB from 1 to 5,000, got 1\.5 GiB$/],
    ['a data cap above 5,000 GB', () => PromptCache.serverless({ vpc: vpcOf(), maxDataStorage: Size.gibibytes(6000) }), /^`maxDataStorage` must be whole GB from 1 to 5,000/],
    ['an ECPU cap below 1,000', () => PromptCache.serverless({ vpc: vpcOf(), maxEcpuPerSecond: 999 }), /^`maxEcpuPerSecond` must be a whole number from 1,000 to 15,000,000, got 999$/],
    ['a major version with a minor', () => PromptCache.serverless({ vpc: vpcOf(), majorEngineVersion: '8.0' }), /^`majorEngineVersion` must be a Valkey major version such as '8', got '8\.0'$/],
    ['a batch size of 0', () => PromptCache.serverless({ vpc: vpcOf(), invalidationBatchSize: 0 }), /^`invalidationBatchSize` must be a whole number from 1 to 10,000, got 0$/],
    ['negative retries', () => PromptCache.serverless({ vpc: vpcOf(), invalidationRetryAttempts: -1 }), /^`invalidationRetryAttempts` must be a whole number from 0 to 10,000, got -1$/],
    ['a record age of 30 seconds', () => PromptCache.serverless({ vpc: vpcOf(), invalidationMaxRecordAge: Duration.seconds(30) }), /^`invalidationMaxRecordAge` must be whole seconds from 1 minute to 7 days, got 30 seconds\. Lambda keeps/],
    ['a record age of 8 days', () => PromptCache.serverless({ vpc: vpcOf(), invalidationMaxRecordAge: Duration.days(8) }), /^`invalidationMaxRecordAge` must be whole seconds from 1 minute to 7 days, got 8 days/],
    ['six replicas', () => PromptCache.replicationGroup({ vpc: vpcOf(), replicas: 6 }), /^`replicas` must be a whole number from 0 to 5, got 6$/],
    ['Valkey 7.1', () => PromptCache.replicationGroup({ vpc: vpcOf(), engineVersion: '7.1' }), /^`engineVersion` must be a Valkey version of 7\.2 or later written as major\.minor, got '7\.1'\. IAM authentication needs/],
    ['a node type without the cache. prefix', () => PromptCache.replicationGroup({ vpc: vpcOf(), cacheNodeType: 't4g.micro' }), /^`cacheNodeType` must be an ElastiCache node type such as 'cache\.t4g\.micro', got 't4g\.micro'$/],
  ])('throws for %s', (_, make, message) => {
    expect(make).toThrow(message);
  });

  test('throws for subnets in one Availability Zone', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const vpcSubnets = { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, availabilityZones: [vpc.availabilityZones[0]] };
    const cache = PromptCache.serverless({ vpc, vpcSubnets });
    // WHEN / THEN
    expect(() => newServingTable(stack, { cache })).toThrow(
      /^`vpcSubnets` must select subnets in at least 2 Availability Zones, got '1 subnet\(s\) in 1 zone\(s\)'\. Give the VPC private subnets/);
  });

  test('throws for public subnets', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const cache = PromptCache.serverless({ vpc, vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC } });
    // WHEN / THEN
    expect(() => newServingTable(stack, { cache })).toThrow(/^`vpcSubnets` must select private or isolated subnets only, got \[/);
  });

  test('throws for a VPC with public subnets only', () => {
    // GIVEN
    const stack = new Stack(new App(), 'Stack', { env: { account: '123456789012', region: 'eu-west-1' } });
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 2, subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }] });
    // WHEN / THEN
    expect(() => newServingTable(stack, { cache: PromptCache.serverless({ vpc }) })).toThrow(/^`vpcSubnets` must select private subnets of `vpc`, got none/);
  });

  test('takes isolated subnets when the VPC has no private subnets with egress', () => {
    // GIVEN
    const stack = new Stack(new App(), 'Stack', { env: { account: '123456789012', region: 'eu-west-1' } });
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 2, subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }] });
    // WHEN
    newServingTable(stack, { cache: PromptCache.serverless({ vpc }) });
    // THEN
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::ElastiCache::ServerlessCache', {
      SubnetIds: [{ Ref: logicalId(template, 'AWS::EC2::Subnet', 'isolatedSubnet1') }, { Ref: logicalId(template, 'AWS::EC2::Subnet', 'isolatedSubnet2') }],
    });
  });
});

/** A VPC in a throw-away stack, for validations that fail before any binding. */
function vpcOf(): ec2.IVpc {
  return newCacheStack().vpc;
}
