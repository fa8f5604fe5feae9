import { Duration, Size, Stack, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { BoundPromptSource } from './bound-source';
import { KEY_WRITE_ACTIONS, SYNC_DATA_ACTIONS } from './perms';
import { Env } from '../schema';
import { SyncFunction } from '../sync/sync-function';

/**
 * How long an undelivered or failing sync event is retried before it goes to the dead-letter queue. Longer
 * is pointless: by then the next scheduled sync has reconciled everything, and CloudFormation stops waiting
 * for a deploy-time sync after an hour.
 */
export const SYNC_MAX_EVENT_AGE = Duration.hours(1);

/** SQS's longest retention, so parked events survive a long weekend. */
const DEAD_LETTER_RETENTION = Duration.days(14);

const SYNC_DEAD_LETTER_REASON = 'This queue is the dead-letter queue of the sync function and of its EventBridge targets; '
  + 'a dead-letter queue for it would only move the same parked events one queue further.';

/**
 * The queue where sync events go after every retry failed (or, with another `id` and `reason`, another
 * dead-letter queue: `reason` says why it has no dead-letter queue of its own).
 */
export function createDeadLetterQueue(scope: Construct, id = 'DeadLetterQueue', reason = SYNC_DEAD_LETTER_REASON): sqs.Queue {
  const queue = new sqs.Queue(scope, id, {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: DEAD_LETTER_RETENTION,
  });
  Validations.of(queue).acknowledge({ id: 'AwsSolutions-SQS3', reason }, { id: 'Serverless-SQSRedrivePolicy', reason });
  return queue;
}

export interface SyncFunctionWiring {
  readonly table: dynamodb.TableV2;
  readonly encryptionKey?: kms.IKey;
  readonly source: BoundPromptSource;
  readonly metricsNamespace: string;
  readonly timeout: Duration;
  readonly memorySize: Size;
  readonly logRetention: logs.RetentionDays;
  readonly retryAttempts: number;
  readonly deadLetterQueue: sqs.IQueue;
  readonly tracing: lambda.Tracing;
}

/**
 * The sync function with a role of its own: table and key access from `perms.ts`, its own log group, and
 * the source's statements in a separate policy so that only they carry the source's wildcard acknowledgement.
 */
export function createSyncFunction(scope: Construct, wiring: SyncFunctionWiring): lambda.Function {
  const { table, source } = wiring;
  const role = new iam.Role(scope, 'SyncFunctionRole', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: 'Prompt sync: reads the prompt source, writes the serving table',
  });
  const logGroup = new logs.LogGroup(scope, 'SyncFunctionLogs', { retention: wiring.logRetention });
  logGroup.grantWrite(role);

  const fn = new SyncFunction(scope, 'SyncFunction', {
    description: `Syncs prompts from the ${source.type} source into the serving table`,
    role,
    logGroup,
    timeout: wiring.timeout,
    memorySize: wiring.memorySize.toMebibytes(),
    layers: source.layers,
    environment: {
      [Env.tableName]: table.tableName,
      [Env.sourceType]: source.type,
      [Env.sourceOptions]: Stack.of(scope).toJsonString(source.options),
      [Env.metricsNamespace]: wiring.metricsNamespace,
    },
    // Failed asynchronous invocations (after the retries) go to the queue as destination records: the event
    // and the error that ended it.
    onFailure: new destinations.SqsDestination(wiring.deadLetterQueue),
    retryAttempts: wiring.retryAttempts,
    maxEventAge: SYNC_MAX_EVENT_AGE,
    // Plain JavaScript with no native code: Graviton is cheaper per GB-second.
    architecture: lambda.Architecture.ARM_64,
    tracing: wiring.tracing,
  });
  const runtimeReason = 'The runtime is the one the bundled sync handler is built for and tested on (esbuild --target=node22); '
    + 'it moves with library releases, not with the newest runtime the app\'s aws-cdk-lib knows.';
  Validations.of(fn).acknowledge({ id: 'AwsSolutions-L1', reason: runtimeReason }, { id: 'Serverless-LambdaLatestVersion', reason: runtimeReason });
  Validations.of(fn).acknowledge({
    id: 'Serverless-LambdaDLQ',
    reason: 'Failed asynchronous invocations go to the dead-letter queue through the on-failure destination, which '
      + 'records the error with the event; a dead-letter config as well would park every failure twice.',
  });
  if (wiring.tracing === lambda.Tracing.ACTIVE) {
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource types, so Lambda '
        + 'grants them on Resource "*".',
    });
  } else {
    Validations.of(fn).acknowledge({
      id: 'Serverless-LambdaTracing',
      reason: 'X-Ray tracing of the background sync is opt-in (`syncTracing`); every sync already logs a structured '
        + 'report and emits CloudWatch metrics with per-prompt outcomes.',
    });
  }

  iam.Grant.addToPrincipal({ grantee: role, actions: SYNC_DATA_ACTIONS, resourceArns: [table.tableArn] });
  wiring.encryptionKey?.grant(role, ...KEY_WRITE_ACTIONS);

  if (source.statements.length > 0) {
    const policy = new iam.Policy(scope, 'SourceReadPolicy', { statements: source.statements, roles: [role] });
    Validations.of(policy).acknowledge(...source.acknowledgements);
    // Every invocation, the deploy-time one included, must be able to read the source.
    fn.node.addDependency(policy);
  }
  return fn;
}
