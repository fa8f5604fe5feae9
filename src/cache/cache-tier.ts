import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { CacheBinding } from './binding';
import type { CacheTierParts } from './cache-metrics';
import { createInvalidation } from './invalidation';

/**
 * The table's stream: on only with a cache, new images only (the invalidation writes the new pointer through).
 * Replicas (global tables) need both images, which serve the invalidation just as well.
 */
export function cacheStreamViewType(hasCache: boolean, hasReplicas = false): dynamodb.StreamViewType | undefined {
  if (!hasCache) {
    return undefined;
  }
  return hasReplicas ? dynamodb.StreamViewType.NEW_AND_OLD_IMAGES : dynamodb.StreamViewType.NEW_IMAGE;
}

/** A `PromptCache` as this folder sees it (taken structurally, so the helpers do not import the public class). */
export interface BindableCache {
  _bind(scope: Construct, tableName: string): CacheBinding;
}

/** The cache tier of a table: the cache's resources, the invalidation function and its dead-letter queue. */
export interface CacheTier extends CacheTierParts {
  readonly binding: CacheBinding;
}

/** Binds `cache` in `scope` for `table` (whose stream `cacheStreamViewType` turned on) and wires the invalidation. */
export function createCacheTier(scope: Construct, cache: BindableCache, table: dynamodb.TableV2): CacheTier {
  const binding = cache._bind(scope, table.tableName);
  const invalidation = createInvalidation(scope, binding, table);
  return {
    binding,
    cache: binding.cache,
    invalidationFunction: invalidation.fn,
    invalidationDeadLetterQueue: invalidation.deadLetterQueue,
  };
}
