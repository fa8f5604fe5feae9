import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { attachCacheClientLayer } from './reader-layer';
import { invalidProp } from '../private/errors';
import { CACHE_CONNECT_ACTIONS } from '../private/perms';
import type { IPromptServingCache } from '../prompt-cache-options';
import { CACHE_AUTH_IAM, Env } from '../schema';

/**
 * The cache part of the environment contract (src/schema/env.ts) for a client connecting as
 * `userId`, plus the table name.
 */
export function cacheEnvironment(cache: IPromptServingCache, userId: string, tableName: string): Record<string, string> {
  return {
    [Env.tableName]: tableName,
    [Env.cacheEndpoint]: `${cache.endpointAddress}:${cache.endpointPort}`,
    [Env.cacheTls]: 'true',
    [Env.cacheAuth]: CACHE_AUTH_IAM,
    [Env.cacheUser]: userId,
    [Env.cacheName]: cache.cacheName,
    [Env.cacheResourceType]: cache.resourceType,
    [Env.cacheCluster]: String(cache.clusterMode),
  };
}

/**
 * Makes `fn` a reader of `cache` for the table named `tableName`: checks that `fn` is in the cache's VPC, opens
 * the cache's ports from `fn`'s security groups, grants `elasticache:Connect` on the cache and the reader user,
 * sets the environment contract, and attaches the stack's cache client layer for `fn`'s runtime family. The table grant (`grantRead`) is the caller's.
 *
 * Plain arguments, so that a table made here and one imported by attributes share it.
 */
export function addCacheReader(fn: lambda.Function, cache: IPromptServingCache, tableName: string): iam.Grant {
  validateReaderInVpc(fn, cache);
  // From the reader's side: for a reader in another stack CDK then places the ingress rule in the reader's stack,
  // so the cache's stack never references the reader (no dependency cycle); in one stack the template is the same.
  fn.connections.allowToDefaultPort(cache, `Prompt cache reader ${fn.node.path}`);
  for (const [name, value] of Object.entries(cacheEnvironment(cache, cache.readerUserId, tableName))) {
    fn.addEnvironment(name, value);
  }
  // The cache client, whatever way the function's code was packaged (docs/adr/0003-reader-layer.md).
  attachCacheClientLayer(fn);
  return grantCacheConnect(fn, cache, cache.readerUserArn);
}

/** `elasticache:Connect` on the cache and one of its users: what IAM authentication as that user needs. */
export function grantCacheConnect(grantee: iam.IGrantable, cache: IPromptServingCache, userArn: string): iam.Grant {
  return iam.Grant.addToPrincipal({ grantee, actions: CACHE_CONNECT_ACTIONS, resourceArns: [cache.cacheArn, userArn] });
}

/** A reader must run in the cache's VPC: a cache endpoint has no public address. */
function validateReaderInVpc(fn: lambda.Function, cache: IPromptServingCache): void {
  const fix = 'Create the function with `vpc` set to the cache\'s VPC (`PromptCache.serverless({ vpc })`) and, for the table, '
    + 'a DynamoDB gateway endpoint (`dynamoDbGatewayEndpoint: true`) or a NAT gateway';
  if (!fn.isBoundToVpc) {
    throw invalidProp('fn', 'be a Lambda function in the cache\'s VPC', `${fn.node.path} (not in a VPC)`, fix);
  }
  const vpcConfig = (fn.node.defaultChild as lambda.CfnFunction).vpcConfig as lambda.CfnFunction.VpcConfigProperty | undefined;
  const vpc = cache.vpc;
  const cacheSubnetIds = new Set([...vpc.publicSubnets, ...vpc.privateSubnets, ...vpc.isolatedSubnets].map((s) => s.subnetId));
  const foreign = (vpcConfig?.subnetIds ?? []).filter((id) => !cacheSubnetIds.has(id));
  if (foreign.length > 0) {
    throw invalidProp('fn', 'be a Lambda function in the cache\'s VPC', `${fn.node.path} (in subnets of another VPC)`, fix);
  }
}
