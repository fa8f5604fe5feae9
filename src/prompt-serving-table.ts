import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { createCacheAlarms } from './cache/cache-alarms';
import { cacheDashboardRow } from './cache/cache-dashboard';
import * as cacheMetrics from './cache/cache-metrics';
import { cacheStreamViewType, type CacheTier, createCacheTier } from './cache/cache-tier';
import { GovernanceResources, governanceTimeToLiveAttribute, validateGovernanceOptions } from './governance-construct/governance-resources';
import { ACTIVATE_DATA_ACTIONS, KEY_WRITE_ACTIONS } from './private/perms';
import { createReaderAlarms, readerDashboardRow } from './private/reader-alarms';
import { replicaTables } from './private/replicas';
import { createServingAlarms } from './private/serving-alarms';
import { createServingDashboard, DASHBOARD_WIDGET_HEIGHT, DASHBOARD_WIDGET_WIDTH } from './private/serving-dashboard';
import { createDeadLetterQueue, createSyncFunction } from './private/sync-runtime';
import { addSyncTriggers } from './private/sync-triggers';
import { grantOnTable } from './private/table-grants';
import { sumForOperations, syncMetric, TABLE_OPERATIONS, THROTTLE_OPERATIONS } from './private/table-metrics';
import { tableSettings, warnAboutSoftIssues } from './private/validate-props';
import type { IPromptServingCache } from './prompt-cache-options';
import type { ReleaseGrantOptions } from './prompt-governance';
import type { PromptServingTableProps } from './prompt-serving-table-props';
import type { IPromptServingTable, PromptServingTableAttributes } from './prompt-serving-table-ref';
import { PARTITION_KEY, SORT_KEY, SyncMetric } from './schema';
import { ImportedPromptServingTable } from './table/imported-table';
import { PromptServingTableBase } from './table/serving-table-base';

/**
 * A DynamoDB table serving prompts, kept in sync with their source of truth by a sync function.
 *
 * Reads go to the table instead of the prompt-management API, so they scale with DynamoDB rather than with
 * Bedrock's 10 requests per second per account. The sync writes only prompts whose content changed.
 */
export class PromptServingTable extends PromptServingTableBase {
  /**
   * A serving table made by another stack or app in this account and Region, found by name: readers can be
   * granted access and added, and nothing is created for the table itself.
   *
   * @example
   * import * as lambda from 'aws-cdk-lib/aws-lambda';
   * import { PromptServingTable } from 'cdk-prompt-serving';
   *
   * declare const fn: lambda.Function;
   * const prompts = PromptServingTable.fromTableName(this, 'Prompts', 'prompts-prod');
   * prompts.addReader(fn);
   */
  public static fromTableName(scope: Construct, id: string, tableName: string): IPromptServingTable {
    return new ImportedPromptServingTable(scope, id, { tableName });
  }

  /**
   * A serving table made by another stack, app or account, found by its name or ARN (and its key, if it has a
   * customer managed one): readers can be granted access and added, and nothing is created for the table.
   *
   * @example
   * import * as kms from 'aws-cdk-lib/aws-kms';
   * import * as lambda from 'aws-cdk-lib/aws-lambda';
   * import { PromptServingTable } from 'cdk-prompt-serving';
   *
   * declare const fn: lambda.Function;
   * declare const key: kms.IKey;
   * const prompts = PromptServingTable.fromTableAttributes(this, 'Prompts', {
   *   tableArn: 'arn:aws:dynamodb:eu-west-1:111122223333:table/prompts-prod',
   *   encryptionKey: key,
   * });
   * prompts.addReader(fn);
   */
  public static fromTableAttributes(scope: Construct, id: string, attrs: PromptServingTableAttributes): IPromptServingTable {
    return new ImportedPromptServingTable(scope, id, attrs);
  }

  /** The serving table: partition key `prompt_id`, sort key `version` (both strings). */
  public readonly table: dynamodb.TableV2;

  /** The function that copies prompts from the source into the table. */
  public readonly syncFunction: lambda.Function;

  /**
   * Where sync events go after every retry failed: the sync function's (as Lambda on-failure destination
   * records, holding the event and the error) and its EventBridge targets'.
   */
  public readonly deadLetterQueue: sqs.IQueue;

  /** The alarms this construct created (none when `createAlarms` is false). */
  public readonly alarms: cloudwatch.Alarm[];

  /** The dashboard, when `createDashboard` or `dashboardName` asked for one. */
  public readonly dashboard?: cloudwatch.Dashboard;

  /** The cache tier (endpoint, port, security group as `connections`, name, users), when `cache` is set. */
  public readonly cache?: IPromptServingCache;

  /** The function writing changed pointers from the table's stream through to the cache, when `cache` is set. */
  public readonly invalidationFunction?: lambda.IFunction;

