import { Annotations, Duration, RemovalPolicy, Size, SizeRoundingBehavior, Stack } from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { Tracing } from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { IConstruct } from 'constructs';
import { invalidProp, isUnresolved } from './errors';
import type { PromptServingTableProps } from '../prompt-serving-table-props';
import { DEFAULT_METRICS_NAMESPACE } from '../schema';
import { PROMPT_ID_RULE } from '../schema/keys';

/** Shortest reconcile interval: EventBridge `rate()` schedules count whole minutes. */
export const MIN_SYNC_SCHEDULE = Duration.minutes(1);
/** Longest reconcile interval: a serving copy older than a day is drift, not caching. */
export const MAX_SYNC_SCHEDULE = Duration.days(1);
/** Lambda's maximum timeout. */
export const MAX_SYNC_TIMEOUT = Duration.minutes(15);
/** Lambda's memory range. */
export const MIN_SYNC_MEMORY_SIZE = Size.mebibytes(128);
export const MAX_SYNC_MEMORY_SIZE = Size.mebibytes(10_240);
/** Lambda's maximum retries of an asynchronous invocation. */
export const MAX_SYNC_RETRY_ATTEMPTS = 2;
/** DynamoDB table names: 3 to 255 letters, digits, `_`, `-` and `.`. */
const TABLE_NAME = /^[a-zA-Z0-9_.-]{3,255}$/;
/** CloudWatch namespaces: up to 255 of these characters, not starting with `AWS/`. */
const METRICS_NAMESPACE = /^[a-zA-Z0-9 ._\-/#:]{1,255}$/;
const RESERVED_METRICS_NAMESPACE_PREFIX = 'AWS/';
/** CloudWatch dashboard names: up to 255 letters, digits, `-` and `_`. */
const MAX_DASHBOARD_NAME_LENGTH = 255;
const DASHBOARD_NAME = /^[A-Za-z0-9_-]{1,255}$/;

const DEFAULT_SYNC_SCHEDULE = Duration.minutes(15);
const DEFAULT_SYNC_TIMEOUT = Duration.minutes(10);
const DEFAULT_SYNC_MEMORY_SIZE = Size.mebibytes(512);
const DEFAULT_SYNC_RETRY_ATTEMPTS = 2;
const DEFAULT_SYNC_LOG_RETENTION = logs.RetentionDays.ONE_MONTH;

const ONE_MINUTE_MS = Duration.minutes(1).toMilliseconds();

/** A table's props with every default applied (the `@default`s of `PromptServingTableProps`). */
export interface TableSettings {
  readonly syncSchedule: Duration;
  readonly syncTimeout: Duration;
  readonly syncMemorySize: Size;
  readonly syncRetryAttempts: number;
  readonly syncLogRetention: logs.RetentionDays;
  readonly syncTracing: Tracing;
  readonly deletionProtection: boolean;
  readonly pointInTimeRecovery: boolean;
  readonly removalPolicy: RemovalPolicy;
  readonly metricsNamespace: string;
}

/** Applies the defaults of `props` and validates every setting a table checks on its own. */
export function tableSettings(scope: IConstruct, props: PromptServingTableProps): TableSettings {
  const settings: TableSettings = {
    syncSchedule: props.syncSchedule ?? DEFAULT_SYNC_SCHEDULE,
    syncTimeout: props.syncTimeout ?? DEFAULT_SYNC_TIMEOUT,
    syncMemorySize: props.syncMemorySize ?? DEFAULT_SYNC_MEMORY_SIZE,
    syncRetryAttempts: props.syncRetryAttempts ?? DEFAULT_SYNC_RETRY_ATTEMPTS,
    syncLogRetention: props.syncLogRetention ?? DEFAULT_SYNC_LOG_RETENTION,
    syncTracing: props.syncTracing ?? Tracing.DISABLED,
    deletionProtection: props.deletionProtection ?? true,
    pointInTimeRecovery: props.pointInTimeRecovery ?? true,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    metricsNamespace: props.metricsNamespace ?? DEFAULT_METRICS_NAMESPACE,
  };
  validateTableName(props.tableName);
  validateSyncSchedule(settings.syncSchedule);
  validateSyncTimeout(settings.syncTimeout);
  validateSyncMemorySize(settings.syncMemorySize);
  validateSyncRetryAttempts(settings.syncRetryAttempts);
  validateMetricsNamespace(settings.metricsNamespace);
  validateEncryptionKey(scope, props.encryptionKey);
  validateDashboardProps(props.createDashboard, props.dashboardName);
  return settings;
}
const WARNING_PREFIX = 'cdk-prompt-serving';

export function validateTableName(tableName: string | undefined): void {
  if (tableName !== undefined && !isUnresolved(tableName) && !TABLE_NAME.test(tableName)) {
    throw invalidProp('tableName', 'be 3 to 255 letters, digits, \'_\', \'-\' or \'.\'', tableName);
  }
}

export function validateSyncSchedule(syncSchedule: Duration): void {
  if (isUnresolved(syncSchedule)) {
    return;
  }
  const ms = syncSchedule.toMilliseconds();
  if (ms < MIN_SYNC_SCHEDULE.toMilliseconds()) {
    throw invalidProp('syncSchedule', `be at least ${MIN_SYNC_SCHEDULE.toHumanString()}`, syncSchedule);
  }
  if (ms % ONE_MINUTE_MS !== 0) {
    throw invalidProp('syncSchedule', 'be a whole number of minutes', syncSchedule);
  }
  if (ms > MAX_SYNC_SCHEDULE.toMilliseconds()) {
    throw invalidProp('syncSchedule', `be at most ${MAX_SYNC_SCHEDULE.toHumanString()}`, syncSchedule);
  }
}

export function validateSyncTimeout(syncTimeout: Duration): void {
  if (isUnresolved(syncTimeout)) {
    return;
  }
  if (syncTimeout.toMilliseconds() < 1000 || syncTimeout.toMilliseconds() % 1000 !== 0) {
    throw invalidProp('syncTimeout', 'be a whole number of seconds, at least 1 second', syncTimeout);
  }
  if (syncTimeout.toMilliseconds() > MAX_SYNC_TIMEOUT.toMilliseconds()) {
    throw invalidProp('syncTimeout', `be at most ${MAX_SYNC_TIMEOUT.toHumanString()}`, syncTimeout);
  }
}

export function validateSyncMemorySize(syncMemorySize: Size): void {
  if (isUnresolved(syncMemorySize)) {
    return;
  }
  const mebibytes = syncMemorySize.toMebibytes({ rounding: SizeRoundingBehavior.NONE });
  const min = MIN_SYNC_MEMORY_SIZE.toMebibytes();
  const max = MAX_SYNC_MEMORY_SIZE.toMebibytes();
  if (!Number.isInteger(mebibytes) || mebibytes < min || mebibytes > max) {
    throw invalidProp('syncMemorySize', `be a whole number of MiB from ${min} to ${max}`, syncMemorySize);
  }
}

export function validateSyncRetryAttempts(syncRetryAttempts: number): void {
  if (isUnresolved(syncRetryAttempts)) {
    return;
  }
  if (!Number.isInteger(syncRetryAttempts) || syncRetryAttempts < 0 || syncRetryAttempts > MAX_SYNC_RETRY_ATTEMPTS) {
    throw invalidProp('syncRetryAttempts', `be 0, 1 or ${MAX_SYNC_RETRY_ATTEMPTS}`, syncRetryAttempts);
  }
}

export function validateMetricsNamespace(metricsNamespace: string): void {
  if (isUnresolved(metricsNamespace)) {
    return;
  }
  if (!METRICS_NAMESPACE.test(metricsNamespace)) {
    throw invalidProp('metricsNamespace', 'be 1 to 255 letters, digits, spaces or any of . - _ / # :', metricsNamespace);
  }
  if (metricsNamespace.startsWith(RESERVED_METRICS_NAMESPACE_PREFIX)) {
    throw invalidProp('metricsNamespace', `not start with '${RESERVED_METRICS_NAMESPACE_PREFIX}'`, metricsNamespace,
      'That prefix is reserved for AWS services');
  }
}

export function validateEncryptionKey(scope: IConstruct, encryptionKey: kms.IKey | undefined): void {
  if (encryptionKey && isUnresolved(Stack.of(scope).region)) {
    // Not invalidProp: the offending value is the stack's environment, not the prop.
    throw new Error('`encryptionKey` must be used in a stack with an explicit region, got a region-agnostic stack. '
      + 'Set `env: { region }` on the stack: DynamoDB global tables name the key per replica Region');
  }
}

export function validateDashboardProps(createDashboard: boolean | undefined, dashboardName: string | undefined): void {
  if (createDashboard === false && dashboardName !== undefined) {
    throw invalidProp('dashboardName', 'be left unset when `createDashboard` is false', dashboardName,
      'Remove one of the two');
  }
  if (dashboardName !== undefined && !isUnresolved(dashboardName) && !DASHBOARD_NAME.test(dashboardName)) {
    throw invalidProp('dashboardName', `be 1 to ${MAX_DASHBOARD_NAME_LENGTH} letters, digits, '-' or '_'`,
      dashboardName.length > 80 ? `${dashboardName.slice(0, 40)}… (${dashboardName.length} characters)` : dashboardName);
  }
}

/**
 * Most characters the prompt ids of one scoped `grantRead` may take in the grantee's policy (each id as a
 * JSON string plus a comma). IAM allows 10,240 characters of inline policy per role; this leaves about 2,000
 * for the grant's own statement (actions, table and index ARNs, the KMS statement) and the role's other
 * statements. Beyond it, deploying fails with "Maximum policy size of 10240 bytes exceeded".
 */
export const MAX_SCOPED_GRANT_ID_CHARS = 8192;

/**
 * The ids of a scoped read grant, checked (a list, each a valid prompt id, within the policy size) and
 * deduplicated. Plain JavaScript can pass anything, so the type is checked too: a string would be spread
 * into one-character ids.
 */
export function validateGrantPromptIds(promptIds: unknown, isValidId: (id: string) => boolean, catalogId: string): string[] {
  if (isUnresolved(promptIds)) {
    throw invalidProp('promptIds', 'be a list written in the app, so the catalog id can be added to it', promptIds,
      'Its entries may be tokens');
  }
  if (!Array.isArray(promptIds)) {
    throw invalidProp('promptIds', 'be a list of prompt ids', promptIds,
      typeof promptIds === 'string' ? `Write ['${promptIds}'] for one id` : 'Pass an array of strings');
  }
  if (promptIds.length === 0) {
    throw invalidProp('promptIds', 'list at least one prompt id', promptIds, 'Omit `promptIds` to grant every prompt');
  }
  for (const id of promptIds) {
    if (typeof id !== 'string' || (!isUnresolved(id) && !isValidId(id))) {
      throw invalidProp('promptIds', `hold prompt ids (${PROMPT_ID_RULE})`, id,
        `The catalog item ${catalogId} is always included`);
    }
  }
  const unique = [...new Set(promptIds as string[])];
  const chars = unique.reduce((sum, id) => sum + (isUnresolved(id) ? 0 : JSON.stringify(id).length + 1), 0);
  if (chars > MAX_SCOPED_GRANT_ID_CHARS) {
    throw invalidProp('promptIds', `fit in an IAM policy: at most ${MAX_SCOPED_GRANT_ID_CHARS} characters of ids`,
      `${unique.length} ids taking ${chars} characters`,
      'Grant fewer ids per role, or omit `promptIds` to grant every prompt');
  }
  return unique;
}

/** Settings that synthesize but are probably not what the user wants: warnings, acknowledgeable by id. */
export interface SoftIssueSettings {
  readonly deletionProtection: boolean;
  readonly pointInTimeRecovery: boolean;
  readonly removalPolicy: RemovalPolicy;
  readonly sourceChangeIgnored: boolean;
}

export function warnAboutSoftIssues(scope: IConstruct, settings: SoftIssueSettings): void {
  const warn = (id: string, message: string) => Annotations.of(scope).addWarningV2(`${WARNING_PREFIX}:${id}`, message);
  if (!settings.deletionProtection) {
    warn('deletionProtectionOff', '`deletionProtection` is off: a stack update or a person can delete the serving table and every prompt version in it');
  } else if (settings.removalPolicy === RemovalPolicy.DESTROY) {
    warn('deletionProtectionBlocksDestroy', '`removalPolicy` is DESTROY but `deletionProtection` is on: deleting the stack fails until `deletionProtection` is turned off');
  }
  if (!settings.pointInTimeRecovery) {
    warn('pointInTimeRecoveryOff', '`pointInTimeRecovery` is off: the table cannot be restored to an earlier point in time');
  }
  if (settings.sourceChangeIgnored) {
    warn('syncOnSourceChangeIgnored', '`syncOnSourceChange` has no effect for a directory source: deploying a changed directory syncs it');
  }
}
