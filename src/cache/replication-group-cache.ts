import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elasticache from 'aws-cdk-lib/aws-elasticache';
import { Construct } from 'constructs';
import { type CacheBinding, createdCacheBinding } from './binding';
import { addDynamoDbGatewayEndpoint, createCacheSecurityGroup, selectCacheSubnets } from './network';
import { PromptCacheResourceType, type ReplicationGroupPromptCacheOptions } from '../prompt-cache-options';
import { createCacheUsers, elastiCacheArn, generatedCacheName } from './users';
import { validateCacheName, validateWholeNumber } from './validate-cache';
import { invalidProp, isUnresolved } from '../private/errors';

export const REPLICATION_GROUP_ENGINE = 'valkey';
export const DEFAULT_REPLICATION_GROUP_ENGINE_VERSION = '8.0';
export const DEFAULT_CACHE_NODE_TYPE = 'cache.t4g.micro';
export const DEFAULT_REPLICAS = 1;
export const MAX_REPLICAS = 5;
export const REPLICATION_GROUP_PORT = 6379;

export function validateReplicationGroupOptions(options: ReplicationGroupPromptCacheOptions): void {
  validateCacheName('replicationGroupId', options.replicationGroupId);
  validateWholeNumber('replicas', options.replicas, 0, MAX_REPLICAS);
  const version = options.engineVersion;
  if (version !== undefined && !isUnresolved(version)) {
    const [major, minor] = version.split('.').map(Number);
    if (!/^[0-9]+\.[0-9]+$/.test(version) || major < 7 || (major === 7 && minor < 2)) {
      throw invalidProp('engineVersion', 'be a Valkey version of 7.2 or later written as major.minor', version,
        'IAM authentication needs Valkey 7.2 or later');
    }
  }
  const nodeType = options.cacheNodeType;
  if (nodeType !== undefined && !isUnresolved(nodeType) && !/^cache\.[a-z0-9-]+\.[a-z0-9]+$/.test(nodeType)) {
    throw invalidProp('cacheNodeType', 'be an ElastiCache node type such as \'cache.t4g.micro\'', nodeType);
  }
}

/**
 * `AWS::ElastiCache::ReplicationGroup` (Valkey, cluster mode disabled) with encryption in transit (required)
 * and at rest, the same IAM users as the serverless cache, and Multi-AZ failover when it has replicas.
 */
export function bindReplicationGroupCache(scope: Construct, options: ReplicationGroupPromptCacheOptions, tableName: string): CacheBinding {
  const { selection, subnets } = selectCacheSubnets(options);
  const holder = new Construct(scope, 'Cache');
  const securityGroup = createCacheSecurityGroup(holder, options.vpc);
  const users = createCacheUsers(holder, tableName);
  const replicationGroupId = options.replicationGroupId ?? generatedCacheName(holder);
  const replicas = options.replicas ?? DEFAULT_REPLICAS;

  const subnetGroup = new elasticache.CfnSubnetGroup(holder, 'SubnetGroup', {
    description: 'Prompt cache subnets',
    subnetIds: subnets.subnetIds,
  });
  const group = new elasticache.CfnReplicationGroup(holder, 'Resource', {
    replicationGroupId,
    replicationGroupDescription: 'Prompt cache (L2) of a PromptServingTable, kept fresh by its stream',
    engine: REPLICATION_GROUP_ENGINE,
    engineVersion: options.engineVersion ?? DEFAULT_REPLICATION_GROUP_ENGINE_VERSION,
    cacheNodeType: options.cacheNodeType ?? DEFAULT_CACHE_NODE_TYPE,
    numCacheClusters: 1 + replicas,
    automaticFailoverEnabled: replicas > 0,
    multiAzEnabled: replicas > 0,
    port: REPLICATION_GROUP_PORT,
    cacheSubnetGroupName: subnetGroup.ref,
    securityGroupIds: [securityGroup.securityGroupId],
    transitEncryptionEnabled: true,
    transitEncryptionMode: 'required',
    atRestEncryptionEnabled: true,
    kmsKeyId: options.encryptionKey?.keyArn,
    userGroupIds: [users.userGroup.ref],
    autoMinorVersionUpgrade: true,
  });
  // The L2 holds only copies of table items, refilled on a miss: deleting it with the stack loses nothing (said
  // explicitly, as cfn-lint's I3011 asks of stateful resources).
  group.applyRemovalPolicy(RemovalPolicy.DESTROY);
  Validations.of(group).acknowledge({
    id: 'AwsSolutions-AEC6',
    reason: 'Clients authenticate with IAM through the user group (a short-lived token per connection, one user per role '
      + 'with an access string limited to this table\'s keys), which replaces the single shared AUTH token this rule looks for.',
  });
  addDynamoDbGatewayEndpoint(holder, options, selection);

  return createdCacheBinding({
    cacheName: group.ref,
    cacheArn: elastiCacheArn(scope, 'replicationgroup', group.ref),
    resourceType: PromptCacheResourceType.REPLICATION_GROUP,
    endpointAddress: group.attrPrimaryEndPointAddress,
    endpointPort: REPLICATION_GROUP_PORT,
    clusterMode: false,
    securityGroup,
    port: ec2.Port.tcp(REPLICATION_GROUP_PORT),
    users,
  }, options, selection);
}
