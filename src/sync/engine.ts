/**
 * The sync engine: source → canonicalise → checksum → compare with the table → write only what changed.
 *
 * Thin handlers call `fullSync()` (schedule, deploy) or `syncPrompt(id)` (a CloudTrail event). No Lambda
 * types here, so it runs the same in tests, the demo and the function. The per-prompt write is
 * `prompt-write.ts`; what governance adds (audit, gate, label flags) is `governance-policy.ts`.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  STATUS_ACTIVE,
  bloomMightContain,
  describePromptId,
  promptIdProblem,
} from '../schema';
import { GovernedSync, SyncGovernance, SyncPolicy, UNGOVERNED } from './governance-policy';
import { Outcome, Repair, failedOutcome, isOlder, readClock } from './outcome';
import { PromptWriter } from './prompt-write';
import { ReportExtras, SyncReport, buildReport } from './report';
import { FetchResult, PromptSourceReader, SourceListing, SourceSummary } from './source';
import { ClaimResult, SyncClaims } from '../write/claims';
import { contentProblem } from '../write/content';
import { PointerState, ServingTableStore } from '../write/store';

export type { SyncGovernance } from './governance-policy';
export type { SyncFailure, SyncReport } from './report';
export { readClock } from './outcome';

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

/** What a targeted sync is about. */
export interface SyncPromptOptions {
  /** When the change happened (ISO-8601, e.g. a CloudTrail event's `eventTime`). @default - now */
  readonly changedAt?: string;
}

export class SyncEngine {
  private readonly store: ServingTableStore;
  private readonly source: PromptSourceReader;
  private readonly concurrency: number;
  private readonly now: () => Date;
  private readonly deadline: number | undefined;
  private readonly claims: SyncClaims | undefined;
  /** What governance adds to the sync; does nothing without it. */
  private readonly policy: SyncPolicy;
  private readonly writer: PromptWriter;

  constructor(options: SyncEngineOptions) {
    this.store = new ServingTableStore(options.dynamoDBClient, options.tableName);
    this.source = options.source;
    this.concurrency = options.concurrency ?? DEFAULT_SYNC_CONCURRENCY;
    this.now = options.now ?? (() => new Date());
    this.deadline = options.deadline;
    this.claims = options.claims;
    this.policy = options.governance
      ? new GovernedSync(options.governance, options.dynamoDBClient, this.store, this.source.name, this.now)
      : UNGOVERNED;
    this.writer = new PromptWriter(this.store, this.source.name, this.policy, this.now);
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
      await this.policy.emitEvents();
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
    const labelRepairs = complete ? await this.policy.reconcileLabelFlags(outcomes) : [];
    return this.report('full', listing.prompts.length, outcomes, catalogUpdated, started, {
      deferred, listingFailures: listing.failures, repaired: [...repairsOf([...pointers.values()]), ...labelRepairs],
    });
  }

  /**
   * Syncs one prompt (e.g. after a CloudTrail event): written, unchanged, or marked DELETED. Also repairs
   * the catalog if an ACTIVE prompt is missing from it (an earlier rebuild that failed or was cut short).
   */
  async syncPrompt(id: string, options: SyncPromptOptions = {}): Promise<SyncReport> {
    try {
      return await this.syncPromptOnce(id, options);
    } finally {
      await this.policy.emitEvents();
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
        const outcome = await this.writer.apply(id, fetched, readAt, pointer);
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
    mode: SyncReport['mode'], scanned: number, outcomes: Map<string, Outcome>, catalogUpdated: boolean, started: number, extra: ReportExtras = {},
  ): SyncReport {
    return buildReport(mode, scanned, outcomes, catalogUpdated, started, this.source.stats(), extra);
  }
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

function repairsOf(pointers: readonly PointerState[]): Repair[] {
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
