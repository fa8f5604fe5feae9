import type { Duration, RemovalPolicy, Size } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { PromptServingAlarmOptions } from './alarms';
import type { PromptCache } from './prompt-cache';
import type { PromptGovernanceOptions } from './prompt-governance';
import type { PromptSource } from './prompt-source';

/** Properties of a `PromptServingTable`. */
export interface PromptServingTableProps {
  /** Where the prompts come from: Amazon Bedrock Prompt Management or a directory of prompt files (see `PromptSource`). */
  readonly source: PromptSource;

  /**
   * Name of the serving table. Readers get it from the `PROMPT_SERVING_TABLE_NAME` environment variable
   * (see `addReader`), so a fixed name is rarely needed; setting one prevents replacing the table.
   *
   * @default - CloudFormation generates a unique name
   */
  readonly tableName?: string;

  /**
   * Billing mode and capacity of the table. For steady, predictable read traffic use
   * `Billing.provisioned()`; its write capacity must be `Capacity.autoscaled()` (a global table rule).
   *
   * @default Billing.onDemand()
   */
  readonly billing?: dynamodb.Billing;

  /**
   * Whether point-in-time recovery (continuous backups for the last 35 days) is enabled.
   *
   * @default true
   */
  readonly pointInTimeRecovery?: boolean;

  /**
   * Whether the table is protected from deletion. Turn it off before deleting a stack whose `removalPolicy`
   * is `DESTROY`.
   *
   * @default true
   */
  readonly deletionProtection?: boolean;

  /**
   * What happens to the table when it leaves the stack.
   *
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;

  /**
   * Regions to keep a replica of the serving table in (a DynamoDB global table; the stack's Region holds the
   * primary). Readers in a replica Region read their local replica with the same client and table name: import
   * the table there by name (fix `tableName` for that) and add readers to it. The sync runs in the stack's
   * Region and writes there; DynamoDB replicates each write, usually within a second. Replicas turn on the
   * table's stream (new and old images), which replication uses.
   *
   * Needs a stack with an explicit Region, and the AWS owned key (not `encryptionKey`).
   *
   * @default - no replicas: the table lives in the stack's Region only
   */
  readonly replicaRegions?: string[];

  /**
   * A customer managed KMS key to encrypt the table with. Readers then also need `kms:Decrypt` on it, which
   * `grantRead` adds. Needs a stack with an explicit region (DynamoDB global tables name the key per Region).
   *
   * @default - encrypted at rest with an AWS owned key
   */
  readonly encryptionKey?: kms.IKey;

  /**
   * An ElastiCache for Valkey tier in front of the table (`PromptCache.serverless({ vpc })`), shared by every
   * reader and kept fresh by the table's stream (turned on only with a cache) through an invalidation function.
   * Readers (`addReader`) must then be Lambda functions in the cache's VPC. See docs/CACHE-CONSTRUCT.md.
   *
   * @default - no cache; no stream; readers read the table (each with its in-process cache)
   */
  readonly cache?: PromptCache;

  /**
   * How often a full sync reconciles the table with the source: whole minutes, from 1 minute to 1 day.
   * Keep it longer than a full sync takes: overlapping syncs each pace themselves, so together they can
   * exceed `maxRequestsPerSecond`. Also sets the sync lag alarm, which fires when no full sync succeeded for
   * twice this long.
   *
   * @default Duration.minutes(15)
   */
  readonly syncSchedule?: Duration;

  /**
   * Whether to sync a prompt as soon as it changes at the source, from the `CreatePrompt`, `UpdatePrompt`,
   * `CreatePromptVersion` and `DeletePrompt` calls that CloudTrail records (Bedrock sources only; a directory
   * source syncs on deploy).
   *
   * EventBridge receives these "AWS API Call via CloudTrail" events only while a CloudTrail trail with logging
   * enabled records management (write) events in this account and Region; without one, changes reach the
   * table on the next scheduled sync.
   *
   * @default true
   */
  readonly syncOnSourceChange?: boolean;

  /**
   * Whether every deploy that creates the table or changes the source (for a directory source, any prompt
   * file) runs a full sync before the stack finishes, so the table is full when the deploy completes.
   *
   * @default true
   */
  readonly syncOnDeploy?: boolean;

  /**
   * Timeout of one sync invocation: at most 15 minutes.
   *
   * @default Duration.minutes(10)
   */
  readonly syncTimeout?: Duration;

