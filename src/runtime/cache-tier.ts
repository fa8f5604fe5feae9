/**
 * `cacheTier(store)`: the cache tier over a store, for the `l2` option. A reader that passes no `l2` bundles none of
 * this; the environment's cache (the construct's cache tier) is loaded from the reader layer with the same code
 * (cache-layer.ts). What it adds to the core: the L2 in front of the table (tiers.ts), the epoch watch (epoch.ts,
 * cache-setup.ts) and the re-validation of the copies in memory when the epoch moves.
 */
import { watchEpoch } from './cache-setup';
import type { Catalog } from './catalog';
import type { EpochWatcher } from './epoch';
import { PromptCacheL2, withTimeout } from './l2';
import type { ReadPath } from './read-path';
import { warmTableReads } from './table-warm-up';
import { AttachedTier, PromptCacheTier, TIER_PROTOCOL, TierDeps } from './tier';
import { CacheFirstReader } from './tiers';
import { compareTokens } from '../schema/l2';

/**
 * The cache tier over `store` (Valkey/Redis or your own `PromptCacheL2`): pass it as the client's `l2`.
 *
 * @example
 * import { cacheTier, PromptClient } from 'cdk-prompt-serving/runtime';
 * const prompts = new PromptClient({ l2: cacheTier(myStore) });
 */
export function cacheTier(store: PromptCacheL2): PromptCacheTier {
  return { store, protocol: TIER_PROTOCOL, attach: (deps) => attachTier(store, deps, false) };
}

/** The tier over `store` for one client (`owned`: the client closes the store in `close()`). */
export function attachTier(store: PromptCacheL2, deps: TierDeps, owned: boolean): AttachedTier {
  const { options, counters, table } = deps;
  let epoch: EpochWatcher | undefined;
  const reader = new CacheFirstReader(table, counters, {
    l2: store,
    ...options,
    incarnation: () => epoch?.incarnation,
    epochReady: () => epoch?.ready() ?? Promise.resolve(),
  });
  return {
    reader,
    l2: store,
    owned,
    start(path, catalog, onChecked) {
      if (store.writeThrough === true) {
        epoch = watchEpoch(store, options, () => revalidate(path, catalog, reader, deps), onChecked);
        epoch.start();
      }
      // A reader the L2 serves makes its first table read when the cache fails: warm the SDK before that, once the
      // L2's first connection is settled (not during it, which would slow this reader's start).
      const ready = store.ready;
      if (ready !== undefined) {
        void withTimeout(() => ready.call(store), options.l2ConnectTimeoutMs).catch(() => undefined)
          .then(() => warmTableReads(deps)).catch(() => undefined);
      }
      return epoch;
    },
  };
}

/**
 * The epoch moved: every copy that can change (not exact versions) is compared with the L2's stream value (one GET
 * each, no table read): replaced by a different one (the stream's is the newest applied), kept fresh by the same one,
 * and otherwise marked for re-validation — never dropped, so it stays the last good copy for stale-if-error until a
 * newer one is in hand. Not-found answers are forgotten and the catalog is re-read (from the L2).
 */
async function revalidate(path: ReadPath, catalog: Catalog, reader: CacheFirstReader, deps: TierDeps): Promise<void> {
  const { counters, options } = deps;
  path.generation++;
  path.notFound.clear();
  const checks = [...path.prompts.values()].filter((e) => !e.immutable).map(async (entry) => {
    const shared = await reader.readShared(entry.target.promptId, entry.target.sortKey, false, true);
    if (path.prompts.get(entry.key) !== entry) return; // replaced meanwhile
    if (shared?.token === undefined) {
      entry.invalidated = true;
    } else if (entry.token !== undefined && compareTokens(shared.token, entry.token) === 0) {
      entry.expiresAt = Math.max(entry.expiresAt, Date.now() + options.maxAgeMs);
      entry.invalidated = false;
    } else {
      counters.revalidations++;
      try {
        path.accept(entry.target, shared);
      } catch (err) {
        // A value that breaks the contract (by `name`, not `instanceof`: a tier from the reader layer has its own classes).
        if ((err as Error)?.name !== 'PromptNotFoundError') entry.invalidated = true;
      }
    }
  });
  await Promise.all([...checks, catalog.refresh(undefined, true)]);
  counters.epochMoves++; // counted once every copy was re-validated
}
