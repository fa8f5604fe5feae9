/**
 * The reader layer's module (`cdk-prompt-serving-cache`, built by scripts/build-layer.ts): the built-in Valkey adapter
 * (./valkey.ts) and the cache tier (./cache-tier.ts) over it for the environment's cache. The core client loads it
 * only when the cache environment is set (`environmentTier`, ./l2-env.ts), by a module name bundlers do not follow, so
 * no reader bundle carries the tier; a layer whose {@link TIER_PROTOCOL} differs from the core's is not used.
 */
import { attachTier } from './cache-tier';
import { cacheConfigFromEnv } from './l2-env';
import type { AttachedTier, TierDeps } from './tier';
import { createValkeyL2 } from './valkey';

export * from './valkey';
export { TIER_PROTOCOL } from './tier';

/**
 * The tier over the built-in adapter, configured from the environment; `undefined` when the endpoint variable is not
 * set. A variable out of its range throws the core's `PromptServingError` (`deps.error`) naming it.
 */
export function tierFromEnvironment(deps: TierDeps): AttachedTier | undefined {
  const { dynamoDB, options, counters } = deps;
  let config: ReturnType<typeof cacheConfigFromEnv>;
  try {
    config = cacheConfigFromEnv(process.env, {
      credentials: () => dynamoDB.config.credentials(),
      region: () => dynamoDB.config.region(),
    });
  } catch (err) {
    throw deps.error((err as Error).message);
  }
  if (config === undefined) return undefined;
  const store = createValkeyL2({ ...config, connectTimeoutMs: options.l2ConnectTimeoutMs, onError: () => { counters.l2Errors++; } },
    options.tableName,
    () => { counters.l2Unavailable++; });
  return attachTier(store, deps, true);
}
