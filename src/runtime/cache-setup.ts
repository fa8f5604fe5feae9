/**
 * The client's side of the shared cache: the built-in L2 from the environment (the Valkey adapter, loaded from the
 * reader layer) and the watch of the table's freshness epoch. The read path uses the L2 only through
 * `CacheFirstReader` (tiers.ts) and the epoch only through the watcher's `check` and its two callbacks.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EpochWatcher } from './epoch';
import { PromptCacheL2, withTimeout } from './l2';
import { ADAPTER_MODULE, cacheConfigFromEnv, loadAdapter } from './l2-env';
import type { ResolvedOptions } from './options';
import type { Counters } from './stats';
import { logUnavailable } from './unavailable';
import { Env } from '../schema/env';
import { l2EpochKey } from '../schema/l2';

/**
 * The built-in L2 when the cache environment is set for this client's table and the adapter loads; `undefined`
 * otherwise (reads go to the table). The environment's cache belongs to the environment's table
 * (`PROMPT_SERVING_TABLE_NAME`): its reader user may read only that table's keys, so a client given another table
 * never uses it (it would be refused on every read, then read the table anyway).
 */
export function l2FromEnvironment(dynamoDB: DynamoDBClient, options: ResolvedOptions, counters: Counters): PromptCacheL2 | undefined {
  if (process.env[Env.tableName] !== options.tableName) return undefined;
  const config = cacheConfigFromEnv(process.env, {
    credentials: () => dynamoDB.config.credentials(),
    region: () => dynamoDB.config.region(),
  });
  if (config === undefined) return undefined;
  let adapter: ReturnType<typeof loadAdapter>;
  try {
    adapter = loadAdapter();
  } catch (err) {
    // A bundled reader without the reader layer: loudly, once; reads go to the table.
    counters.l2Unavailable++;
    logUnavailable('node-redis (redis) cannot be loaded: attach the reader layer (addReader does, unless the function\'s own `layers` '
      + `replace it), which carries it with the client's cache adapter (${ADAPTER_MODULE}); reads go to the table `
      + `(${String((err as Error)?.message ?? err).split('\n')[0]})`, options.tableName);
    return undefined;
  }
  return adapter.createValkeyL2({ ...config, connectTimeoutMs: options.l2ConnectTimeoutMs, onError: () => { counters.l2Errors++; } },
    options.tableName,
    () => { counters.l2Unavailable++; });
}

/** The epoch watch of a write-through L2 (not started). */
export function watchEpoch(
  l2: PromptCacheL2, options: ResolvedOptions, onMove: () => Promise<void>, onChecked: (trustedUntil: number) => void,
): EpochWatcher {
  const epochKey = l2EpochKey(options.tableName);
  let firstEpochRead = true;
  return new EpochWatcher(
    async () => {
      // The first read waits for the first connection (bounded); cold reads send their own GETs beside it (one
      // round trip), and use a stream value once it names the incarnation.
      if (l2.ready !== undefined) await withTimeout(() => l2.ready!(), options.l2ConnectTimeoutMs).catch(() => undefined);
      // The first read is a start-up round trip (see CacheFirstReader.l2CallTimeoutMs), made at construction.
      const timeoutMs = firstEpochRead ? Math.max(options.l2ConnectTimeoutMs, options.l2TimeoutMs) : options.l2TimeoutMs;
      firstEpochRead = false;
      return withTimeout(() => l2.get(epochKey), timeoutMs);
    },
    options.epochPollIntervalMs,
    onMove,
    onChecked,
  );
}
