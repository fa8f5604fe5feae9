/**
 * What governance does to the sync, behind one interface the engine calls unconditionally: audit records for its
 * moves of `CURRENT` (in the move's own transaction) and their events, the activation gate on its moves
 * (`gateSync`), and `source_deleted_at` on the labels of a prompt deleted at the source. Chosen once, when the
 * engine is made: {@link GovernedSync} with the construct's `governance`, {@link UNGOVERNED} (does nothing) without.
 */
import type { DynamoDBClient, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import {
  Attr,
  CURRENT,
  LabelAttr,
  PromptContent,
  STATUS_ACTIVE,
  STATUS_DELETED,
  contentAttributes,
  versionKey,
} from '../schema';
import { Outcome, Repair, StepResult, failedOutcome } from './outcome';
import type { SourcePrompt } from './source';
import type { AuditRecord } from '../schema/release-api';
import type { AuditEvents } from '../write/audit';
import { onceAuditItem, putAuditOnce } from '../write/audit-once';
import { auditItem, auditPut } from '../write/audit-record';
import { pointerItem, versionItem } from '../write/content';
import type { ActivationGate } from '../write/gate';
import type { PointerState, ServingTableStore } from '../write/store';

/** What the sync does for the release path's audit and gate. */
export interface SyncGovernance {
  /** The actor of the sync's audit records: the sync function's role ARN. */
  readonly actor: string;
  /** Seconds audit records are kept. @default - forever */
  readonly auditRetentionSeconds?: number;
  /**
   * Asked before `CURRENT` moves to a new version from the source (`gateSync`). On a denial the version item is
   * written, `CURRENT` stays, the denial is audited once per move, and every later sync asks again. @default - not gated
   */
  readonly gate?: ActivationGate;
  /** Where the audit events go: one batch (PutEvents of 10) at the end of each sync. @default - no events */
  readonly events?: AuditEvents;
}

/** One move of `CURRENT` by the sync, as its audit record tells it. */
export interface SyncMove {
  readonly fromVersion?: number;
  readonly toVersion?: number;
  readonly reason: string;
  /** ISO-8601, the sync's clock. */
  readonly at: string;
}

/** The audit of one move: the items that join the move's transaction, and what to call once it committed. */
export interface MoveAudit {
  readonly writes: readonly TransactWriteItem[];
  committed(): void;
}

/** A move of an existing `CURRENT` to the source's new content, before anything is written (see `gateMove`). */
export interface GatedMove {
  readonly id: string;
  readonly prompt: SourcePrompt;
  /** The content's checksum. */
  readonly sum: string;
  /** When the sync read the source (the guard of every pointer write). */
  readonly readAt: string;
  readonly pointer: PointerState;
  /** The highest version number in the prompt's history. */
  readonly latest: number;
  /** The ids whose next version number must come from the history: a version item found in the way adds one. */
  readonly versionLookups: Set<string>;
}

/** What governance does to the sync; the engine calls each method whether governance is on or not. */
export interface SyncPolicy {
  /** The audit of a move of `CURRENT` about to be written (nothing to write, nothing to note, without governance). */
  audit(id: string, move: SyncMove): MoveAudit;
  /**
   * Asks the activation gate before an existing `CURRENT` moves to the source's new content, and writes what a
   * decision other than "go on" calls for. `undefined`: not gated, or allowed for a version not yet written (the
   * caller writes it as usual).
   */
  gateMove(move: GatedMove): Promise<StepResult | undefined>;
  /** Sets (`at`) or clears (`undefined`) `source_deleted_at` on the prompt's labels. */
  flagLabels(id: string, at: string | undefined): Promise<void>;
  /** A complete full sync's last step: labels whose flag disagrees with their prompt's status are brought in line. */
  reconcileLabelFlags(outcomes: Map<string, Outcome>): Promise<Repair[]>;
  /** Sends the events of the audit records this sync wrote; never throws. */
  emitEvents(): Promise<void>;
}

const NOT_AUDITED: MoveAudit = { writes: [], committed: () => undefined };

/** The policy without governance: no audit, no gate, labels left alone (there are none to flag). */
export const UNGOVERNED: SyncPolicy = {
  audit: () => NOT_AUDITED,
  gateMove: async () => undefined,
  flagLabels: async () => undefined,
  reconcileLabelFlags: async () => [],
  emitEvents: async () => undefined,
};

/** The policy with governance: every move audited, moves gated with `gateSync`, labels flagged. */
export class GovernedSync implements SyncPolicy {
  /** Audit records written by the current sync, for its events. */
  private readonly audited: AuditRecord[] = [];

  constructor(
    private readonly governance: SyncGovernance,
    private readonly client: DynamoDBClient,
    private readonly store: ServingTableStore,
    private readonly sourceName: string,
    private readonly now: () => Date,
  ) {}

  audit(id: string, move: SyncMove): MoveAudit {
    return this.record({ promptId: id, action: 'sync', target: CURRENT, actor: this.governance.actor, ...move });
  }

  async flagLabels(id: string, at: string | undefined): Promise<void> {
    await this.store.markLabelsSourceDeleted(id, at);
  }

  /**
   * `gateSync`: asks the activation gate before `CURRENT` moves to the source's new content: an ACTIVE prompt's
   * change, a DELETED prompt back at the source, a broken pointer's repair. The candidate is the version a previous
   * denial already wrote (the highest version, `latest`, with the same checksum and not the one served), or the
   * next version. Allowed and already written: `CURRENT` moves to it (returned). Allowed and new: `undefined`, the
   * caller writes it as usual. Denied: `CURRENT` stays as it was (still DELETED, still broken), the new version item
   * is written, and the denial is audited once per move (see {@link denialKeyAt}): a later sync denied the same move
   * writes nothing, the denial of a move from another version `CURRENT` has come to since gets its own record. Both
   * are `skipped` with the gate's reason.
   */
  async gateMove({ id, prompt, sum, readAt, pointer, latest, versionLookups }: GatedMove): Promise<StepResult | undefined> {
    const gate = this.governance.gate;
    if (gate === undefined) return undefined;
    const nextVersion = latest + 1;
    const broken = pointer.problems.length > 0;
    let existing: Record<string, unknown> | undefined;
    if (latest > pointer.versionNumber) {
      const item = await this.store.getItem(id, versionKey(latest));
      if (item?.[Attr.checksum] === sum) existing = item;
    }
    const toVersion = existing ? latest : nextVersion;
    const fromVersion = pointer.versionNumber > 0 ? pointer.versionNumber : undefined;
    const why = broken ? 'repaired' : pointer.status === STATUS_DELETED ? 'back at the source' : 'changed at the source';
    const decision = await gate.check({
      promptId: id, target: CURRENT, action: 'sync', fromVersion, toVersion, checksum: sum, content: prompt.content, actor: this.governance.actor,
    });
    const at = this.timestamp();
    if (decision.allow) {
      if (!existing) return undefined;
      // The version's content only (names that are not reserved); the pointer's bookkeeping is set here.
      const item = pointerItem(id, contentAttributes(existing) as PromptContent, {
        versionNumber: toVersion,
        checksum: sum,
        source: this.sourceName,
        sourceVersion: prompt.sourceVersion,
        sourceUpdatedAt: prompt.updatedAt,
        syncedAt: at,
        latestVersionNumber: latest,
        sourceChecksum: sum,
        sourceRevision: prompt.revision,
        sourceReadAt: readAt,
      });
      const audit = this.audit(id, { fromVersion, toVersion, reason: `${why} (source version ${prompt.sourceVersion}); activation gate: ${decision.reason}`, at });
      if ((await this.store.writePointer(item, pointer, readAt, audit.writes)) !== 'written') return 'conflict';
      audit.committed();
      if (pointer.status === STATUS_DELETED) await this.flagLabels(id, undefined);
      return { kind: 'written', membership: pointer.status !== STATUS_ACTIVE };
    }
    const stays = broken ? `as it is (broken: ${pointer.problems.join('; ')})`
      : pointer.status === STATUS_DELETED ? 'DELETED' : `on version ${pointer.versionNumber}`;
    const skipped: Outcome = {
      kind: 'skipped',
      reason: `the activation gate denied version ${toVersion} (${decision.reason}); CURRENT stays ${stays}, and the next sync asks again`,
    };
    const denial: AuditRecord = {
      promptId: id, action: 'gate-deny', target: CURRENT, actor: this.governance.actor, fromVersion, toVersion, reason: `sync denied (${why}): ${decision.reason}`, at,
    };
    const keyAt = denialKeyAt(pointer, existing ? existing[Attr.syncedAt] : at) ?? at;
    const denialItem = onceAuditItem(denial, keyAt, this.governance.auditRetentionSeconds);
    if (existing) {
      if ((await putAuditOnce(this.client, this.store.tableName, denialItem)) === 'written') this.audited.push(denial);
      return skipped;
    }
    const meta = {
      versionNumber: nextVersion,
      checksum: sum,
      source: this.sourceName,
      sourceVersion: prompt.sourceVersion,
      sourceUpdatedAt: prompt.updatedAt,
      syncedAt: at,
    };
    const writes = [auditPut(this.store.tableName, denialItem)];
    const outcome = await this.store.writeDeniedVersion(versionItem(id, prompt.content, meta), pointer, readAt, nextVersion, writes);
    if (outcome === 'version-exists') {
      versionLookups.add(id);
      return 'conflict';
    }
    if (outcome !== 'written') return 'conflict';
    this.audited.push(denial);
    return skipped;
  }

  /**
   * Every label whose prompt is DELETED but lacks `source_deleted_at` gets it, and every label of an ACTIVE prompt
   * that still holds it loses it (a sync cut short after the pointer's write, a lost race with a label move).
   * Prompts this sync already decided are left to that decision. A prompt whose labels cannot be brought in line
   * fails alone (retryable); the next full sync tries again.
   */
  async reconcileLabelFlags(outcomes: Map<string, Outcome>): Promise<Repair[]> {
    const repaired: Repair[] = [];
    let drift: { deleted: string[]; active: string[] };
    try {
      drift = await this.store.labelFlagDrift();
    } catch (err) {
      // Reads only: the next full sync scans again.
      console.error(JSON.stringify({ level: 'ERROR', message: 'label flags not reconciled', error: err instanceof Error ? err.message : String(err) }));
      return repaired;
    }
    const at = this.timestamp();
    const fix = async (id: string, flag: string | undefined, reason: string) => {
      if (outcomes.has(id) && outcomes.get(id)!.kind !== 'unchanged') return;
      try {
        if ((await this.store.markLabelsSourceDeleted(id, flag)) > 0) repaired.push({ id, reason });
      } catch (err) {
        outcomes.set(id, failedOutcome(err));
      }
    };
    for (const id of drift.deleted) await fix(id, at, `labels without ${LabelAttr.sourceDeletedAt} for a prompt deleted at the source: flagged`);
    for (const id of drift.active) await fix(id, undefined, `labels flagged ${LabelAttr.sourceDeletedAt} for a prompt the source holds: cleared`);
    return repaired;
  }

  /**
   * Emits the events of this sync's audit records (PutEvents of 10; a refusal is logged, never fails the sync).
   * Runs when a sync ends, however it ends; it never throws (it would hide the sync's own error): anything that
   * stops it is logged as `audit events lost` with the count (the records are in the table).
   */
  async emitEvents(): Promise<void> {
    const entries = this.audited.splice(0);
    if (entries.length === 0 || !this.governance.events) return;
    try {
      await this.governance.events.emit(entries);
    } catch (err) {
      console.error(JSON.stringify({ level: 'ERROR', message: 'audit events lost', count: entries.length, error: err instanceof Error ? err.message : String(err) }));
    }
  }

  /** The record's conditional put, to join the move's transaction; noted for the events once the move commits. */
  private record(entry: AuditRecord): MoveAudit {
    return {
      writes: [auditPut(this.store.tableName, auditItem(entry, this.governance.auditRetentionSeconds))],
      committed: () => {
        this.audited.push(entry);
      },
    };
  }

  private timestamp(): string {
    return this.now().toISOString();
  }
}

/** An ISO-8601 time as the writers write it (`Date.prototype.toISOString`): fixed width, so text order is time order. */
const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * The time that places a sync's denial in the trail, the same on every run that is denied the same move: when
 * the move became possible, the later of when `CURRENT` came to the version it stays on (its `synced_at`) and when
 * the denied version was written (the version item's `synced_at`; for a version this denial writes, the denial's
 * own time). With the move's versions in the record's key ({@link onceAuditItem}), a sync denied a move already
 * recorded finds its record and writes nothing. `undefined` when neither time is readable (a hand-edited table).
 */
function denialKeyAt(pointer: PointerState, versionSyncedAt: unknown): string | undefined {
  const times = [pointer.syncedAt, versionSyncedAt].filter((t): t is string => typeof t === 'string' && ISO_MILLIS.test(t));
  return times.length === 0 ? undefined : times.reduce((a, b) => (a > b ? a : b));
}
