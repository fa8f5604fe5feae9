/**
 * Turns the L2 on from the environment contract (src/schema/env.ts), as the construct's `addReader` sets it:
 * `PROMPT_SERVING_CACHE_ENDPOINT` present → the built-in Valkey adapter (./valkey.ts), loaded only then, at run
 * time, from the reader layer (or beside this file when not bundled), and node-redis with it.
 */
import { createRequire } from 'node:module';
import { PromptServingError } from './errors';
import type { AwsCredentials } from './iam-token';
import type * as Valkey from './valkey';
import { CACHE_AUTH_IAM, CACHE_AUTH_NONE, CACHE_RESOURCE_REPLICATION_GROUP, CACHE_RESOURCE_SERVERLESS, Env } from '../schema/env';

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
 * The module name of the built-in adapter (./valkey.ts) in the reader layer `addReader` attaches
 * (`/opt/nodejs/node_modules/cdk-prompt-serving-cache`, on `NODE_PATH`; docs/adr/0003-reader-layer.md).
 */
export const ADAPTER_MODULE = 'cdk-prompt-serving-cache';
/** Where the adapter sits beside this file in the package (lib/runtime/valkey.js): found when nothing bundled it away. */
const ADAPTER_BESIDE = './valkey';

/**
 * The built-in Valkey adapter (./valkey.ts), loaded only when the cache is configured, by module names bundlers do
 * not follow, so a reader bundle never carries it: from the reader layer, else from beside this file (the package used
 * as installed, and this project's tests). Throws when neither has it (a bundled reader without the layer).
 */
export function loadAdapter(): typeof Valkey {
  const base = typeof __filename === 'string' && __filename ? __filename : `${process.env.LAMBDA_TASK_ROOT ?? process.cwd()}/index.js`;
  try {
    return createRequire(base)(ADAPTER_MODULE) as typeof Valkey;
  } catch (err) {
    // `require` with a variable: CommonJS as installed (and jest) resolve it, bundlers leave it alone.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    if (typeof require === 'function') return require(ADAPTER_BESIDE) as typeof Valkey;
    throw err;
  }
}