  /** Where the positions of stream batches the invalidation function failed on go, when `cache` is set. */
  public readonly invalidationDeadLetterQueue?: sqs.IQueue;

  /**
   * The release function (labels, rollouts, activations; gated and audited), when `governance` is set. Callers
   * reach it through `releaseFunctionUrl` with SigV4-signed requests (`cdk-prompt-serving/admin`, the CLI);
   * grant them with `grantRelease`.
   */
  public readonly releaseFunction?: lambda.IFunction;

  /** The release function's URL (IAM authentication), when `governance` is set: give it to the admin API or the CLI. */
  public readonly releaseFunctionUrl?: string;

  /** The function that takes scheduled rollout steps and aborts rollouts whose alarm fires, when `governance` is set. */
  public readonly rolloutControllerFunction?: lambda.IFunction;

  /** The name of the serving table. */
  public readonly tableName: string;

  /** The ARN of the serving table. */
  public readonly tableArn: string;

  /** The table's customer managed key, when it has one. */
  public readonly encryptionKey?: kms.IKey;

  private readonly metricsNamespace: string;
  private readonly cacheTier?: CacheTier;
  private readonly governanceResources?: GovernanceResources;

  constructor(scope: Construct, id: string, props: PromptServingTableProps) {
    super(scope, id);

    const settings = tableSettings(this, props);
    const { syncSchedule, syncTimeout, syncRetryAttempts, deletionProtection, pointInTimeRecovery, removalPolicy } = settings;
    this.metricsNamespace = settings.metricsNamespace;
    if (props.governance) validateGovernanceOptions(props.governance);

    const source = props.source._bind(this);
    warnAboutSoftIssues(this, {
      deletionProtection,
      pointInTimeRecovery,
      removalPolicy,
      sourceChangeIgnored: props.syncOnSourceChange === true && !source.changeEventPattern,
    });

    this.table = new dynamodb.TableV2(this, 'Table', {
      tableName: props.tableName,
      partitionKey: { name: PARTITION_KEY, type: dynamodb.AttributeType.STRING },
      sortKey: { name: SORT_KEY, type: dynamodb.AttributeType.STRING },
      billing: props.billing ?? dynamodb.Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: pointInTimeRecovery },
      deletionProtection,
      removalPolicy,
      encryption: props.encryptionKey ? dynamodb.TableEncryptionV2.customerManagedKey(props.encryptionKey) : undefined,
      replicas: replicaTables(this, props.replicaRegions, props.encryptionKey),
      dynamoStream: cacheStreamViewType(props.cache !== undefined, (props.replicaRegions?.length ?? 0) > 0),
      timeToLiveAttribute: governanceTimeToLiveAttribute(props.governance),
    });
    if (props.cache) {
      this.cacheTier = createCacheTier(this, props.cache, this.table);
      this.cache = this.cacheTier.cache;
      this.invalidationFunction = this.cacheTier.invalidationFunction;
      this.invalidationDeadLetterQueue = this.cacheTier.invalidationDeadLetterQueue;
    }

    this.tableName = this.table.tableName;
    this.tableArn = this.table.tableArn;
    this.encryptionKey = props.encryptionKey;

    this.deadLetterQueue = createDeadLetterQueue(this);
    this.syncFunction = createSyncFunction(this, {
      table: this.table,
      encryptionKey: props.encryptionKey,
      source,
      metricsNamespace: this.metricsNamespace,
      timeout: syncTimeout,
      memorySize: settings.syncMemorySize,
      logRetention: settings.syncLogRetention,
      retryAttempts: syncRetryAttempts,
      deadLetterQueue: this.deadLetterQueue,
      tracing: settings.syncTracing,
    });
    if (props.governance) {
      this.governanceResources = new GovernanceResources(this, 'Governance', {
        options: props.governance,
        table: this.table,
        encryptionKey: props.encryptionKey,
        syncFunction: this.syncFunction,
        logRetention: settings.syncLogRetention,
        deadLetterQueue: this.deadLetterQueue,
      });
      this.releaseFunction = this.governanceResources.releaseFunction;
      this.releaseFunctionUrl = this.governanceResources.releaseFunctionUrl.url;
      this.rolloutControllerFunction = this.governanceResources.rolloutController;
    }
    addSyncTriggers(this, {
      fn: this.syncFunction,
      table: this.table,
      source,
      schedule: syncSchedule,
      onSourceChange: props.syncOnSourceChange ?? true,
      onDeploy: props.syncOnDeploy ?? true,
      timeout: syncTimeout,
      retryAttempts: syncRetryAttempts,
      deadLetterQueue: this.deadLetterQueue,
    });

