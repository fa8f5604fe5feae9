/**
 * The watch of the table's freshness epoch, part of the cache tier (cache-tier.ts; the built-in L2 from the environment
 * is made in the reader layer's module, cache-layer.ts). The read path uses the L2 only through `CacheFirstReader`
 * (tiers.ts) and the epoch only through the watcher's `check` and its two callbacks.
 */
import { EpochWatcher } from './epoch';
import { PromptCacheL2, withTimeout } from './l2';
import type { ResolvedOptions } from './resolved-options';
import { l2EpochKey } from '../schema/l2';

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
