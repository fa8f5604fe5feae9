import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type { IPromptServingCache, PromptCacheOptions } from '../prompt-cache-options';
import type { CacheUsers } from './users';

/** What a `PromptCache` gives a `PromptServingTable` once bound to it. */
export interface CacheBinding {
  /** The cache as readers and the invalidation function see it (exposed as `PromptServingTable.cache`). */
  readonly cache: IPromptServingCache;

  /** Subnets of the invalidation function: the cache's. */
  readonly subnets: ec2.SubnetSelection;

  /** The options every kind of cache shares (invalidation tuning, alarms). */
  readonly options: PromptCacheOptions;
}

/** The parts of a cache this construct created, before they are put together. */
export interface CreatedCache extends Omit<IPromptServingCache,
'vpc' | 'connections' | 'readerUserId' | 'readerUserArn' | 'writerUserId' | 'writerUserArn'> {
  readonly securityGroup: ec2.ISecurityGroup;
  /** The ports readers and the invalidation function connect to. */
  readonly port: ec2.Port;
  readonly users: CacheUsers;
}

/** The binding of a cache this construct created in `subnets`. */
export function createdCacheBinding(created: CreatedCache, options: PromptCacheOptions, subnets: ec2.SubnetSelection): CacheBinding {
  const { securityGroup, port, users, ...cache } = created;
  return {
    cache: {
      ...cache,
      vpc: options.vpc,
      connections: new ec2.Connections({ securityGroups: [securityGroup], defaultPort: port }),
      readerUserId: users.reader.userId,
      readerUserArn: users.reader.attrArn,
      writerUserId: users.writer.userId,
      writerUserArn: users.writer.attrArn,
    },
    subnets,
    options,
  };
}
