/**
 * Environment contract: variables the construct sets and the handlers and runtime clients read.
 */

/** Name of the serving table (`Env.tableName`). Its own constant so a reader bundle keeps it without the whole `Env`. */
export const ENV_TABLE_NAME = 'PROMPT_SERVING_TABLE_NAME';
/** `host:port` of the L2 cache (`Env.cacheEndpoint`); its own constant as {@link ENV_TABLE_NAME} is. */
export const ENV_CACHE_ENDPOINT = 'PROMPT_SERVING_CACHE_ENDPOINT';

/** Environment variables set by the construct and read by the handler and the runtime client. */
export const Env = {
  /** Name of the serving table: set on the sync function and by `PromptServingTable.addReader(fn)`. */
  tableName: ENV_TABLE_NAME,
  /** Sync handler: `bedrock` or `directory`. */
  sourceType: 'PROMPT_SERVING_SOURCE',
  /** Sync handler: JSON options of the source (see sync/sources). */
  sourceOptions: 'PROMPT_SERVING_SOURCE_OPTIONS',
  /** Sync handler: CloudWatch namespace of the Embedded Metric Format metrics. */
  metricsNamespace: 'PROMPT_SERVING_METRICS_NAMESPACE',
  /** `host:port` of the L2 cache (Valkey/Redis); its presence turns the L2 on in both runtime clients. */
  cacheEndpoint: ENV_CACHE_ENDPOINT,
  /** `true` | `false` (default `true`): TLS to the cache. */
  cacheTls: 'PROMPT_SERVING_CACHE_TLS',
  /** `iam` | `none` (default `iam`): how a client authenticates to the cache. */
  cacheAuth: 'PROMPT_SERVING_CACHE_AUTH',
  /** The ElastiCache user id a client authenticates as (IAM auth). */
  cacheUser: 'PROMPT_SERVING_CACHE_USER',
  /** The cache's name: the host an IAM auth token is signed for. */
  cacheName: 'PROMPT_SERVING_CACHE_NAME',
  /** `ServerlessCache` | `ReplicationGroup` (default `ServerlessCache`): adds `ResourceType=ServerlessCache` to the IAM token. */
  cacheResourceType: 'PROMPT_SERVING_CACHE_RESOURCE_TYPE',
  /** `true` | `false` (default `true`): the endpoint is a cluster-mode endpoint (a serverless cache is). */
  cacheCluster: 'PROMPT_SERVING_CACHE_CLUSTER',
} as const;

/** Values of {@link Env.cacheAuth}. */
export const CACHE_AUTH_IAM = 'iam';
export const CACHE_AUTH_NONE = 'none';
/** Values of {@link Env.cacheResourceType}: the IAM token scheme differs between them. */
export const CACHE_RESOURCE_SERVERLESS = 'ServerlessCache';
export const CACHE_RESOURCE_REPLICATION_GROUP = 'ReplicationGroup';

/**
 * The value of a variable the construct sets on a handler it ships, or an error naming it. `handler` names the
 * function in the message (`sync function`, `invalidation function`), so a log line says whose setup is wrong.
 */
export function requireEnv(name: string, handler: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`cdk-prompt-serving ${handler}: environment variable ${name} is not set (the PromptServingTable construct sets it)`);
  return value;
}
