/**
 * Turns the L2 on from the environment contract (src/schema/env.ts), as the construct's `addReader` sets it:
 * `PROMPT_SERVING_CACHE_ENDPOINT` present → the cache tier and the built-in Valkey adapter (./cache-layer.ts), loaded
 * only then, at run time, from the reader layer (or beside this file when not bundled), and node-redis with it. The
 * core uses `environmentTier` and `loadAdapter` alone; `cacheConfigFromEnv` runs in the layer.
 */
import { createRequire } from 'node:module';
import { PromptServingError } from './errors';
import type { AwsCredentials } from './iam-token';
import { AttachedTier, TIER_PROTOCOL, TierDeps } from './tier';
import { logUnavailable } from './unavailable';
import type * as Valkey from './valkey';
import {
  CACHE_AUTH_IAM, CACHE_AUTH_NONE, CACHE_RESOURCE_REPLICATION_GROUP, CACHE_RESOURCE_SERVERLESS, Env, ENV_CACHE_ENDPOINT, ENV_TABLE_NAME,
} from '../schema/env';

/** Where AWS credentials and the Region come from (a `DynamoDBClient`'s resolved config has both). */
export interface AwsIdentity {
  readonly credentials: () => Promise<AwsCredentials>;
  readonly region: () => Promise<string>;
}

/** The adapter's settings from the environment; `undefined` when the endpoint variable is not set. Throws naming the variable. */
export function cacheConfigFromEnv(env: NodeJS.ProcessEnv, identity: AwsIdentity): Omit<Valkey.ValkeyConfig, 'onError'> | undefined {
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
  let iam: Valkey.ValkeyConfig['iam'];
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

/**
 * The reader layer's module (cache-layer.ts) as the core sees it: described here rather than imported, as any release's
 * layer may be found; only a layer of this client's {@link TIER_PROTOCOL} is called.
 */
interface LayerModule {
  readonly TIER_PROTOCOL?: unknown;
  readonly tierFromEnvironment?: (deps: TierDeps) => AttachedTier | undefined;
}

/**
 * The cache tier of the environment's cache, when the cache environment is set for this client's table and the reader
 * layer's tier loads and speaks this client's protocol; `undefined` otherwise (reads go to the table, with one log line
 * when the cache was configured). The environment's cache belongs to the environment's table
 * (`PROMPT_SERVING_TABLE_NAME`): its reader user may read only that table's keys, so a client given another table never
 * uses it (it would be refused on every read, then read the table anyway).
 */
export function environmentTier(deps: TierDeps): AttachedTier | undefined {
  const { options, counters } = deps;
  if (process.env[ENV_TABLE_NAME] !== options.tableName || !process.env[ENV_CACHE_ENDPOINT]?.trim()) return undefined;
  let layer: LayerModule;
  try {
    layer = loadAdapter();
  } catch (err) {
    // A bundled reader without the reader layer: loudly, once; reads go to the table.
    counters.l2Unavailable++;
    logUnavailable('node-redis (redis) cannot be loaded: attach the reader layer (addReader does, unless the function\'s own `layers` '
      + `replace it); reads go to the table (${String((err as Error)?.message ?? err).split('\n')[0]})`, options.tableName);
    return undefined;
  }
  if (layer.TIER_PROTOCOL !== TIER_PROTOCOL || typeof layer.tierFromEnvironment !== 'function') {
    // Version skew: a layer of another release of this package. Never called: its tier may expect another core.
    counters.l2Unavailable++;
    logUnavailable(`the reader layer's cache tier (${ADAPTER_MODULE}) speaks protocol ${String(layer.TIER_PROTOCOL)} and this client `
      + `${TIER_PROTOCOL}: attach the layer of this client's cdk-prompt-serving version (addReader does); reads go to the table`,
    options.tableName);
    return undefined;
  }
  return layer.tierFromEnvironment(deps);
}

/**
 * The module name of the built-in adapter (./valkey.ts) in the reader layer `addReader` attaches
 * (`/opt/nodejs/node_modules/cdk-prompt-serving-cache`, on `NODE_PATH`; docs/adr/0003-reader-layer.md).
 */
export const ADAPTER_MODULE = 'cdk-prompt-serving-cache';
/** Where the layer's module sits beside this file in the package (lib/runtime/cache-layer.js): found when nothing bundled it away. */
const ADAPTER_BESIDE = './cache-layer';

/**
 * The built-in Valkey adapter (./valkey.ts), loaded only when the cache is configured, by module names bundlers do
 * not follow, so a reader bundle never carries it: from the reader layer, else from beside this file (the package used
 * as installed, and this project's tests). Throws when neither has it (a bundled reader without the layer).
 */
export function loadAdapter(): LayerModule {
  const here = typeof __filename === 'string' && __filename ? __filename : undefined;
  const load = createRequire(here ?? `${process.env.LAMBDA_TASK_ROOT ?? process.cwd()}/index.js`);
  try {
    return load(ADAPTER_MODULE) as LayerModule;
  } catch (err) {
    // Beside this file, through `createRequire` (jest's too), never a bare `require`: in the ES module build that
    // would cost every reader esbuild's `require` shim, and there is no "beside" to resolve from anyway.
    if (here !== undefined) return load(ADAPTER_BESIDE) as LayerModule;
    throw err;
  }
}
