import type { Duration, Size } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { PromptServingAlarmOptions } from './alarms';

/*
 * The public types of the cache tier: the options of `PromptCache`'s factories and the cache as a table exposes
 * it. Types only (no construct code), so the helpers in src/cache/ import them without importing `PromptCache`.
 */

/** Which kind of ElastiCache resource a cache is: the IAM auth token and the metrics differ between them. */
export enum PromptCacheResourceType {
  /** An ElastiCache Serverless cache (`AWS::ElastiCache::ServerlessCache`): a cluster-mode endpoint. */
  SERVERLESS_CACHE = 'ServerlessCache',

  /** A node-based replication group (`AWS::ElastiCache::ReplicationGroup`). */
  REPLICATION_GROUP = 'ReplicationGroup',
}

/**
 * The cache tier of a `PromptServingTable`, as its readers and the invalidation function see it.
 */
export interface IPromptServingCache extends ec2.IConnectable {
  /** The cache's name (serverless cache name or replication group id): the host IAM auth tokens are signed for. */
  readonly cacheName: string;

  /** The cache's ARN, the resource of `elasticache:Connect`. */
  readonly cacheArn: string;

  /** Which kind of ElastiCache resource the cache is. */
  readonly resourceType: PromptCacheResourceType;

  /** DNS name of the endpoint readers and the invalidation function connect to. */
  readonly endpointAddress: string;

  /** Port of that endpoint. */
  readonly endpointPort: number;

  /** Whether the endpoint is a cluster-mode endpoint (a serverless cache's is). */
  readonly clusterMode: boolean;

  /** The VPC the cache is in: readers must be in it too. */
  readonly vpc: ec2.IVpc;

  /** The ElastiCache user (IAM authentication) readers connect as: read, fill and poll the epoch only. */
  readonly readerUserId: string;

  /** ARN of the reader user, the second resource of a reader's `elasticache:Connect`. */
  readonly readerUserArn: string;

  /** The ElastiCache user (IAM authentication) the invalidation function connects as: it also bumps the epoch. */
  readonly writerUserId: string;

  /** ARN of the writer user. */
  readonly writerUserArn: string;
}

/** Options every kind of cache shares: where it lives, how the stream keeps it fresh, and its alarms. */
export interface PromptCacheOptions {
  /**
   * The VPC of the cache. Readers (`addReader`) must be Lambda functions in this VPC; the invalidation
   * function is placed in it too.
   */
  readonly vpc: ec2.IVpc;

  /**
   * Subnets of the cache's endpoints and of the invalidation function: private subnets in at least two
   * Availability Zones.
   *
   * @default - the VPC's private subnets with egress, or its isolated subnets when it has none
   */
  readonly vpcSubnets?: ec2.SubnetSelection;

  /**
   * Whether to add a DynamoDB gateway endpoint to the VPC, so readers in private subnets reach the table
   * without a NAT gateway. Leave it off when the VPC already has one (a route table takes one per service).
   *
   * @default false
   */
  readonly dynamoDbGatewayEndpoint?: boolean;

  /**
   * Most stream records handed to one invocation of the invalidation function: 1 to 10,000.
   *
   * @default 100
   */
  readonly invalidationBatchSize?: number;

  /**
   * How many times a failing batch of stream records is retried (each retry bisects it, so one poison record
   * ends up alone) before its position goes to the invalidation dead-letter queue: 0 to 10,000.
   *
   * @default 5
   */
  readonly invalidationRetryAttempts?: number;

  /**
   * Oldest stream record the invalidation function still processes; older ones go to the dead-letter queue
   * (readers then see the change when their in-process copy expires): 1 minute to 7 days, whole seconds.
   *
   * @default Duration.hours(1)
   */
  readonly invalidationMaxRecordAge?: Duration;