    this.alarms = createServingAlarms(this, this, props, syncSchedule);
    if (this.cacheTier) {
      this.alarms.push(...createCacheAlarms(this, {
        parts: this.cacheTier,
        options: this.cacheTier.binding.options,
        createAlarms: props.createAlarms ?? true,
        alarmActions: props.alarmActions ?? [],
        tableName: this.table.tableName,
      }));
    }
    this.alarms.push(...createReaderAlarms(this, this.table.tableName, props.readerFallbackAlarm, props.createAlarms ?? true,
      props.alarmActions ?? []));
    if (props.createDashboard ?? props.dashboardName !== undefined) {
      this.dashboard = createServingDashboard(this, {
        dashboardName: props.dashboardName,
        metrics: this,
        alarms: this.alarms,
        extraRows: [
          ...this.cacheTier ? [cacheDashboardRow(this.cacheTier, DASHBOARD_WIDGET_WIDTH * 3 / 4, DASHBOARD_WIDGET_HEIGHT)] : [],
          readerDashboardRow(this.table.tableName, DASHBOARD_WIDGET_WIDTH, DASHBOARD_WIDGET_HEIGHT),
        ],
      });
    }
  }

  /**
   * Permits `grantee` to make an older version current again by writing the table directly (the raw path of
   * `PromptAdmin.activate` and the CLI's `activate`: no gate, no audit record; prefer `grantRelease` when
   * `governance` is set): `dynamodb:GetItem`, `dynamodb:Query` and `dynamodb:PutItem` on the table, plus
   * `kms:Decrypt`, `kms:Encrypt` and `kms:GenerateDataKey` on `encryptionKey` when the table has a customer
   * managed key. `PutItem` cannot be limited to pointer items by IAM: grant it to operators, not to readers.
   */
  public grantActivate(grantee: iam.IGrantable): iam.Grant {
    return grantOnTable(grantee, this.table, ACTIVATE_DATA_ACTIONS, KEY_WRITE_ACTIONS);
  }

  /**
   * Permits `grantee` to move pointers through the release function (`governance` must be set): labels,
   * rollouts and, without `labels`, activations of `CURRENT`: `lambda:InvokeFunctionUrl` on the release function
   * with the condition `lambda:FunctionUrlAuthType` = `AWS_IAM`, and `lambda:InvokeFunction` on it with the
   * condition `lambda:InvokedViaFunctionUrl` = `true` (both needed to call a function URL). No table access: the
   * grantee cannot write the table itself.
   *
   * With `labels`, the grantee (an IAM role or user) may move exactly those labels, and they become protected:
   * no other caller of the release function may move them (docs/GOVERNANCE.md, "Who may move what").
   */
  public grantRelease(grantee: iam.IGrantable, options: ReleaseGrantOptions = {}): iam.Grant {
    if (!this.governanceResources) {
      throw new Error('grantRelease needs the release path: set `governance` on the PromptServingTable (`governance: {}` for the defaults)');
    }
    return this.governanceResources.grant(grantee, options.labels);
  }

  /** @internal */
  protected get _grantTable(): dynamodb.TableBaseV2 {
    return this.table;
  }

  /** @internal */
  protected get _readerCache(): IPromptServingCache | undefined {
    return this.cache;
  }

  /** Lambda `Errors` of the invalidation function: Sum over 5 minutes. Needs `cache`. */
  public metricInvalidationFunctionErrors(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return cacheMetrics.invalidationErrors(cacheMetrics.requireCacheTier(this.cacheTier, 'metricInvalidationFunctionErrors'), props);
  }

  /**
   * Lambda `IteratorAge` of the invalidation function, in milliseconds from a stream record's write to its
   * delivery: Maximum over 5 minutes. Needs `cache`.
   */
  public metricInvalidationFunctionIteratorAge(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return cacheMetrics.invalidationIteratorAge(cacheMetrics.requireCacheTier(this.cacheTier, 'metricInvalidationFunctionIteratorAge'), props);
  }

  /** SQS `ApproximateNumberOfMessagesVisible` of the invalidation dead-letter queue: Maximum over 5 minutes. Needs `cache`. */
  public metricInvalidationDeadLetterQueueApproximateNumberOfMessagesVisible(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return cacheMetrics.invalidationDeadLetterMessages(
      cacheMetrics.requireCacheTier(this.cacheTier, 'metricInvalidationDeadLetterQueueApproximateNumberOfMessagesVisible'), props);
  }

  /**
   * ElastiCache Serverless `ThrottledCmds` of the cache (namespace `AWS/ElastiCache`, dimension `clusterId`): Sum
   * over 5 minutes. Needs a serverless `cache` (node-based caches do not publish it).
   */
  public metricCacheThrottledCmds(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return cacheMetrics.cacheThrottledCmds(cacheMetrics.requireCacheTier(this.cacheTier, 'metricCacheThrottledCmds'), props);
  }

  /** DynamoDB `ReadThrottleEvents` of the table: Sum over 5 minutes. */
  public metricReadThrottleEvents(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.table.metric('ReadThrottleEvents', { statistic: cloudwatch.Stats.SUM, ...props });
  }

  /** DynamoDB `WriteThrottleEvents` of the table: Sum over 5 minutes. */
  public metricWriteThrottleEvents(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.table.metric('WriteThrottleEvents', { statistic: cloudwatch.Stats.SUM, ...props });
  }

  /** DynamoDB `ThrottledRequests` of one operation on the table: Sum over 5 minutes. */
  public metricThrottledRequestsForOperation(operation: dynamodb.Operation, props?: cloudwatch.MetricOptions): cloudwatch.IMetric {
    return this.table.metricThrottledRequestsForOperation(operation, props);
  }

  /**
   * DynamoDB `ThrottledRequests` summed over `GetItem`, `BatchGetItem`, `Query` and `TransactWriteItems`
   * (a math expression of 4 metrics): Sum over 5 minutes.
   */
  public metricThrottledRequestsForOperations(props?: cloudwatch.MetricOptions): cloudwatch.IMetric {
    return this.sumForOperations('ThrottledRequests', THROTTLE_OPERATIONS, props);
  }

  /**
   * DynamoDB `SystemErrors` summed over every operation the library calls: `GetItem`, `BatchGetItem`,
   * `Query`, `Scan`, `PutItem`, `UpdateItem` and `TransactWriteItems` (a math expression of 7 metrics): Sum
   * over 5 minutes.
   */
  public metricSystemErrorsForOperations(props?: cloudwatch.MetricOptions): cloudwatch.IMetric {
    return this.sumForOperations('SystemErrors', TABLE_OPERATIONS, props);
  }

  /** Lambda `Errors` of the sync function (invocations that failed as a whole): Sum over 5 minutes. */
  public metricSyncFunctionErrors(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncFunction.metricErrors(props);
  }

  /** Lambda `Throttles` of the sync function: Sum over 5 minutes. */
  public metricSyncFunctionThrottles(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncFunction.metricThrottles(props);
  }

  /** Lambda `Duration` of the sync function, in milliseconds: Average over 5 minutes. */
  public metricSyncFunctionDuration(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncFunction.metricDuration(props);
  }

  /** `PromptsScanned`: prompts the source listed, per sync: Sum over 5 minutes. */
  public metricPromptsScanned(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncMetric(SyncMetric.scanned, cloudwatch.Stats.SUM, props);
  }

  /** `PromptsUnchanged`: prompts whose checksum matched the table, so nothing was written: Sum over 5 minutes. */
  public metricPromptsUnchanged(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncMetric(SyncMetric.unchanged, cloudwatch.Stats.SUM, props);
  }

  /** `PromptsWritten`: new versions written (one transaction each): Sum over 5 minutes. */
  public metricPromptsWritten(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncMetric(SyncMetric.written, cloudwatch.Stats.SUM, props);
  }

  /** `PromptsDeleted`: prompts marked `DELETED` because they left the source: Sum over 5 minutes. */
  public metricPromptsDeleted(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncMetric(SyncMetric.deleted, cloudwatch.Stats.SUM, props);
  }

  /** `PromptsFailed`: prompts that could not be synced (too large, malformed, unreadable): Sum over 5 minutes. */
  public metricPromptsFailed(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncMetric(SyncMetric.failed, cloudwatch.Stats.SUM, props);
  }

  /** `SourceThrottles`: throttling responses the sync got from the source (each retried): Sum over 5 minutes. */
  public metricSourceThrottles(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncMetric(SyncMetric.sourceThrottles, cloudwatch.Stats.SUM, props);
  }

  /** `SyncDuration`: how long one sync took, in milliseconds: Average over 5 minutes. */
  public metricSyncDuration(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncMetric(SyncMetric.duration, cloudwatch.Stats.AVERAGE, props);
  }

  /** `FullSyncSucceeded`: 1 per full sync that completed: Sum over 5 minutes. */
  public metricFullSyncSucceeded(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.syncMetric(SyncMetric.fullSyncSucceeded, cloudwatch.Stats.SUM, props);
  }

  /** SQS `ApproximateNumberOfMessagesVisible` of the dead-letter queue: Maximum over 5 minutes. */
  public metricDeadLetterQueueApproximateNumberOfMessagesVisible(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.deadLetterQueue.metricApproximateNumberOfMessagesVisible(props);
  }

  private sumForOperations(metricName: string, operations: dynamodb.Operation[], props?: cloudwatch.MetricOptions): cloudwatch.IMetric {
    return sumForOperations(this.table, metricName, operations, props);
  }

  private syncMetric(metricName: string, statistic: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return syncMetric(this.metricsNamespace, this.table.tableName, metricName, statistic, props);
  }
}
