import { Duration, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { CacheBinding } from './binding';
import { cacheEnvironment, grantCacheConnect } from './reader';
import { STREAM_FILTER_PATTERN } from '../invalidation/filter';
import { InvalidationFunction } from '../invalidation/invalidation-function';
import { wildcardResourceFinding } from '../private/nag';
import { VPC_NETWORK_INTERFACE_ACTIONS } from '../private/perms';
import { createDeadLetterQueue } from '../private/sync-runtime';

export const DEFAULT_INVALIDATION_BATCH_SIZE = 100;
export const DEFAULT_INVALIDATION_RETRY_ATTEMPTS = 5;
export const DEFAULT_INVALIDATION_MAX_RECORD_AGE = Duration.hours(1);
/** One batch writes at most a few hundred small keys: seconds, not minutes. */
export const INVALIDATION_TIMEOUT = Duration.seconds(30);
export const INVALIDATION_MEMORY_MIB = 256;
const INVALIDATION_LOG_RETENTION = logs.RetentionDays.ONE_MONTH;

/**
 * The stream's filter: pointer rows only (`version = CURRENT`, the `#catalog` row included, and labels `LABEL#…`), applied by Lambda
 * before it invokes the function, so version rows cost no invocation. The pattern is the invalidation room's
 * (src/invalidation/filter.ts), which its tests also hand to their stream poller.
 */
export function pointerRowFilter(): { [key: string]: any } {
  return lambda.FilterCriteria.filter(STREAM_FILTER_PATTERN);
}

/** What `createInvalidation` made. */
export interface Invalidation {
  readonly fn: lambda.Function;
  readonly deadLetterQueue: sqs.Queue;
}

/**
 * The invalidation function (in the cache's subnets, egress only to the cache) reading the table's stream
 * through an event source mapping: pointer rows only, bisect on error, bounded retries and record age, partial
 * batch responses, and failed batches' positions to an SQS dead-letter queue.
 */
export function createInvalidation(scope: Construct, binding: CacheBinding, table: dynamodb.TableV2): Invalidation {
  const { cache, options } = binding;

  const deadLetterQueue = createDeadLetterQueue(scope, 'InvalidationDeadLetterQueue',
    'This queue is the on-failure destination of the invalidation stream mapping; it holds the positions of '
    + 'stream batches that failed every retry, and a dead-letter queue for it would only move them one queue further.');

  const role = new iam.Role(scope, 'InvalidationFunctionRole', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: 'Prompt cache invalidation: reads the serving table\'s stream, writes the cache',
    inlinePolicies: {
      VpcNetworkInterfaces: new iam.PolicyDocument({
        statements: [new iam.PolicyStatement({ actions: VPC_NETWORK_INTERFACE_ACTIONS, resources: ['*'] })],
      }),
    },
  });
  Validations.of(role).acknowledge({
    id: wildcardResourceFinding(scope, '*'),
    reason: 'A Lambda function in a VPC creates, describes and deletes its own network interfaces; these EC2 actions '
      + 'are those of the AWS managed AWSLambdaVPCAccessExecutionRole policy and cannot name interfaces in advance.',
  });
  const logGroup = new logs.LogGroup(scope, 'InvalidationFunctionLogs', { retention: INVALIDATION_LOG_RETENTION });
  logGroup.grantWrite(role);

  const securityGroup = new ec2.SecurityGroup(scope, 'InvalidationFunctionSecurityGroup', {
    vpc: cache.vpc,
    description: 'Prompt cache invalidation function: egress to the cache only',
    allowAllOutbound: false,
  });
  const fn = new InvalidationFunction(scope, 'InvalidationFunction', {
    description: 'Writes changed prompt pointers from the serving table\'s stream through to the prompt cache',
    role,
    logGroup,
    timeout: INVALIDATION_TIMEOUT,
    memorySize: INVALIDATION_MEMORY_MIB,
    vpc: cache.vpc,
    vpcSubnets: binding.subnets,
    securityGroups: [securityGroup],
    environment: cacheEnvironment(cache, cache.writerUserId, table.tableName),
  });
  Validations.of(fn).acknowledge({
    id: 'AwsSolutions-L1',
    reason: 'The runtime is the one the bundled invalidation handler is built for and tested on (esbuild --target=node22); '
      + 'it moves with library releases, not with the newest runtime the app\'s aws-cdk-lib knows.',
  });
  cache.connections.allowDefaultPortFrom(securityGroup, 'Prompt cache invalidation function');
  grantCacheConnect(role, cache, cache.writerUserArn);

  fn.addEventSource(new sources.DynamoEventSource(table, {
    startingPosition: lambda.StartingPosition.TRIM_HORIZON,
    batchSize: options.invalidationBatchSize ?? DEFAULT_INVALIDATION_BATCH_SIZE,
    bisectBatchOnError: true,
    retryAttempts: options.invalidationRetryAttempts ?? DEFAULT_INVALIDATION_RETRY_ATTEMPTS,
    maxRecordAge: options.invalidationMaxRecordAge ?? DEFAULT_INVALIDATION_MAX_RECORD_AGE,
    reportBatchItemFailures: true,
    parallelizationFactor: 1,
    onFailure: new sources.SqsDlq(deadLetterQueue),
    filters: [pointerRowFilter()],
  }));
  return { fn, deadLetterQueue };
}