  /**
   * Memory of the sync function: whole MiB from 128 MiB to 10,240 MiB.
   *
   * @default Size.mebibytes(512)
   */
  readonly syncMemorySize?: Size;

  /**
   * AWS X-Ray tracing of the sync function (its calls to the source and the table). `Tracing.ACTIVE` also
   * grants the function `xray:PutTraceSegments` and `xray:PutTelemetryRecords`.
   *
   * @default lambda.Tracing.DISABLED
   */
  readonly syncTracing?: lambda.Tracing;

  /**
   * How long the sync function's logs (including every sync report) are kept.
   *
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly syncLogRetention?: logs.RetentionDays;

  /**
   * How many times a failed sync invocation is retried (0 to 2) before its event goes to the dead-letter
   * queue. Applies to Lambda's own retries and to EventBridge's delivery retries alike.
   *
   * @default 2
   */
  readonly syncRetryAttempts?: number;

  /**
   * CloudWatch namespace of the metrics the sync emits (dimension `TableName`).
   *
   * @default 'CdkPromptServing'
   */
  readonly metricsNamespace?: string;

  /**
   * Whether to create the alarms below. When `false`, the alarm props are ignored.
   *
   * @default true
   */
  readonly createAlarms?: boolean;

  /**
   * Alarm on reads being throttled: `ReadThrottleEvents` Sum ≥ 1 in one 5-minute period (missing data is
   * not breaching).
   *
   * @default - on, with those settings
   */
  readonly readThrottleEventsAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on writes being throttled: `WriteThrottleEvents` Sum ≥ 1 in one 5-minute period (missing data is
   * not breaching).
   *
   * @default - on, with those settings
   */
  readonly writeThrottleEventsAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on DynamoDB internal errors: `SystemErrors` summed over the operations the library uses, Sum ≥ 1 in
   * each of 3 consecutive 5-minute periods (missing data is not breaching).
   *
   * @default - on, with those settings
   */
  readonly systemErrorsAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on failed sync invocations: the sync function's `Errors` Sum ≥ 1 in one 5-minute period (missing
   * data is not breaching).
   *
   * @default - on, with those settings
   */
  readonly syncFunctionErrorsAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on prompts that could not be synced: `PromptsFailed` Sum ≥ 1 in one 5-minute period. Missing data
   * keeps the state, so it stays in alarm until a sync reports no failures.
   *
   * @default - on, with those settings
   */
  readonly promptsFailedAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on events parked in the dead-letter queue: `ApproximateNumberOfMessagesVisible` Maximum ≥ 1 in one
   * 5-minute period. Missing data keeps the state (SQS stops reporting on idle queues).
   *
   * @default - on, with those settings
   */
  readonly deadLetterQueueAlarm?: PromptServingAlarmOptions;

  /**
   * Alarm on the table drifting from the source: `FullSyncSucceeded` Sum < 1 over one period of twice
   * `syncSchedule`; missing data is breaching.
   *
   * @default - on, with those settings
   */
  readonly syncLagAlarm?: PromptServingAlarmOptions;

  /**
   * Actions every alarm takes when it goes into alarm, e.g. `new cloudwatch_actions.SnsAction(topic)`.
   *
   * @default - no actions
   */
  readonly alarmActions?: cloudwatch.IAlarmAction[];

  /**
   * The release path: labels, gradual rollouts with alarm abort, an activation gate and an audit trail (see
   * `PromptGovernanceOptions`; `{}` turns it on with the defaults).
   *
   * @default - no release path: `CURRENT` moves by the sync and by `grantActivate`'s raw table writes; no labels, no audit
   */
  readonly governance?: PromptGovernanceOptions;

  /**
   * Alarm on readers serving their coded fallback: `ReaderServedFallback` Sum ≥ 1 in one 5-minute period (missing data
   * is not breaching), from readers that use the runtime clients' EMF helper (`emfReadMetrics` / `emf_read_metrics`).
   * Give options (`{}` for the defaults) to create it.
   *
   * @default - no alarm (readers emit the metric only with the EMF helper)
   */
  readonly readerFallbackAlarm?: PromptServingAlarmOptions;

  /**
   * Whether to create a CloudWatch dashboard of the table, sync and alarm metrics.
   *
   * @default - true when `dashboardName` is set, otherwise false
   */
  readonly createDashboard?: boolean;

  /**
   * Name of the dashboard.
   *
   * @default - CloudFormation generates a name
   */
  readonly dashboardName?: string;
}
