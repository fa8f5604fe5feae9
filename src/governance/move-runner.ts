/**
 * How one move of the release engine (./release.ts) reaches the table and the caller, whatever the move: the
 * client token's answer of a move already committed, the activation gate (a denial is audited, and a scheduled
 * step postponed), one transaction of the move's guarded writes with its audit record and token item, the retry
 * of a lost race (re-reading and deciding again, up to {@link MAX_RELEASE_ATTEMPTS} times), and after the commit
 * the audit event, best-effort. The moves decide what to write; this file writes it and answers.
 */
import type { DynamoDBClient, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { committedAnswer } from './client-token';
import { EVENTS_LIMIT_MS, WRITE_RESERVE_MS, currentDeadline, isDeadlineError, runWithin } from './deadline';
import { ReleaseError, ReleaseErrorCode, deadlineExceeded } from './errors';
import { Attr, contentOf } from '../schema';
import type { Item } from '../schema/ddb-codec';
import type { AuditEventDelivery, AuditRecord, ReleaseAnswer } from '../schema/release-api';
import type { AuditEvents } from '../write/audit';
import { auditItem, auditPut } from '../write/audit-record';
import { Idempotency, clientTokenPut } from '../write/client-token-item';
import type { ActivationGate, GateCandidate } from '../write/gate';
import { isConflict } from '../write/guarded-write';
import { Rollout, labelItemWithRollout, nextRevisionOf, registryItem } from '../write/label-item';
import type { LabelWrites } from '../write/label-writes';
import { backoffDelay, sleep } from '../write/pacer';

/** Guarded writes one move tries (re-reading before each retry) before it answers `Conflict`. */
export const MAX_RELEASE_ATTEMPTS = 3;

/** What a move decided to write, from fresh reads. */
export interface MovePlan {
  /** The members of the transaction besides the audit record (and the client token's item). */
  readonly writes: TransactWriteItem[];
  readonly audit: AuditRecord;
  readonly result: ReleaseAnswer;
}

export interface MoveRunnerOptions {
  readonly dynamoDBClient: DynamoDBClient;
  readonly tableName: string;
  readonly writes: LabelWrites;
  readonly gate: ActivationGate;
  /** Where audit events go; `undefined`: no events (the records are still written). */
  readonly events?: AuditEvents;
  /** Seconds audit records are kept; `undefined`: forever. */
  readonly auditRetentionSeconds?: number;
  /** The clock (epoch ms). */
  readonly now: () => number;
}

/** A scheduled step's rollout with its next step postponed by one interval: written if the gate denies the step. */
export interface Postponement {
  readonly labelRead: Item;
  readonly rollout: Rollout;
  readonly label: string;
}

export class MoveRunner {
  constructor(private readonly options: MoveRunnerOptions) {}

  /**
   * Runs one move: with a client token, first the answer of the move it already committed, if any; then plan from
   * fresh reads, write in one transaction (with the token item), retry a lost race; then the audit event, bounded
   * and best-effort. A call that does not answer by the deadline is `DeadlineExceeded`, saying whether the write was sent.
   * `plan` answers a {@link ReleaseAnswer} alone when nothing has to move.
   */
  async run(req: { readonly clientToken?: string }, actor: string, plan: () => Promise<MovePlan | ReleaseAnswer>): Promise<ReleaseAnswer> {
    const { dynamoDBClient: client, tableName, writes, now } = this.options;
    const idempotency = idempotencyOf(req, actor);
    for (let attempt = 1; ; attempt++) {
      let planned: MovePlan | ReleaseAnswer;
      try {
        const done = idempotency && await committedAnswer(client, tableName, idempotency, now());
        if (done) return done;
        planned = await plan();
      } catch (err) {
        if (isDeadlineError(err) && !(err instanceof ReleaseError)) throw deadlineExceeded('a read of the serving table', 'no', err);
        throw err;
      }
      if (!('writes' in planned)) return planned;
      const audit = auditItem(planned.audit, this.options.auditRetentionSeconds, now());
      const token = idempotency ? [clientTokenPut(tableName, idempotency, planned.result, now())] : [];
      try {
        await writes.transact([...planned.writes, auditPut(tableName, audit), ...token]);
      } catch (err) {
        if (isDeadlineError(err)) throw deadlineExceeded('the move\'s write (DynamoDB TransactWriteItems)', 'unknown', err);
        if (!isConflict(err)) throw err;
        if (attempt >= MAX_RELEASE_ATTEMPTS) {
          throw new ReleaseError(ReleaseErrorCode.conflict, `'${planned.result.target}' of prompt '${planned.result.promptId}' changed under each of ${attempt} attempts (a concurrent move won; nothing was overwritten): check it and try again`,
            { promptId: planned.result.promptId, target: planned.result.target });
        }
        await sleep(backoffDelay(attempt, { baseDelayMs: 50, maxDelayMs: 1_000 }));
        continue;
      }
      return { ...planned.result, auditEvent: await this.emitBestEffort(planned.audit) };
    }
  }

  /**
   * Asks the gate; on a denial, appends a `gate-deny` record (and, for a scheduled step, postpones the step by
   * its interval in the same transaction, so the controller does not ask again every minute) and throws `GateDenied`.
   */
  async gateOrDeny(entry: AuditRecord & { toVersion: number }, version: Record<string, unknown>, postpone?: Postponement): Promise<void> {
    const { tableName, writes } = this.options;
    const candidate: GateCandidate = {
      promptId: entry.promptId,
      target: entry.target,
      action: entry.action,
      fromVersion: entry.fromVersion,
      toVersion: entry.toVersion,
      checksum: version[Attr.checksum] as string,
      content: contentOf(version),
      percentBp: entry.percentBp,
      percent: entry.percentBp === undefined ? undefined : entry.percentBp / 100,
      actor: entry.actor,
    };
    const deadline = currentDeadline();
    const decision = await this.options.gate.check(candidate, deadline && { timeoutMs: deadline.remainingMs() - WRITE_RESERVE_MS });
    if (decision.allow) return;
    const denial: AuditRecord = { ...entry, action: 'gate-deny', reason: `${entry.action} denied: ${decision.reason}` };
    const record = auditPut(tableName, auditItem(denial, this.options.auditRetentionSeconds, this.options.now()));
    if (postpone) {
      const item = labelItemWithRollout(postpone.labelRead, postpone.rollout, { at: entry.at, by: entry.actor }, nextRevisionOf(postpone.labelRead));
      try {
        await writes.transact([
          writes.guardedLabelPut(item, postpone.labelRead),
          writes.put(registryItem(entry.promptId, postpone.label, postpone.rollout)),
          record,
        ]);
      } catch (err) {
        if (!isConflict(err)) throw err; // someone moved the label meanwhile: the next tick decides again
      }
    } else {
      await writes.putRecord(record);
    }
    await this.emitBestEffort(denial);
    throw new ReleaseError(ReleaseErrorCode.gateDenied, `the activation gate denied ${entry.action} of version ${entry.toVersion} to '${entry.target}' of prompt '${entry.promptId}': ${decision.reason}`, { reason: decision.reason });
  }

  /**
   * The audit event of a committed record, within {@link EVENTS_LIMIT_MS} (and the deadline): best-effort, never a
   * reason to answer a committed move as failed. The table's record is the trail of record.
   */
  private async emitBestEffort(entry: AuditRecord): Promise<AuditEventDelivery> {
    const events = this.options.events;
    if (!events) return 'off';
    try {
      const out = await runWithin(EVENTS_LIMIT_MS, () => events.emit([entry]));
      return out.failed > 0 ? 'failed' : 'sent';
    } catch (err) {
      console.error(JSON.stringify({ level: 'ERROR', message: 'audit event not sent', error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) }));
      return 'failed';
    }
  }
}

/** A request's idempotency, when it carries a client token: keyed by the caller, compared on the rest of the request. */
function idempotencyOf(req: { readonly clientToken?: string }, actor: string): Idempotency | undefined {
  if (req.clientToken === undefined) return undefined;
  const { clientToken, ...request } = req;
  return { actor, clientToken, request };
}
