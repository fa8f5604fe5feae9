import type { Construct } from 'constructs';
import type { CacheBinding } from './cache/binding';
import { bindExistingCache, validateExistingCacheOptions } from './cache/existing-cache';
import { bindReplicationGroupCache, validateReplicationGroupOptions } from './cache/replication-group-cache';
import { bindServerlessCache, validateServerlessOptions } from './cache/serverless-cache';
import { validateCommonCacheOptions } from './cache/validate-cache';
import type {
  ExistingPromptCacheOptions,
  ReplicationGroupPromptCacheOptions,
  ServerlessPromptCacheOptions,
} from './prompt-cache-options';

/**
 * An optional ElastiCache for Valkey tier in front of a `PromptServingTable`: readers (`addReader`) share it,
 * the table's stream keeps it fresh through an invalidation function. TLS and IAM authentication always.
 */
export abstract class PromptCache {
  /**
   * An ElastiCache Serverless cache, engine Valkey, in the VPC's private subnets: TLS, IAM authentication only,
   * one user for readers and one for the invalidation function, each limited to this table's keys and the
   * commands it needs; its own security group, with no ingress but from the invalidation function until
   * `addReader` opens it to a reader.
   */
  public static serverless(options: ServerlessPromptCacheOptions): PromptCache {
    validateCommonCacheOptions(options);
    validateServerlessOptions(options);
    return new (class extends PromptCache {
      public _bind(scope: Construct, tableName: string): CacheBinding {
        return bindServerlessCache(scope, options, tableName);
      }
    })();
  }

  /**
   * A node-based Valkey replication group (cluster mode disabled: one shard, a primary and `replicas` read
   * replicas), with encryption in transit (required) and at rest, IAM authentication only through the same
   * two users as `serverless()`. Priced per node-hour rather than per use.
   */
  public static replicationGroup(options: ReplicationGroupPromptCacheOptions): PromptCache {
    validateCommonCacheOptions(options);
    validateReplicationGroupOptions(options);
    return new (class extends PromptCache {
      public _bind(scope: Construct, tableName: string): CacheBinding {
        return bindReplicationGroupCache(scope, options, tableName);
      }
    })();
  }

  /**
   * A Valkey or Redis OSS cache made elsewhere, with TLS and two IAM-authenticated users (see
   * `ExistingPromptCacheOptions`). The construct creates no cache resource; it grants `elasticache:Connect`,
   * opens the security groups to readers and the invalidation function, and sets the environment.
   */
  public static fromExisting(options: ExistingPromptCacheOptions): PromptCache {
    validateCommonCacheOptions(options);
    validateExistingCacheOptions(options);
    return new (class extends PromptCache {
      public _bind(scope: Construct, tableName: string): CacheBinding {
        return bindExistingCache(scope, options, tableName);
      }
    })();
  }

  private constructor() {}

  /**
   * Creates the cache's resources in `scope` for the table named `tableName`.
   *
   * @internal
   */
  public abstract _bind(scope: Construct, tableName: string): CacheBinding;
}
