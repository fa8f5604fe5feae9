/** The report of one sync: what it looked at and what became of each prompt, counted from the outcomes. */
import type { Outcome, Repair } from './outcome';
import type { SourceFailure, SourceStats } from './source';

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

/** What a report adds to the outcomes: the deadline's leftovers, the listing's unreadable entries, the repairs. */
export interface ReportExtras {
  readonly deferred?: number;
  readonly listingFailures?: readonly SourceFailure[];
  readonly repaired?: Repair[];
}

/** The report of a sync that started at `started` (epoch ms) and ends now. */
export function buildReport(
  mode: SyncReport['mode'],
  scanned: number,
  outcomes: Map<string, Outcome>,
  catalogUpdated: boolean,
  started: number,
  stats: SourceStats,
  extra: ReportExtras = {},
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
