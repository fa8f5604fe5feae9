import { Annotations, CustomResource, Duration, Stack, Token } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { BoundPromptSource } from './bound-source';
import { SYNC_MAX_EVENT_AGE } from './sync-runtime';

/** CloudFormation resource type of the deploy-time sync. */
const SYNC_RESOURCE_TYPE = 'Custom::PromptSync';
/** CloudFormation waits at most an hour for a custom resource. */
const MAX_DEPLOY_SYNC_WAIT = Duration.hours(1);
/** Lambda waits up to 1 and then 2 minutes between retries of an asynchronous invocation; plus slack. */
const RETRY_DELAYS = Duration.minutes(5);

export interface SyncTriggers {
  readonly fn: lambda.IFunction;
  readonly table: dynamodb.ITableV2;
  readonly source: BoundPromptSource;
  readonly schedule: Duration;
  readonly onSourceChange: boolean;
  readonly onDeploy: boolean;
  readonly timeout: Duration;
  readonly retryAttempts: number;
  readonly deadLetterQueue: sqs.IQueue;
}

/**
 * What invokes the sync: a reconcile schedule, the source's change events and a deploy-time custom resource.
 * The sync function answers CloudFormation itself, so no provider framework functions are involved.
 */
export function addSyncTriggers(scope: Construct, triggers: SyncTriggers): void {
  const { fn, source } = triggers;
  const target = () => new targets.LambdaFunction(fn, {
    deadLetterQueue: triggers.deadLetterQueue,
    retryAttempts: triggers.retryAttempts,
    maxEventAge: SYNC_MAX_EVENT_AGE,
  });

  new events.Rule(scope, 'SyncSchedule', {
    description: 'Full prompt sync: reconciles the serving table with its source',
    schedule: events.Schedule.rate(triggers.schedule),
    targets: [target()],
  });

  if (triggers.onSourceChange && source.changeEventPattern) {
    new events.Rule(scope, 'SyncOnSourceChange', {
      description: 'Syncs one prompt when it changes at the source',
      eventPattern: scopedChangePattern(scope, source.changeEventPattern, source.options.promptIds),
      targets: [target()],
    });
  }

  if (triggers.onDeploy) {
    new CustomResource(scope, 'SyncOnDeploy', {
      serviceToken: fn.functionArn,
      resourceType: SYNC_RESOURCE_TYPE,
      serviceTimeout: deploySyncWait(triggers.timeout, triggers.retryAttempts),
      // A change to any of these makes CloudFormation send Update, which runs a full sync.
      properties: {
        TableName: triggers.table.tableName,
        Source: source.type,
        SourceOptions: Stack.of(scope).toJsonString(source.options),
        ...(source.contentFingerprint ? { ContentFingerprint: source.contentFingerprint } : {}),
      },
    });
  }
}

/** EventBridge's default limit on an event pattern, in characters (adjustable to 4,096 by a quota increase). */
export const MAX_EVENT_PATTERN_CHARS = 2048;

/**
 * With `promptIds`, the change rule matches only events naming one of them (`requestParameters.promptIdentifier`
 * is the id, or its ARN with or without `:version`), so changes to other prompts never invoke the sync.
 * `CreatePrompt` is left out: it makes a new id, never one already listed. A list whose pattern would exceed
 * {@link MAX_EVENT_PATTERN_CHARS} keeps the unscoped rule (the handler ignores other prompts) and warns.
 */
function scopedChangePattern(scope: Construct, pattern: events.EventPattern, promptIds: unknown): events.EventPattern {
  if (!Array.isArray(promptIds) || promptIds.length === 0 || promptIds.some((id) => typeof id !== 'string' || Token.isUnresolved(id))) {
    return pattern;
  }
  const detail = pattern.detail as Record<string, unknown>;
  const eventNames = (detail.eventName as string[]).filter((name) => name !== 'CreatePrompt');
  const scoped: events.EventPattern = {
    ...pattern,
    detail: {
      ...detail,
      eventName: eventNames,
      requestParameters: { promptIdentifier: promptIds.flatMap((id: string) => [id, { wildcard: `*:prompt/${id}*` }]) },
    },
  };
  const size = JSON.stringify(scoped).length;
  if (size > MAX_EVENT_PATTERN_CHARS) {
    Annotations.of(scope).addWarningV2('cdk-prompt-serving:changeRuleUnscoped',
      `The change rule matches every prompt: scoping it to ${promptIds.length} \`promptIds\` takes a ${size}-character event pattern, `
      + `over EventBridge's ${MAX_EVENT_PATTERN_CHARS}. The sync ignores events for other prompts; list fewer ids to scope the rule`);
    return pattern;
  }
  return scoped;
}

/**
 * Long enough for every attempt Lambda makes (within CloudFormation's hour: at most 3 × 15 minutes + 5),
 * short enough that a sync that never answered fails the deploy soon after its last attempt.
 */
function deploySyncWait(timeout: Duration, retryAttempts: number): Duration {
  if (timeout.isUnresolved() || Token.isUnresolved(retryAttempts)) {
    return MAX_DEPLOY_SYNC_WAIT;
  }
  return Duration.seconds(timeout.toSeconds() * (retryAttempts + 1) + RETRY_DELAYS.toSeconds());
}
