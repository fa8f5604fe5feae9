/**
 * The audit record: one immutable item per pointer move (`AUDIT#<ISO time>#<8 hex>` in the prompt's partition),
 * written in the same transaction as the move (a conditional put: never overwritten), and read back by the admin
 * API with {@link auditRecordOf}, the one parse of it. Its EventBridge event is in ./audit.ts. No EventBridge
 * client here: the admin package reads records without it.
 */
import { randomBytes } from 'node:crypto';
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { AUDIT_SORT_KEY_PREFIX, AuditAttr, PARTITION_KEY, SORT_KEY } from '../schema';
import { Item, fromItem, toItem } from '../schema/ddb-codec';
import type { AuditRecord } from '../schema/release-api';

/**
 * Attributes an audit record carries beyond `AuditAttr` (governance's own; readers never need them): the rollout
 * share after the move (N, basis points) and the source's version label the sync copied.
 */
export const AuditExtraAttr = {
  percentBp: 'percent_bp',
  tableName: 'table_name',
} as const;

/** Longest `reason` kept (a caller's free text): the record stays far below DynamoDB's item limit. */
export const MAX_REASON_LENGTH = 1_000;

/** A caller's reason, cut to {@link MAX_REASON_LENGTH} characters; `undefined` stays `undefined`. */
export function clipReason(reason: string | undefined): string | undefined {
  if (reason === undefined) return undefined;
  return reason.length > MAX_REASON_LENGTH ? reason.slice(0, MAX_REASON_LENGTH - 1) + '…' : reason;
}

/** The sort key of a record made at `at`: unique by its random suffix even when two moves share a millisecond. */
export function auditSortKey(at: string, suffix = randomBytes(4).toString('hex')): string {
  return `${AUDIT_SORT_KEY_PREFIX}${at}#${suffix}`;
}

/** The record as an item; with `retentionSeconds`, `expires_at` = the time of writing + retention (epoch seconds). */
export function auditItem(entry: AuditRecord, retentionSeconds: number | undefined, nowMs = Date.now()): Item {
  return toItem({
    [SORT_KEY]: auditSortKey(entry.at),
    ...recordAttributes(entry),
    // From the writer's clock, not `at`: a record can never be born already expired by a caller's clock.
    [AuditAttr.expiresAt]: retentionSeconds === undefined ? undefined : Math.floor(nowMs / 1000) + retentionSeconds,
  });
}

/** What the table's record and the EventBridge event both say of a move (snake_case; `undefined` where absent). */
export function recordAttributes(entry: AuditRecord): Record<string, unknown> {
  return {
    [PARTITION_KEY]: entry.promptId,
    [AuditAttr.action]: entry.action,
    [AuditAttr.target]: entry.target,
    [AuditAttr.fromVersion]: entry.fromVersion,
    [AuditAttr.toVersion]: entry.toVersion,
    [AuditAttr.actor]: entry.actor,
    [AuditAttr.reason]: clipReason(entry.reason),
    [AuditAttr.at]: entry.at,
    [AuditAttr.rolloutId]: entry.rolloutId,
    [AuditExtraAttr.percentBp]: entry.percentBp,
  };
}

/**
 * The one parse of an audit item as read from the table: the inverse of {@link auditItem}. Lenient, as the trail is
 * read by people: a missing string reads as `''`, a number of the wrong type as absent; `percent` and `expiresAt`
 * (ISO-8601) are derived from `percent_bp` and `expires_at`. Fields absent on the item are left out.
 */
export function auditRecordOf(item: Item): AuditRecord {
  const r = fromItem(item);
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const percentBp = num(r[AuditExtraAttr.percentBp]);
  const expires = num(r[AuditAttr.expiresAt]);
  const record = {
    promptId: String(r[PARTITION_KEY] ?? ''),
    // As stored: the type names the words this library writes, a hand-edited item may hold another.
    action: String(r[AuditAttr.action] ?? '') as AuditRecord['action'],
    target: String(r[AuditAttr.target] ?? ''),
    fromVersion: num(r[AuditAttr.fromVersion]),
    toVersion: num(r[AuditAttr.toVersion]),
    actor: String(r[AuditAttr.actor] ?? ''),
    reason: str(r[AuditAttr.reason]),
    at: String(r[AuditAttr.at] ?? ''),
    rolloutId: str(r[AuditAttr.rolloutId]),
    percentBp,
    percent: percentBp === undefined ? undefined : percentBp / 100,
    expiresAt: expires === undefined ? undefined : new Date(expires * 1000).toISOString(),
  };
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as unknown as AuditRecord;
}

/** The transaction member appending the record: a put that fails rather than overwrite an existing record. */
export function auditPut(tableName: string, item: Item): TransactWriteItem {
  return {
    Put: {
      TableName: tableName,
      Item: item,
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY },
    },
  };
}
