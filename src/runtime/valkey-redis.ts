/**
 * node-redis for the built-in Valkey adapter (./valkey.ts): loaded at run time, by a module name bundlers do not
 * follow, so a reader bundle never carries it. A cache reader gets it from the construct's reader layer, which
 * `addReader` attaches (`/opt/nodejs/node_modules/redis`, on `NODE_PATH`: `@redis/client` with the commands the adapter
 * sends, one 150 KB file, scripts/build-layer.ts), or from a `node_modules` beside its bundle. The invalidation
 * function imports it statically and hands it over ({@link useRedisModule}).
 */
import { createRequire } from 'node:module';
import type * as Redis from 'redis';

/**
 * The module name of node-redis, held in a variable so that bundlers (esbuild, `NodejsFunction`) leave the
 * load to run time instead of copying node-redis into every reader's bundle.
 */
const REDIS_MODULE: string = 'redis';
let redisModule: Promise<typeof Redis> | undefined;
let loadedRedis: typeof Redis | undefined;
let loadError: L2UnavailableError | undefined;

/** The fix for a function that cannot load node-redis, said in the one ERROR line and in the error. */
const REDIS_LOAD_FIX = 'attach the reader layer (addReader does, unless the function\'s own `layers` replace it) or ship `redis` '
  + "beside the bundle (nodeModules: ['redis'])";

/** Thrown by calls while there is no usable connection (the reader goes on to the table). */
export class L2UnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'L2UnavailableError';
  }
}

/**
 * Hands the adapter node-redis itself, imported statically by the caller so that its bundler ships it (the
 * invalidation function does: its asset carries node-redis).
 */
export function useRedisModule(mod: typeof Redis): void {
  loadedRedis = mod;
  redisModule = Promise.resolve(mod);
  loadError = undefined;
}

/** Why node-redis could not be loaded, if the last attempt failed. */
export function redisLoadError(): L2UnavailableError | undefined {
  return loadError;
}

/** node-redis, loaded on the first connection; a clear error naming the fix when the function lacks it. */
export function loadRedis(moduleName: string = REDIS_MODULE): Promise<typeof Redis> {
  redisModule ??= requireAtRunTime(moduleName).then((mod) => {
    loadedRedis = mod as typeof Redis;
    loadError = undefined;
    return loadedRedis;
  }, (err: unknown) => {
    redisModule = undefined;
    loadError = new L2UnavailableError(`node-redis (redis) cannot be loaded: ${REDIS_LOAD_FIX}; reads go to the table (${(err as Error)?.message?.split('\n')[0]})`);
    throw loadError;
  });
  return redisModule;
}

/**
 * Loads `name` with a CommonJS `require` made by `createRequire`, in the CommonJS and the ES module builds alike:
 * unlike an ES `import`, it honours `NODE_PATH`, where Lambda puts layers (`/opt/nodejs/node_modules`), and it
 * also finds a `node_modules` beside the bundle (the function's task root).
 */
function requireAtRunTime(name: string): Promise<unknown> {
  try {
    const base = typeof __filename === 'string' && __filename ? __filename : `${process.env.LAMBDA_TASK_ROOT ?? process.cwd()}/index.js`;
    return Promise.resolve(createRequire(base)(name));
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * The subset of node-redis both `createClient` and `createCluster` give us. The reader layer's node-redis carries only
 * the commands named in `ADAPTER_REDIS_COMMANDS` (scripts/build-layer.ts): a command added here goes there too
 * (test/runtime/layer-redis.test.ts checks the layer's clients for every method).
 */
export interface Conn {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, options: { EX: number }): Promise<unknown>;
  del(key: string): Promise<number>;
  incr(key: string): Promise<number>;
  ping?(): Promise<unknown>;
  sendCommand?(firstKey: undefined, isReadonly: boolean, args: string[]): Promise<unknown>;
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  connect(): Promise<unknown>;
  destroy(): void;
  on(event: 'error', listener: (err: unknown) => void): unknown;
}

/** Whether `err` is the server's answer (an error reply: the cache is there), not a failure to reach it. */
export function isReply(err: unknown): boolean {
  return loadedRedis !== undefined && err instanceof loadedRedis.ErrorReply;
}

/**
 * Whether `err` is a login the cache refused (an ACL user deleted or disabled, a bad password or IAM token): the
 * error replies Valkey gives `AUTH`/`HELLO` (the Python client's `is_auth_failure` knows the same three).
 */
export function isLoginRefused(err: unknown): boolean {
  return isReply(err) && /^(WRONGPASS|NOAUTH)|invalid username-password pair/.test((err as Error).message);
}
