/**
 * What the sync decided for one prompt (`Outcome`), and the small rules every step of the sync shares: the read
 * clock that orders syncs, and how an error becomes a failed outcome.
 */
import { SourceReadError } from './errors';
import { isTransient } from '../schema/retryable';
import type { PointerState } from '../write/store';

/** What became of one prompt in a sync. */
export type Outcome =
  | { kind: 'unchanged' }
  | { kind: 'coalesced' }
  | { kind: 'written'; membership: boolean }
  | { kind: 'deleted' }
  | { kind: 'skipped'; reason: string }
  | { kind: 'failed'; reason: string; retryable: boolean };

/** A step's answer: an outcome, or `'conflict'` when a concurrent writer won and the prompt is read and decided again. */
export type StepResult = Outcome | 'conflict';

/** Something the sync found breaking the contract and rewrote, and what was wrong. */
export interface Repair {
  readonly id: string;
  readonly reason: string;
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
export function isOlder(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && a < b;
}

/** An error as a failed outcome: retryable when the source says so, or when the AWS error is transient. */
export function failedOutcome(err: unknown, pointer?: PointerState): Outcome {
  const message = err instanceof Error ? err.message : String(err);
  const reason = pointer && pointer.problems.length > 0 ? `${message} (repairing a broken pointer: ${pointer.problems.join('; ')})` : message;
  return { kind: 'failed', reason, retryable: err instanceof SourceReadError ? err.retryable : isTransient(err) };
}
