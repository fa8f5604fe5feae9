/**
 * Turns the L2 on from the environment contract (src/schema/env.ts), as the construct's `addReader` sets it:
 * `PROMPT_SERVING_CACHE_ENDPOINT` present → the built-in Valkey adapter, loaded only then (node-redis is an
 * optional dependency; a function without the cache never evaluates it).
 */
import { PromptServingError } from './errors';
import type { AwsCredentials } from './iam-token';
import { redisLoadError, ValkeyConfig, ValkeyL2 } from './valkey';
import { CACHE_AUTH_IAM, CACHE_AUTH_NONE, CACHE_RESOURCE_REPLICATION_GROUP, CACHE_RESOURCE_SERVERLESS, Env } from '../schema/env';
import { READER_METRICS_DIMENSION, READER_METRICS_NAMESPACE, ReaderMetric } from '../schema/metrics';

/** Where AWS credentials and the Region come from (a `DynamoDBClient`'s resolved config has both). */
export interface AwsIdentity {
  readonly credentials: () => Promise<AwsCredentials>;
  readonly region: () => Promise<string>;
}

/** The adapter's settings from the environment; `undefined` when the endpoint variable is not set. Throws naming the variable. */
export function cacheConfigFromEnv(env: NodeJS.ProcessEnv, identity: AwsIdentity): Omit<ValkeyConfig, 'onError'> | undefined {
  const endpoint = env[Env.cacheEndpoint]?.trim();
  if (!endpoint) return undefined;
  const match = /^(.+):(\d{1,5})$/.exec(endpoint);
  if (!match) throw new PromptServingError(`${Env.cacheEndpoint}=${JSON.stringify(endpoint)} must be host:port`);
  // One of `allowed` (the first when unset); flags compare case-insensitively. The message names the variable.
  const oneOf = (name: string, allowed: string[], fold = false): string => {
    const raw = env[name]?.trim();
    const value = fold ? raw?.toLowerCase() : raw;
    if (!value) return allowed[0];
    if (!allowed.includes(value)) throw new PromptServingError(`${name}=${JSON.stringify(fold ? env[name] : value)} must be ${allowed.join(' or ')}`);
    return value;
  };
  const flag = (name: string): boolean => oneOf(name, ['true', 'false'], true) === 'true';
  const auth = oneOf(Env.cacheAuth, [CACHE_AUTH_IAM, CACHE_AUTH_NONE]);
  const resourceType = oneOf(Env.cacheResourceType, [CACHE_RESOURCE_SERVERLESS, CACHE_RESOURCE_REPLICATION_GROUP]);
  const required = (name: string): string => {
    const value = env[name]?.trim();
    if (!value) throw new PromptServingError(`${name} must be set when ${Env.cacheAuth} is ${CACHE_AUTH_IAM} (the construct sets it)`);
    return value;
  };
  let iam: ValkeyConfig['iam'];
  if (auth === CACHE_AUTH_IAM) {
    const userId = required(Env.cacheUser);
    const cacheName = required(Env.cacheName);
    iam = {
      userId,
      cacheName,
      serverless: resourceType === CACHE_RESOURCE_SERVERLESS,
      credentials: identity.credentials,
      region: identity.region,
    };
  }
  return {
    host: match[1], port: Number(match[2]), tls: flag(Env.cacheTls), cluster: flag(Env.cacheCluster), iam,
  };
}

/** What a reader does when it runs without the L2 it was configured for. */

/**
 * The built-in adapter for `config` (node-redis is loaded by its first connection, never before). If the first connection
 * cannot be made (node-redis missing, or the cache unreachable), the reader says so loudly, once: one ERROR log
 * line naming the fix that is also an Embedded Metric Format record of `ReaderCacheUnavailable` (the cache tier's
 * alarm watches it; dimension `tableName`), and `onUnavailable` (the client's `stats().l2Unavailable`). Reads go on to
 * the table.
 */
export function createValkeyL2(config: ValkeyConfig, tableName?: string, onUnavailable?: () => void): ValkeyL2 {
  const l2 = new ValkeyL2(config);
  void l2.ready().then(() => {
    if (l2.isConnected) return;
    const loadError = redisLoadError();
    const reason = loadError?.message ?? `the cache at ${config.host}:${config.port} cannot be reached (check the function's VPC, `
      + 'security group and elasticache:Connect, which addReader sets); reads go to the table';
    onUnavailable?.();
    logUnavailable(reason, tableName ?? process.env[Env.tableName] ?? '');
  });
  return l2;
}

/** One JSON line on stdout: level ERROR, the reason with its fix, and the EMF record of the metric. */
export function logUnavailable(reason: string, tableName: string, now = Date.now()): void {
  const metric = ReaderMetric.cacheUnavailable;
  // process.stdout, not console: Lambda prefixes console lines, and CloudWatch then no longer reads them as EMF.
  process.stdout.write(JSON.stringify({
    level: 'ERROR',
    message: `cdk-prompt-serving: ${Env.cacheEndpoint} is set but ${reason}`,
    _aws: { Timestamp: now, CloudWatchMetrics: [{ Namespace: READER_METRICS_NAMESPACE, Dimensions: [[READER_METRICS_DIMENSION]], Metrics: [{ Name: metric, Unit: 'Count' }] }] },
    [READER_METRICS_DIMENSION]: tableName,
    [metric]: 1,
  }) + '\n');
}
