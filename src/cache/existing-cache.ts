import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Construct } from 'constructs';
import type { CacheBinding } from './binding';
import { addDynamoDbGatewayEndpoint, selectCacheSubnets } from './network';
import { type ExistingPromptCacheOptions, PromptCacheResourceType } from '../prompt-cache-options';
import { elastiCacheArn } from './users';
import { validateCacheName, validateWholeNumber } from './validate-cache';
import { invalidProp, isUnresolved } from '../private/errors';

export const DEFAULT_EXISTING_PORT = 6379;
const MAX_PORT = 65_535;
/** ElastiCache user ids: a letter, then letters, digits and hyphens. */
const USER_ID = /^[a-zA-Z][a-zA-Z0-9-]*$/;

export function validateExistingCacheOptions(options: ExistingPromptCacheOptions): void {
  validateCacheName('cacheName', options.cacheName);
  validateWholeNumber('endpointPort', options.endpointPort, 1, MAX_PORT);
  for (const prop of ['readerUserId', 'writerUserId'] as const) {
    const id = options[prop];
    if (!isUnresolved(id) && !USER_ID.test(id)) {
      throw invalidProp(prop, 'be an ElastiCache user id (a letter, then letters, digits or hyphens)', id);
    }
  }
  if (!isUnresolved(options.readerUserId) && options.readerUserId === options.writerUserId) {
    throw invalidProp('writerUserId', 'differ from `readerUserId`', options.writerUserId,
      'Readers must not be able to bump the epoch or delete keys: give the invalidation function its own user');
  }
  if (!isUnresolved(options.securityGroups) && options.securityGroups.length === 0) {
    throw invalidProp('securityGroups', 'list at least one security group of the cache', options.securityGroups);
  }
}

/** A cache made elsewhere: no resource is created but the optional gateway endpoint. */
export function bindExistingCache(scope: Construct, options: ExistingPromptCacheOptions, _tableName: string): CacheBinding {
  const { selection } = selectCacheSubnets(options);
  const resourceType = options.resourceType ?? PromptCacheResourceType.SERVERLESS_CACHE;
  const serverless = resourceType === PromptCacheResourceType.SERVERLESS_CACHE;
  const port = options.endpointPort ?? DEFAULT_EXISTING_PORT;
  addDynamoDbGatewayEndpoint(new Construct(scope, 'Cache'), options, selection);
  return {
    cache: {
      cacheName: options.cacheName,
      cacheArn: elastiCacheArn(scope, serverless ? 'serverlesscache' : 'replicationgroup', options.cacheName),
      resourceType,
      endpointAddress: options.endpointAddress,
      endpointPort: port,
      clusterMode: options.clusterMode ?? serverless,
      vpc: options.vpc,
      connections: new ec2.Connections({
        securityGroups: options.securityGroups,
        defaultPort: serverless ? ec2.Port.tcpRange(port, port + 1) : ec2.Port.tcp(port),
      }),
      readerUserId: options.readerUserId,
      readerUserArn: elastiCacheArn(scope, 'user', options.readerUserId),
      writerUserId: options.writerUserId,
      writerUserArn: elastiCacheArn(scope, 'user', options.writerUserId),
    },
    subnets: selection,
    options,
  };
}
