/**
 * The audit trail: one immutable record per pointer move (`AUDIT#<ISO time>#<8 hex>` in the prompt's partition),
 * written in the same transaction as the move (a conditional put: never overwritten), and one EventBridge event
 * per record on the default bus (source `cdk-prompt-serving`). The record in the table is the trail of record; an
 * event that EventBridge refuses after retries is logged, never a reason to undo the move.
 */
import { randomBytes } from 'node:crypto';
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { PutEventsCommand, type EventBridgeClient, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import {
  AUDIT_EVENT_DETAIL_TYPE,
  AUDIT_EVENT_SOURCE,
  AUDIT_SORT_KEY_PREFIX,
  AuditAction,
  AuditAttr,
  PARTITION_KEY,
  SORT_KEY,
} from '../schema';
import { Item, toItem } from '../schema/ddb-codec';

/**
 * Attributes an audit record carries beyond `AuditAttr` (governance's own; readers never need them): the rollout
 * share after the move (N, basis points) and the source's version label the sync copied.
 */
export const AuditExtraAttr = {
  percentBp: 'percent_bp',
  tableName: 'table_name',
} as const;

/** One pointer move. */
export interface AuditEntry {
  readonly promptId: string;
  readonly action: AuditAction;
  /** `CURRENT` or a label name. */
  readonly target: string;
  readonly fromVersion?: number;
  readonly toVersion?: number;
  readonly actor: string;
  readonly reason?: string;
  /** ISO-8601, the writer's clock. */
  readonly at: string;
  readonly rolloutId?: string;
  readonly percentBp?: number;
}

/** PutEvents takes at most 10 entries per call. */
export const PUT_EVENTS_MAX_ENTRIES = 10;
/** Attempts at an entry EventBridge refused (throttled, internal failure) before it is logged as lost. */
const PUT_EVENTS_MAX_ATTEMPTS = 3;
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
export function auditItem(entry: AuditEntry, retentionSeconds: number | undefined, nowMs = Date.now()): Item {
  return toItem({
    [SORT_KEY]: auditSortKey(entry.at),
    ...recordAttributes(entry),
    // From the writer's clock, not `at`: a record can never be born already expired by a caller's clock.
    [AuditAttr.expiresAt]: retentionSeconds === undefined ? undefined : Math.floor(nowMs / 1000) + retentionSeconds,
  });
}

/** What the table's record and the EventBridge event both say of a move (snake_case; `undefined` where absent). */
function recordAttributes(entry: AuditEntry): Record<string, unknown> {
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

/** The EventBridge `detail` of a record: its attributes in the wire contract's snake_case. */
export function auditEventDetail(entry: AuditEntry, tableName: string): Record<string, unknown> {
  const detail: Record<string, unknown> = { [AuditExtraAttr.tableName]: tableName, ...recordAttributes(entry) };
  for (const k of Object.keys(detail)) if (detail[k] === undefined) delete detail[k];
  return detail;
}

/** What became of a batch of audit events. */
export interface AuditEmitResult {
  readonly sent: number;
  /** Entries EventBridge refused after every attempt, or that a failed call carried (logged, not thrown). */
  readonly failed: number;
  readonly calls: number;
}

/** Emits audit events on the default bus, {@link PUT_EVENTS_MAX_ENTRIES} per PutEvents, retrying refused entries. */
export class AuditEvents {
  constructor(private readonly client: EventBridgeClient, private readonly tableName: string) {}

  async emit(entries: readonly AuditEntry[]): Promise<AuditEmitResult> {
    let sent = 0;
    let failed = 0;
    let calls = 0;
    for (let start = 0; start < entries.length; start += PUT_EVENTS_MAX_ENTRIES) {
      let batch: PutEventsRequestEntry[] = entries.slice(start, start + PUT_EVENTS_MAX_ENTRIES).map((entry) => ({
        Source: AUDIT_EVENT_SOURCE,
        DetailType: AUDIT_EVENT_DETAIL_TYPE,
        Detail: JSON.stringify(auditEventDetail(entry, this.tableName)),
        Time: new Date(entry.at),
      }));
      for (let attempt = 1; batch.length > 0; attempt++) {
        calls++;
        let refused: PutEventsRequestEntry[];
        try {
          const out = await this.client.send(new PutEventsCommand({ Entries: batch }));
          refused = batch.filter((_, i) => out.Entries?.[i]?.ErrorCode !== undefined || out.Entries?.[i] === undefined);
        } catch (err) {
          if (attempt >= PUT_EVENTS_MAX_ATTEMPTS) {
            log('audit events lost', { count: batch.length, error: describe(err) });
            failed += batch.length;
            break;
          }
          continue;
        }
        sent += batch.length - refused.length;
        if (refused.length > 0 && attempt >= PUT_EVENTS_MAX_ATTEMPTS) {
          log('audit events refused', { count: refused.length });
          failed += refused.length;
          break;
        }
        batch = refused;
      }
    }
    return { sent, failed, calls };
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function log(message: string, fields: Record<string, unknown>): void {
  console.error(JSON.stringify({ level: 'ERROR', message, ...fields }));
}
