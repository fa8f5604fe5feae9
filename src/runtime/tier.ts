/**
 * The seam between the core client and the cache tier (docs/adr/0007-reader-paid-for-by-use.md): the core names only
 * these types and the protocol number. The tier itself (tiers.ts, the epoch watch, the L2 formats, the cache
 * environment) comes with `cacheTier(store)` (cache-tier.ts) when a reader passes its own store, or from the reader
 * layer with the cache adapter when the cache environment is set (cache-layer.ts); a reader with neither bundles none
 * of it.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Catalog } from './catalog';
import type { PromptServingError } from './errors';
import type { PromptCacheL2 } from './l2';
import type { ReadPath } from './read-path';
import type { ResolvedOptions } from './resolved-options';
import type { Counters } from './stats';
import type { ItemReader, TableItemReader } from './store';

/**
 * The version of {@link TierDeps} and {@link AttachedTier}. The reader layer's tier is built with the layer, the core
 * with the function: a layer whose number differs is not used (one log line; reads go to the table), never called.
 */
export const TIER_PROTOCOL = 2;

/** What the core gives a tier. */
export interface TierDeps {
  readonly protocol: number;
  /**
   * The table reader the tier reads through on a miss (the core's: its errors are the core's), with the SDK commands
   * it sends (`commands`, since protocol 2: the tier warms their path before the cache can fail).
   */
  readonly table: TableItemReader;
  readonly dynamoDB: DynamoDBClient;
  /**
   * Whether `dynamoDB` is the client the core made itself (no `dynamoDBClient` option): its HTTP handler is the SDK's
   * default, which the tier's warm-up may run against a server inside the process. Absent from a core before it.
   */
  readonly ownClient?: boolean;
  readonly options: ResolvedOptions;
  readonly counters: Counters;
  /** The core's error for bad input (a cache environment variable out of its range), so `instanceof` holds. */
  readonly error: (message: string) => PromptServingError;
}

/** The epoch watch as the core uses it. */
export interface TierEpoch {
  /** Reads the epoch now (re-validating when it moved); never rejects. */
  check(): Promise<void>;
  stop(): void;
}

/** A tier attached to one client. */
export interface AttachedTier {
  /** The L2 in front of the table. */
  readonly reader: ItemReader;
  readonly l2: PromptCacheL2;
  /** Whether the client closes the L2 in `close()` (the one it built from the environment). */
  readonly owned: boolean;
  /**
   * Once the read path exists: starts the epoch watch of a written-through L2 (`undefined` otherwise) and the warm-up
   * of the table's request path after the L2's first connection. `onChecked` is told after every epoch check until when copies
   * may be served without one more.
   */
  start(path: ReadPath, catalog: Catalog, onChecked: (trustedUntil: number) => void): TierEpoch | undefined;
}

/** What the `l2` option takes: `cacheTier(store)` from 'cdk-prompt-serving/runtime'. */
export interface PromptCacheTier {
  /** The store the tier reads and fills. */
  readonly store: PromptCacheL2;
  /** @internal */
  readonly protocol: number;
  /** @internal */
  attach(deps: TierDeps): AttachedTier;
}
