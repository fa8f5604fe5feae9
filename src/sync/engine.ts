/**
 * The sync engine: source → canonicalise → checksum → compare with the table → write only what changed.
 *
 * Thin handlers call `fullSync()` (schedule, deploy) or `syncPrompt(id)` (a CloudTrail event). No Lambda
 * types here, so it runs the same in tests, the demo and the function.
 */
import type { DynamoDBClient, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import {
  Attr,
  CURRENT,
  LabelAttr,
  MAX_VERSION_NUMBER,
  PromptContent,
  STATUS_ACTIVE,
  STATUS_DELETED,
  bloomMightContain,
  checksum,
  contentAttributes,
  describePromptId,
  promptIdProblem,
  versionKey,
} from '../schema';
import { SourceReadError } from './errors';
import { FetchResult, PromptSourceReader, SourceFailure, SourceListing, SourcePrompt, SourceSummary } from './source';
import { isTransient } from '../schema/retryable';
import { AuditEntry, AuditEvents, auditItem, auditPut } from '../write/audit';
import { ClaimResult, SyncClaims } from '../write/claims';
import { contentProblem, pointerItem, sizeProblem, versionItem } from '../write/content';
import type { ActivationGate } from '../write/gate';
import { PointerState, ServingTableStore } from '../write/store';

/** Prompts fetched and written at once (source calls are paced by the source itself). */
export const DEFAULT_SYNC_CONCURRENCY = 8;
/** Times a prompt is re-read and re-decided after losing a conditional write to a concurrent writer. */
const MAX_CONFLICT_RETRIES = 5;

export interface SyncEngineOptions {
  readonly dynamoDBClient: DynamoDBClient;
  readonly tableName: string;
  readonly source: PromptSourceReader;
  /** @default DEFAULT_SYNC_CONCURRENCY */
  readonly concurrency?: number;
  /** Clock for `synced_at`. @default () => new Date() */
  readonly now?: () => Date;
  /**
   * Epoch milliseconds after which a full sync starts no further prompt: the rest are reported as
   * `deferred` and picked up by the next sync (unchanged prompts cost it nothing). Lets a first sync of a
   * large account finish inside the Lambda timeout. @default - no deadline
   */
  readonly deadline?: number;
  /**
   * Per-prompt claims shared by concurrent syncs: a prompt another sync is already reading (having started
   * after the change) is skipped as `coalesced`. @default - no coalescing across syncs
   */
  readonly claims?: SyncClaims;
  /**
   * Governance (the construct's `governance`): every move of `CURRENT` the sync makes is audited, labels of a
   * prompt deleted at the source are marked, and with a gate the sync's moves are gated. @default - none
   */
  readonly governance?: SyncGovernance;
}

/** What the sync does for the release path's audit and gate. */
export interface SyncGovernance {
  /** The actor of the sync's audit records: the sync function's role ARN. */
  readonly actor: string;
  /** Seconds audit records are kept. @default - forever */
  readonly auditRetentionSeconds?: number;
  /**
   * Asked before `CURRENT` moves to a new version from the source (`gateSync`). On a denial the version item is
   * written, `CURRENT` stays, the denial is audited once, and every later sync asks again. @default - not gated
   */
  readonly gate?: ActivationGate;
  /** Where the audit events go: one batch (PutEvents of 10) at the end of each sync. @default - no events */
  readonly events?: AuditEvents;
}

/** What a targeted sync is about. */
export interface SyncPromptOptions {
  /** When the change happened (ISO-8601, e.g. a CloudTrail event's `eventTime`). @default - now */
  readonly changedAt?: string;
}

/** A prompt that could not be synced, and why. `retryable` failures (throttling, network) may heal on retry. */
export interface SyncFailure {
  readonly id: string;
  readonly reason: string;
  readonly retryable: boolean;
}

export interface SyncReport {
  readonly mode: 'full' | 'prompt';
  /** Prompts the source listed (full) or the one asked for (prompt). */
  readonly scanned: number;
  readonly unchanged: number;
  readonly written: number;
  readonly deleted: number;
  readonly failed: number;
  /** Listed prompts not looked at because the deadline passed; the next sync takes them. */
  readonly deferred: number;
  /**
   * Whether the whole source was reconciled: every listed prompt looked at and deletions checked. False
   * after a deadline, or when the listing had entries it could not read (deletions then wait).
   */
  readonly complete: boolean;
  readonly writtenIds: string[];
  readonly deletedIds: string[];
  readonly failures: SyncFailure[];
  /** Listed prompts the source has nothing to serve for yet (e.g. no numbered version). */
  readonly skipped: { id: string; reason: string }[];
  /** Prompts left to a concurrent sync that started reading them after the change (no source call made). */
  readonly coalescedIds: string[];
  readonly catalogUpdated: boolean;
  /** Pointers found breaking the contract (hand-edited), with what was wrong; each was rewritten from the source. */
  readonly repaired: { id: string; reason: string }[];
  readonly sourceCalls: Record<string, number>;
  readonly sourceThrottles: number;
  readonly durationMs: number;
}

type Outcome =
  | { kind: 'unchanged' }
  | { kind: 'coalesced' }
  | { kind: 'written'; membership: boolean }
  | { kind: 'deleted' }
  | { kind: 'skipped'; reason: string }
  | { kind: 'failed'; reason: string; retryable: boolean };

export class SyncEngine {
  private readonly store: ServingTableStore;
  private readonly source: PromptSourceReader;
  private readonly concurrency: number;
  private readonly now: () => Date;
  private readonly deadline: number | undefined;
  private readonly claims: SyncClaims | undefined;
  /** Ids whose next version number must come from the history (a version item was found in the way). */
  private readonly versionLookups = new Set<string>();
  private readonly governance: SyncGovernance | undefined;
  /** Audit records written by the current sync, for its events. */
  private readonly audited: AuditEntry[] = [];

  constructor(options: SyncEngineOptions) {
    this.store = new ServingTableStore(options.dynamoDBClient, options.tableName);
    this.source = options.source;
    this.concurrency = options.concurrency ?? DEFAULT_SYNC_CONCURRENCY;
    this.now = options.now ?? (() => new Date());
    this.deadline = options.deadline;
    this.claims = options.claims;
    this.governance = options.governance;
  }

  /**
   * Reconciles the whole table with the source: new and changed prompts are written, unchanged ones cost
   * a compare, prompts gone from the source are marked DELETED, and the catalog is rebuilt when membership
   * changed. Throws only when the source cannot be listed at all. Deletions are only decided from a complete
   * view: past the deadline, or when the source could not list every entry, they wait for a later sync.
   */
  async fullSync(): Promise<SyncReport> {
    // Every move committed gets its event, even when the sync then throws (a catalog write, the listing of ids).
    try {
      return await this.fullSyncOnce();
    } finally {
      await this.emitAuditEvents();
    }
  }

  private async fullSyncOnce(): Promise<SyncReport> {
    const started = Date.now();
    const listedAt = readClock();
    const listedAtMs = Date.now();
    const listing = await this.source.list();
    const invalid = invalidEntries(listing);
    const valid = listing.prompts.filter((p) => !invalid.has(p.id));
    const ids = valid.map((p) => p.id);
    const [pointers, catalog] = await Promise.all([this.store.getPointers(ids), this.store.catalog.read()]);

    const outcomes = new Map<string, Outcome>(invalid);
    let deferred = 0;
    await forEachLimit(valid, this.concurrency, async (summary) => {
      if (this.deadline !== undefined && Date.now() >= this.deadline) {
        deferred++;
        return;
      }
      const changedAt = summary.changedAt !== undefined && !Number.isNaN(Date.parse(summary.changedAt)) ? Date.parse(summary.changedAt) : listedAtMs;
      outcomes.set(summary.id, await this.syncOne(summary.id, summary, pointers.get(summary.id), changedAt));
    });

    // Deletions: any ACTIVE pointer the source no longer lists. The catalog's count tells whether there can
    // be one without scanning: as many listed ACTIVE pointers as the catalog counts (all in its filter) means
    // none is missing. An unreadable entry may hide any id (a file's id can live inside it), so then none.
    const complete = deferred === 0 && listing.failures.length === 0;
    const activeListed = ids.filter((id) => pointers.get(id)?.status === STATUS_ACTIVE);
    const catalogTrusted = catalog !== undefined && catalog.problem === undefined && catalog.count === activeListed.length
      && activeListed.every((id) => bloomMightContain(catalog.bloom, catalog.bits, catalog.hashes, id));
    if (complete && !catalogTrusted) {
      // A listing is not proof of absence (a page can come back short or empty): each ACTIVE prompt it left
      // out is asked for by id, and only a prompt the source confirms gone is marked DELETED.
      const listedIds = new Set(ids);
      const gone = (await this.store.scanActiveIds()).filter((id) => !listedIds.has(id) && promptIdProblem(id) === undefined);
      const goneStates = await this.store.getPointers(gone);
      await forEachLimit([...goneStates.values()], this.concurrency, async (state) => {
        if (this.deadline !== undefined && Date.now() >= this.deadline) {
          deferred++;
          return;
        }
        outcomes.set(state.id, await this.confirmGone(state, listedAt, listedAtMs));
      });
    }

    const catalogUpdated = complete && !catalogTrusted
      ? await this.store.catalog.rebuild(this.timestamp())
      : await this.applyMembership(outcomes);
    const labelRepairs = this.governance && complete ? await this.reconcileLabelFlags(outcomes) : [];
    return this.report('full', listing.prompts.length, outcomes, catalogUpdated, started, {
      deferred, listingFailures: listing.failures, repaired: [...repairsOf([...pointers.values()]), ...labelRepairs],
    });
  }

  /**
   * A governed full sync's last step: every label whose prompt is DELETED but lacks `source_deleted_at` gets it, and
   * every label of an ACTIVE prompt that still holds it loses it (a sync cut short after the pointer's write, a lost
   * race with a label move). Prompts this sync already decided are left to that decision. A prompt whose labels
   * cannot be brought in line fails alone (retryable); the next full sync tries again.
   */
  private async reconcileLabelFlags(outcomes: Map<string, Outcome>): Promise<{ id: string; reason: string }[]> {
    const repaired: { id: string; reason: string }[] = [];
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
   * Syncs one prompt (e.g. after a CloudTrail event): written, unchanged, or marked DELETED. Also repairs
   * the catalog if an ACTIVE prompt is missing from it (an earlier rebuild that failed or was cut short).
   */
  async syncPrompt(id: string, options: SyncPromptOptions = {}): Promise<SyncReport> {
    try {
      return await this.syncPromptOnce(id, options);
    } finally {
      await this.emitAuditEvents();
    }
  }

  private async syncPromptOnce(id: string, options: SyncPromptOptions): Promise<SyncReport> {
    const started = Date.now();
    const idProblem = promptIdProblem(id);
    if (idProblem !== undefined) {
      // Never sent to DynamoDB (an over-long key aborts the request): fails alone, with the reason.
      const outcome: Outcome = { kind: 'failed', reason: `invalid prompt id ${describePromptId(id)}: ${idProblem}`, retryable: false };
      return this.report('prompt', 1, new Map([[String(id), outcome]]), false, started);
    }
    const [pointer, catalog] = await Promise.all([this.store.getPointer(id), this.store.catalog.read()]);
    const changedAt = options.changedAt !== undefined && !Number.isNaN(Date.parse(options.changedAt)) ? Date.parse(options.changedAt) : Date.now();
    const outcome = await this.syncOne(id, undefined, pointer, changedAt);
    const missingFromCatalog = outcome.kind === 'unchanged' && pointer?.status === STATUS_ACTIVE
      && (catalog === undefined || catalog.problem !== undefined || !bloomMightContain(catalog.bloom, catalog.bits, catalog.hashes, id));
    const catalogUpdated = missingFromCatalog
      ? await this.store.catalog.rebuild(this.timestamp())
      : await this.applyMembership(new Map([[id, outcome]]));
    return this.report('prompt', 1, new Map([[id, outcome]]), catalogUpdated, started, { repaired: repairsOf(pointer ? [pointer] : []) });
  }

  private async syncOne(id: string, summary: SourceSummary | undefined, pointer: PointerState | undefined, changedAtMs: number): Promise<Outcome> {
    const serving = pointer?.status === STATUS_ACTIVE && pointer.problems.length === 0;
    const listedUnchanged = summary !== undefined && serving && pointer!.sourceRevision === summary.revision;
    if (listedUnchanged && !summary.verify) return { kind: 'unchanged' };
    // A sampled re-check of a prompt the listing shows unchanged is a read, not a change to coalesce: no claim
    // (its writes are guarded like any other). Claims are for changes, where concurrent syncs pile up.
    if (!this.claims || listedUnchanged) return this.readAndApply(id, summary, pointer, serving);
    let claim: ClaimResult;
    try {
      claim = await this.claims.claim(id, changedAtMs, this.deadline);
    } catch (err) {
      return failedOutcome(err);
    }
    if (claim.kind === 'covered') return { kind: 'coalesced' };
    // The sync that covers the change has not finished: not a success; the trigger (or the next reconcile) retries.
    if (claim.kind === 'unfinished') return { kind: 'failed', reason: claim.reason, retryable: true };
    let outcome: Outcome | undefined;
    try {
      outcome = await this.readAndApply(id, summary, pointer, serving);
      return outcome;
    } finally {
      await this.claims.release(id, claim.token, outcome === undefined || outcome.kind === 'failed' ? 'failed' : 'done');
    }
  }

  private async readAndApply(id: string, summary: SourceSummary | undefined, pointer: PointerState | undefined, serving: boolean): Promise<Outcome> {
    const readAt = readClock();
    let fetched: FetchResult;
    try {
      // What the pointer knows lets a source answer "unchanged" without reading content. That answer only
      // means something for a pointer that serves content: a DELETED or broken one needs the content itself.
      fetched = await this.source.fetch(id, summary, serving ? {
        sourceVersion: pointer!.sourceVersion, sourceRevision: pointer!.sourceRevision,
      } : undefined);
    } catch (err) {
      return failedOutcome(err);
    }
    if (fetched.kind === 'prompt') {
      const problem = contentProblem(id, fetched.prompt.content);
      if (problem) return { kind: 'failed', reason: problem, retryable: false };
    }
    try {
      for (let attempt = 0; attempt <= MAX_CONFLICT_RETRIES; attempt++) {
        if (attempt > 0) pointer = await this.store.getPointer(id);
        const outcome = await this.apply(id, fetched, readAt, pointer);
        if (outcome !== 'conflict') return outcome;
      }
      return { kind: 'failed', reason: `lost ${MAX_CONFLICT_RETRIES + 1} conditional writes to concurrent writers`, retryable: true };
    } catch (err) {
      return failedOutcome(err, pointer);
    }
  }

  /**
   * An ACTIVE prompt the listing left out: asked for by id (a short or empty listing page is not proof of
   * absence). Gone at the source → DELETED; still there → synced like any other (and kept).
   */
  private async confirmGone(state: PointerState, listedAt: string, listedAtMs: number): Promise<Outcome> {
    if (isOlder(listedAt, state.sourceReadAt)) return { kind: 'unchanged' }; // written after the listing
    return this.syncOne(state.id, undefined, state, listedAtMs);
  }

  /**
   * Decides and performs the one write (if any) that brings `pointer` in line with what the source held at
   * `readAt`. A sync that read the source before the pointer's last writer did never overwrites it.
   */
  private async apply(id: string, fetched: FetchResult, readAt: string, pointer: PointerState | undefined): Promise<Outcome | 'conflict'> {
    if (isOlder(readAt, pointer?.sourceReadAt)) return { kind: 'unchanged' };
    const broken = pointer !== undefined && pointer.problems.length > 0;
    if (fetched.kind === 'not-found') {
      if (!pointer || (pointer.status !== STATUS_ACTIVE && !broken)) {
        // Already DELETED: its labels are brought in line again (a sync cut short after the pointer's write left some
        // without `source_deleted_at`); labels already flagged cost nothing but the Query.
        if (this.governance && pointer?.status === STATUS_DELETED) await this.store.markLabelsSourceDeleted(id, this.timestamp());
        return { kind: 'skipped', reason: fetched.reason ?? 'not found at the source' };
      }
      const at = this.timestamp();
      const entry: AuditEntry | undefined = this.auditEntry(id, { fromVersion: pointer.versionNumber || undefined, reason: 'deleted at the source', at });
      if ((await this.store.markDeleted(pointer, at, readAt, this.auditWrite(entry))) !== 'written') return 'conflict';
      this.noteAudited(entry);
      // Labels keep serving what they copy, visibly: `source_deleted_at` on each.
      if (this.governance) await this.store.markLabelsSourceDeleted(id, at);
      return { kind: 'deleted' };
    }
    if (fetched.kind === 'unchanged') {
      if (broken) throw new Error(`the source answered "unchanged" for a pointer that must be rewritten (${pointer!.problems.join('; ')})`);
      if (!pointer || pointer.status !== STATUS_ACTIVE || pointer.sourceRevision === fetched.revision) return { kind: 'unchanged' };
      const outcome = await this.store.updateSourceMetadata(pointer, readAt, { [Attr.sourceRevision]: fetched.revision });
      return outcome === 'written' ? { kind: 'unchanged' } : 'conflict';
    }
    const prompt = fetched.prompt;
    const sum = checksum(prompt.content);
    if (!broken && pointer?.status === STATUS_ACTIVE && (sum === pointer.sourceChecksum || sum === pointer.checksum)) {
      // The source's content has not changed since the last sync, or is already what is served: keep what
      // is served (this is what leaves an operator's rollback in place) and only note the source's revision.
      if (sum === pointer.sourceChecksum && prompt.revision === pointer.sourceRevision) return { kind: 'unchanged' };
      const outcome = await this.store.updateSourceMetadata(pointer, readAt, {
        [Attr.sourceChecksum]: sum,
        [Attr.sourceRevision]: prompt.revision,
        [Attr.sourceVersion]: prompt.sourceVersion,
        [Attr.sourceUpdatedAt]: prompt.updatedAt,
      });
      return outcome === 'written' ? { kind: 'unchanged' } : 'conflict';
    }
    return this.writeNewVersion(id, prompt, sum, readAt, pointer);
  }

  private async writeNewVersion(id: string, prompt: SourcePrompt, sum: string, readAt: string, pointer: PointerState | undefined): Promise<Outcome | 'conflict'> {
    let latest = pointer?.latestVersionNumber ?? 0;
    const broken = pointer !== undefined && pointer.problems.length > 0;
    if (broken || latest >= MAX_VERSION_NUMBER) {
      // A repair, or numbers with no successor: the pointer's numbers are not believed, the history is. Every
      // number the sync puts on a pointer is written in the same transaction as its version item, so a number
      // above the highest version item was written by hand (`version_number 999999`) and is not continued.
      latest = await this.store.highestVersionNumber(id);
    } else if (this.versionLookups.has(id)) {
      // A version item was in the way: the pointer is behind its history.
      latest = Math.max(latest, await this.store.highestVersionNumber(id));
    }
    if (latest >= MAX_VERSION_NUMBER) {
      // A version item at the last number (made by hand): continue the history below the items at the top.
      const below = await this.store.highestBelowTopRun(id);
      if (below === undefined) {
        return { kind: 'failed', reason: `every version number up to ${MAX_VERSION_NUMBER} is used by a version item; no new version can be written`, retryable: false };
      }
      latest = below;
    }
    const versionNumber = latest + 1;
    // Every move of an existing pointer is gated: a change of an ACTIVE prompt, a prompt back at the source after
    // a delete (DELETED pointer, new version), and the repair of a broken pointer. Only a first write is not.
    if (this.governance?.gate !== undefined && pointer !== undefined) {
      const decided = await this.gateSyncMove(id, prompt, sum, readAt, pointer, latest);
      if (decided !== undefined) return decided;
    }
    const meta = {
      versionNumber,
      checksum: sum,
      source: this.source.name,
      sourceVersion: prompt.sourceVersion,
      sourceUpdatedAt: prompt.updatedAt,
      syncedAt: this.timestamp(),
    };
    const content: PromptContent = prompt.content;
    const version = versionItem(id, content, meta);
    const current = pointerItem(id, content, {
      ...meta, latestVersionNumber: versionNumber, sourceChecksum: sum, sourceRevision: prompt.revision, sourceReadAt: readAt,
    });
    const tooBig = sizeProblem(current);
    if (tooBig) return { kind: 'failed', reason: tooBig, retryable: false };
    const entry = this.auditEntry(id, {
      fromVersion: pointer && pointer.versionNumber > 0 ? pointer.versionNumber : undefined,
      toVersion: versionNumber,
      reason: `${!pointer ? 'new prompt' : pointer.status === STATUS_DELETED ? 'back at the source' : 'changed at the source'} (source version ${prompt.sourceVersion})`,
      at: meta.syncedAt,
    });
    const outcome = await this.store.writeVersion(version, current, pointer, readAt, this.auditWrite(entry));
    if (outcome === 'version-exists') {
      this.versionLookups.add(id);
      return 'conflict';
    }
    this.versionLookups.delete(id);
    if (outcome !== 'written') return 'conflict';
    this.noteAudited(entry);
    if (this.governance && pointer?.status === STATUS_DELETED) await this.store.markLabelsSourceDeleted(id, undefined);
    return { kind: 'written', membership: pointer?.status !== STATUS_ACTIVE };
  }

  /**
   * `gateSync`: asks the activation gate before `CURRENT` moves to the source's new content: an ACTIVE prompt's
   * change, a DELETED prompt back at the source, a broken pointer's repair. The candidate is the version a previous
   * denial already wrote (the highest version, `latest`, with the same checksum and not the one served), or the
   * next version. Allowed and already written: `CURRENT` moves to it (returned). Allowed and new: `undefined`, the
   * caller writes it as usual. Denied: the new version item is written and audited once (`gate-deny`), `CURRENT`
   * stays as it was (still DELETED, still broken); a denial of a version written before writes nothing. Both are
   * `skipped` with the gate's reason.
   */
  private async gateSyncMove(
    id: string, prompt: SourcePrompt, sum: string, readAt: string, pointer: PointerState, latest: number,
  ): Promise<Outcome | 'conflict' | undefined> {
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
    const decision = await this.governance!.gate!.check({
      promptId: id, target: CURRENT, action: 'sync', fromVersion, toVersion, checksum: sum, content: prompt.content, actor: this.governance!.actor,
    });
    const at = this.timestamp();
    if (decision.allow) {
      if (!existing) return undefined;
      // The version's content only (names that are not reserved); the pointer's bookkeeping is set here.
      const item = pointerItem(id, contentAttributes(existing) as PromptContent, {
        versionNumber: toVersion,
        checksum: sum,
        source: this.source.name,
        sourceVersion: prompt.sourceVersion,
        sourceUpdatedAt: prompt.updatedAt,
        syncedAt: at,
        latestVersionNumber: latest,
        sourceChecksum: sum,
        sourceRevision: prompt.revision,
        sourceReadAt: readAt,
      });
      const entry = this.auditEntry(id, { fromVersion, toVersion, reason: `${why} (source version ${prompt.sourceVersion}); activation gate: ${decision.reason}`, at });
      if ((await this.store.writePointer(item, pointer, readAt, this.auditWrite(entry))) !== 'written') return 'conflict';
      this.noteAudited(entry);
      if (pointer.status === STATUS_DELETED) await this.store.markLabelsSourceDeleted(id, undefined);
      return { kind: 'written', membership: pointer.status !== STATUS_ACTIVE };
    }
    const stays = broken ? `as it is (broken: ${pointer.problems.join('; ')})`
      : pointer.status === STATUS_DELETED ? 'DELETED' : `on version ${pointer.versionNumber}`;
    const skipped: Outcome = {
      kind: 'skipped',
      reason: `the activation gate denied version ${toVersion} (${decision.reason}); CURRENT stays ${stays}, and the next sync asks again`,
    };
    if (existing) return skipped;
    const meta = {
      versionNumber: nextVersion,
      checksum: sum,
      source: this.source.name,
      sourceVersion: prompt.sourceVersion,
      sourceUpdatedAt: prompt.updatedAt,
      syncedAt: at,
    };
    const entry: AuditEntry = {
      ...this.auditEntry(id, { fromVersion, toVersion, reason: `sync denied (${why}): ${decision.reason}`, at })!,
      action: 'gate-deny',
    };
    const outcome = await this.store.writeDeniedVersion(versionItem(id, prompt.content, meta), pointer, readAt, nextVersion, this.auditWrite(entry));
    if (outcome === 'version-exists') {
      this.versionLookups.add(id);
      return 'conflict';
    }
    if (outcome !== 'written') return 'conflict';
    this.noteAudited(entry);
    return skipped;
  }

  /** The audit entry of one of the sync's moves of `CURRENT`, when governance is on. */
  private auditEntry(id: string, move: { fromVersion?: number; toVersion?: number; reason: string; at: string }): AuditEntry | undefined {
    if (!this.governance) return undefined;
    return { promptId: id, action: 'sync', target: CURRENT, actor: this.governance.actor, ...move };
  }

  /** The audit record's conditional put, to join the move's transaction (none without governance). */
  private auditWrite(entry: AuditEntry | undefined): TransactWriteItem[] {
    if (!entry) return [];
    return [auditPut(this.store.tableName, auditItem(entry, this.governance!.auditRetentionSeconds))];
  }

  private noteAudited(entry: AuditEntry | undefined): void {
    if (entry) this.audited.push(entry);
  }

  /**
   * Emits the events of this sync's audit records (PutEvents of 10; a refusal is logged, never fails the sync).
   * Runs when a sync ends, however it ends; it never throws (it would hide the sync's own error): anything that
   * stops it is logged as `audit events lost` with the count (the records are in the table).
   */
  private async emitAuditEvents(): Promise<void> {
    const entries = this.audited.splice(0);
    if (entries.length === 0 || !this.governance?.events) return;
    try {
      await this.governance.events.emit(entries);
    } catch (err) {
      console.error(JSON.stringify({ level: 'ERROR', message: 'audit events lost', count: entries.length, error: err instanceof Error ? err.message : String(err) }));
    }
  }

  /**
   * Brings the catalog in line with this sync's membership changes: ids that became ACTIVE are added in place
   * (one catalog read and write, whatever the table's size); a deletion rebuilds it (a Bloom filter cannot
   * forget an id).
   */
  private async applyMembership(outcomes: Map<string, Outcome>): Promise<boolean> {
    const added: string[] = [];
    let removed = false;
    for (const [id, o] of outcomes) {
      if (o.kind === 'written' && o.membership) added.push(id);
      else if (o.kind === 'deleted') removed = true;
    }
    if (removed) return this.store.catalog.rebuild(this.timestamp());
    return added.length > 0 ? this.store.catalog.add(added, this.timestamp()) : false;
  }

  private timestamp(): string {
    return this.now().toISOString();
  }

  private report(
    mode: SyncReport['mode'],
    scanned: number,
    outcomes: Map<string, Outcome>,
    catalogUpdated: boolean,
    started: number,
    extra: { deferred?: number; listingFailures?: readonly SourceFailure[]; repaired?: { id: string; reason: string }[] } = {},
  ): SyncReport {
    const writtenIds: string[] = [];
    const deletedIds: string[] = [];
    const failures: SyncFailure[] = (extra.listingFailures ?? []).map((f) => ({ ...f, retryable: false }));
    const skipped: { id: string; reason: string }[] = [];
    const coalescedIds: string[] = [];
    let unchanged = 0;
    for (const [id, o] of outcomes) {
      if (o.kind === 'written') writtenIds.push(id);
      else if (o.kind === 'deleted') deletedIds.push(id);
      else if (o.kind === 'failed') failures.push({ id, reason: o.reason, retryable: o.retryable });
      else if (o.kind === 'skipped') skipped.push({ id, reason: o.reason });
      else if (o.kind === 'coalesced') coalescedIds.push(id);
      else unchanged++;
    }
    const deferred = extra.deferred ?? 0;
    const stats = this.source.stats();
    return {
      mode,
      scanned,
      unchanged,
      written: writtenIds.length,
      deleted: deletedIds.length,
      failed: failures.length,
      deferred,
      complete: mode === 'full' ? deferred === 0 && (extra.listingFailures ?? []).length === 0 : deferred === 0,
      writtenIds,
      deletedIds,
      failures,
      skipped,
      coalescedIds,
      catalogUpdated,
      repaired: extra.repaired ?? [],
      sourceCalls: stats.calls,
      sourceThrottles: stats.throttles,
      durationMs: Date.now() - started,
    };
  }
}


/**
 * Wall-clock time with microseconds (`2026-11-30T03:00:00.123456Z`): fixed width, so later times sort
 * later as text, in DynamoDB and here. Orders syncs by when they read the source.
 */
export function readClock(): string {
  const micros = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  const iso = new Date(Math.floor(micros / 1000)).toISOString();
  return iso.slice(0, 23) + String(micros % 1000).padStart(3, '0') + 'Z';
}

/** `a` is known to be strictly older than `b` (fixed-width ISO-8601 strings compare as text). */
function isOlder(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && a < b;
}

function failedOutcome(err: unknown, pointer?: PointerState): Outcome {
  const message = err instanceof Error ? err.message : String(err);
  const reason = pointer && pointer.problems.length > 0 ? `${message} (repairing a broken pointer: ${pointer.problems.join('; ')})` : message;
  return { kind: 'failed', reason, retryable: err instanceof SourceReadError ? err.retryable : isTransient(err) };
}

/**
 * Listed entries whose id can never be a key (over-long, reserved…), as failed outcomes: they fail alone and,
 * their id being known, hide no other prompt, so deletions are still checked.
 */
function invalidEntries(listing: SourceListing): Map<string, Outcome> {
  const out = new Map<string, Outcome>();
  for (const p of listing.prompts) {
    const problem = promptIdProblem(p.id);
    if (problem !== undefined) out.set(p.id, { kind: 'failed', reason: `invalid prompt id ${describePromptId(p.id)}: ${problem}`, retryable: false });
  }
  return out;
}

function repairsOf(pointers: readonly PointerState[]): { id: string; reason: string }[] {
  return pointers.filter((p) => p.problems.length > 0).map((p) => ({ id: p.id, reason: p.problems.join('; ') }));
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(workers);
}
