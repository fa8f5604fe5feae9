import { SizeRoundingBehavior, Token } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elasticache from 'aws-cdk-lib/aws-elasticache';
import { Construct } from 'constructs';
import { type CacheBinding, createdCacheBinding } from './binding';
import { addDynamoDbGatewayEndpoint, createCacheSecurityGroup, selectCacheSubnets } from './network';
import { PromptCacheResourceType, type ServerlessPromptCacheOptions } from '../prompt-cache-options';
import { createCacheUsers, generatedCacheName } from './users';
import { validateCacheName, validateWholeNumber } from './validate-cache';
import { invalidProp, isUnresolved } from '../private/errors';

/** The engine, and its major version pinned by the library (a user may pin another). */
export const SERVERLESS_ENGINE = 'valkey';
export const DEFAULT_SERVERLESS_MAJOR_ENGINE_VERSION = '8';
/** A serverless cache answers on 6379 (primary endpoint) and 6380 (reader endpoint). */
export const SERVERLESS_PORT = 6379;
export const SERVERLESS_READER_PORT = 6380;
/** ElastiCache Serverless usage limits. */
export const MAX_DATA_STORAGE_GB = 5_000;
export const MIN_ECPU_PER_SECOND = 1_000;
export const MAX_ECPU_PER_SECOND = 15_000_000;

export function validateServerlessOptions(options: ServerlessPromptCacheOptions): void {
  validateCacheName('cacheName', options.cacheName);
  const version = options.majorEngineVersion;
  if (version !== undefined && !isUnresolved(version) && !/^[0-9]+$/.test(version)) {
    throw invalidProp('majorEngineVersion', 'be a Valkey major version such as \'8\'', version);
  }
  const storage = options.maxDataStorage;
  if (storage !== undefined && !isUnresolved(storage)) {
    const gb = storage.toGibibytes({ rounding: SizeRoundingBehavior.NONE });
    if (!Number.isInteger(gb) || gb < 1 || gb > MAX_DATA_STORAGE_GB) {
      throw invalidProp('maxDataStorage', `be whole GB from 1 to ${MAX_DATA_STORAGE_GB.toLocaleString('en-US')}`, storage);
    }
  }
  validateWholeNumber('maxEcpuPerSecond', options.maxEcpuPerSecond, MIN_ECPU_PER_SECOND, MAX_ECPU_PER_SECOND);
}

/**
 * `AWS::ElastiCache::ServerlessCache` (Valkey, TLS always) with IAM users, its own security group and only
 * maximum usage limits, under `scope/Cache`.
 */
export function bindServerlessCache(scope: Construct, options: ServerlessPromptCacheOptions, tableName: string): CacheBinding {
  const { selection, subnets } = selectCacheSubnets(options);
  const holder = new Construct(scope, 'Cache');
  const securityGroup = createCacheSecurityGroup(holder, options.vpc);
  const users = createCacheUsers(holder, tableName);
  const cacheName = options.cacheName ?? generatedCacheName(holder);

  const storage = options.maxDataStorage;
  const cacheUsageLimits = storage || options.maxEcpuPerSecond !== undefined ? {
    dataStorage: storage ? { maximum: storage.toGibibytes(), unit: 'GB' } : undefined,
    ecpuPerSecond: options.maxEcpuPerSecond !== undefined ? { maximum: options.maxEcpuPerSecond } : undefined,
  } : undefined;

  const cache = new elasticache.CfnServerlessCache(holder, 'Resource', {
    serverlessCacheName: cacheName,
    description: 'Prompt cache (L2) of a PromptServingTable, kept fresh by its stream',
    engine: SERVERLESS_ENGINE,
    majorEngineVersion: options.majorEngineVersion ?? DEFAULT_SERVERLESS_MAJOR_ENGINE_VERSION,
    subnetIds: subnets.subnetIds,
    securityGroupIds: [securityGroup.securityGroupId],
    userGroupId: users.userGroup.ref,
    kmsKeyId: options.encryptionKey?.keyArn,
    cacheUsageLimits,
  });
  addDynamoDbGatewayEndpoint(holder, options, selection);

  return createdCacheBinding({
    cacheName: cache.ref,
    cacheArn: cache.attrArn,
    resourceType: PromptCacheResourceType.SERVERLESS_CACHE,
    endpointAddress: cache.attrEndpointAddress,
    endpointPort: Token.asNumber(cache.attrEndpointPort),
    clusterMode: true,
    securityGroup,
    port: ec2.Port.tcpRange(SERVERLESS_PORT, SERVERLESS_READER_PORT),
    users,
  }, options, selection);
}