  /**
   * Alarm on failed invalidation invocations: the invalidation function's `Errors` Sum ≥ 1 in one 5-minute
   * period (missing data is not breaching).
   *
   * @default - on, with those settings (when the table's `createAlarms` is not false)
   */
  readonly invalidationFunctionErrorsAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on the invalidation falling behind the table: the invalidation function's `IteratorAge` Maximum
   * ≥ 60,000 ms in one 5-minute period (missing data is not breaching).
   *
   * @default - on, with those settings (when the table's `createAlarms` is not false)
   */
  readonly invalidationIteratorAgeAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on stream batches parked in the invalidation dead-letter queue: `ApproximateNumberOfMessagesVisible`
   * Maximum ≥ 1 in one 5-minute period; missing data keeps the state.
   *
   * @default - on, with those settings (when the table's `createAlarms` is not false)
   */
  readonly invalidationDeadLetterQueueAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on a serverless cache throttling commands (scaling slower than the load grows, or at
   * `maxEcpuPerSecond`): `ThrottledCmds` Sum ≥ 1 in one 5-minute period (missing data is not breaching).
   * Serverless caches only: node-based caches do not publish this metric.
   *
   * @default - on, with those settings, for serverless caches (when the table's `createAlarms` is not false)
   */
  readonly throttledCmdsAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on readers running without the cache: the readers' `ReaderCacheUnavailable` metric (namespace
   * `CdkPromptServing`, dimension `TableName`; each Node or Python reader emits it once, with an ERROR log line
   * naming the fix, when its cache client cannot be loaded or the cache cannot be reached) Sum ≥ 1 in one
   * 5-minute period (missing data is not breaching). Such readers serve from the table.
   *
   * @default - on, with those settings (when the table's `createAlarms` is not false)
   */
  readonly readerCacheUnavailableAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on a write-through that did not land: the invalidation function's `WriteThroughDrops` (values it could
   * not write, cache full or wrong type, and deleted instead) plus `WriteThroughFailures` (records it reported back
   * to Lambda as failed, which Lambda's `Errors` metric does not count), namespace `CdkPromptServing`, dimension
   * `TableName`, Sum ≥ 1 in one 5-minute period (missing data is not breaching). Readers stay correct (a dropped
   * key is read from the table; a failed record is retried), but the cache saves less, or a change waits for the retry.
   *
   * @default - on, with those settings (when the table's `createAlarms` is not false)
   */
  readonly writeThroughAlarm?: PromptServingAlarmOptions;
}

/** Options for `PromptCache.serverless()`. */
export interface ServerlessPromptCacheOptions extends PromptCacheOptions {
  /**
   * Name of the serverless cache: 1 to 40 lowercase letters, digits and hyphens, starting with a letter, no
   * two hyphens in a row, not ending with a hyphen.
   *
   * @default - a name generated from the construct path
   */
  readonly cacheName?: string;

  /**
   * Valkey major version of the cache, pinned so that a library upgrade never changes it by itself.
   *
   * @default '8'
   */
  readonly majorEngineVersion?: string;

  /**
   * Cost cap: the most data the cache may hold, in whole GB (1 to 5,000). Only a maximum is set: a minimum
   * would be billed whether used or not. At the cap, the cache evicts keys (readers then read the table).
   *
   * @default - no cap
   */
  readonly maxDataStorage?: Size;

  /**
   * Cost cap: the most ElastiCache Processing Units per second the cache may use (1,000 to 15,000,000). Only a
   * maximum is set: a minimum would be billed whether used or not. At the cap, commands are throttled (see
   * `throttledCmdsAlarm`); readers then read the table.
   *
   * @default - no cap
   */
  readonly maxEcpuPerSecond?: number;

  /**
   * A customer managed KMS key to encrypt the cache's data at rest with.
   *
   * @default - encrypted at rest with an AWS owned key
   */
  readonly encryptionKey?: kms.IKey;
}

/** Options for `PromptCache.replicationGroup()`. */
export interface ReplicationGroupPromptCacheOptions extends PromptCacheOptions {
  /**
   * Id of the replication group: 1 to 40 lowercase letters, digits and hyphens, starting with a letter, no
   * two hyphens in a row, not ending with a hyphen.
   *
   * @default - an id generated from the construct path
   */
  readonly replicationGroupId?: string;

  /**
   * Node type of every node.
   *
   * @default 'cache.t4g.micro'
   */
  readonly cacheNodeType?: string;

  /**
   * Read replicas beside the primary (0 to 5). With at least one, the group fails over automatically across
   * Availability Zones (Multi-AZ).
   *
   * @default 1
   */
  readonly replicas?: number;

  /**
   * Valkey engine version, pinned so that a library upgrade never changes it by itself (7.2 or later: IAM
   * authentication needs it).
   *
   * @default '8.0'
   */
  readonly engineVersion?: string;

  /**
   * A customer managed KMS key to encrypt the nodes' data at rest with.
   *
   * @default - encrypted at rest with an AWS managed key
   */
  readonly encryptionKey?: kms.IKey;
}

/** Options for `PromptCache.fromExisting()`: a cache (and its two users) made outside this construct. */
export interface ExistingPromptCacheOptions extends PromptCacheOptions {
  /** The serverless cache name or replication group id: the host IAM auth tokens are signed for. */
  readonly cacheName: string;

  /**
   * Which kind of ElastiCache resource the cache is.
   *
   * @default PromptCacheResourceType.SERVERLESS_CACHE
   */
  readonly resourceType?: PromptCacheResourceType;

  /** DNS name of the endpoint to connect to (for a replication group, its primary or configuration endpoint). */
  readonly endpointAddress: string;

  /**
   * Port of that endpoint.
   *
   * @default 6379
   */
  readonly endpointPort?: number;

  /**
   * Whether the endpoint is a cluster-mode endpoint.
   *
   * @default - true for a serverless cache, false for a replication group
   */
  readonly clusterMode?: boolean;

  /** The cache's security groups: `addReader` opens the endpoint's ports in them to each reader. */
  readonly securityGroups: ec2.ISecurityGroup[];

  /**
   * An IAM-authenticated user in the cache's user group for readers. Its access string must allow the
   * commands and keys listed in docs/CACHE-CONSTRUCT.md (`l2ReaderAccessRules`: read this table's keys, write its fills).
   */
  readonly readerUserId: string;

  /**
   * An IAM-authenticated user in the cache's user group for the invalidation function (`l2WriterAccessRules`:
   * `L2_WRITER_COMMANDS` on this table's key pattern).
   */
  readonly writerUserId: string;
}
