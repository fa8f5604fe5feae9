/**
 * The audit trail: one immutable record per pointer move (./audit-record.ts: the item, its transaction member and
 * its parse), and one EventBridge event per record on the default bus (source `cdk-prompt-serving`). The record in
 * the table is the trail of record; an event that EventBridge refuses after retries is logged, never a reason to
 * undo the move.
 */
import { PutEventsCommand, type EventBridgeClient, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { AuditExtraAttr, recordAttributes } from './audit-record';
import { AUDIT_EVENT_DETAIL_TYPE, AUDIT_EVENT_SOURCE } from '../schema';
import type { AuditRecord } from '../schema/release-api';

export {
  AuditExtraAttr,
  MAX_REASON_LENGTH,
  auditItem,
  auditPut,
  auditRecordOf,
  auditSortKey,
  clipReason,
} from './audit-record';


/** PutEvents takes at most 10 entries per call. */
export const PUT_EVENTS_MAX_ENTRIES = 10;
/** Attempts at an entry EventBridge refused (throttled, internal failure) before it is logged as lost. */
const PUT_EVENTS_MAX_ATTEMPTS = 3;

/** The EventBridge `detail` of a record: its attributes in the wire contract's snake_case. */
export function auditEventDetail(entry: AuditRecord, tableName: string): Record<string, unknown> {
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

  async emit(entries: readonly AuditRecord[]): Promise<AuditEmitResult> {
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
