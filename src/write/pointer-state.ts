/**
 * What the engine may believe about a `CURRENT` pointer read from the table, which people can edit by hand.
 *
 * Every attribute the engine decides on is checked (type, range, format, not in the future); a value that
 * breaks the contract is not believed (it reads as absent) and is named in `problems`, so the sync reports
 * the real reason and repairs the pointer from the source. Guarded writes condition on the RAW values read
 * (`guard`), whatever their type, so a repair of a broken pointer succeeds unless someone really wrote it
 * since: a hand-broken pointer never looks like a lost race.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { Attr, MAX_VERSION_NUMBER, PromptStatus, STATUS_ACTIVE, STATUS_DELETED } from '../schema';
import { Item, fromItem } from '../schema/ddb-codec';

/**
 * How far a pointer's `source_read_at` may be ahead of this sync's clock and still be believed: clocks of
 * two Lambda hosts differ by far less. Later than that, it was written by hand (or by a broken clock), and
 * believing it would freeze the prompt (every sync would think a later sync wrote it).
 */
export const MAX_CLOCK_SKEW_MS = 60_000;

/** `source_read_at` as written by the sync: fixed-width ISO-8601 UTC with microseconds. */
const READ_AT_FORMAT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
/** A checksum as the contract writes it. */
const CHECKSUM_FORMAT = /^sha256:[0-9a-f]{64}$/;

/** The attributes a guarded pointer write conditions on, as read (undefined: absent). */
export interface PointerGuardValues {
  readonly versionNumber?: AttributeValue;
  readonly latestVersionNumber?: AttributeValue;
  readonly status?: AttributeValue;
  readonly revision?: AttributeValue;
  readonly sourceReadAt?: AttributeValue;
}

/** What the engine needs to know about a pointer to decide (never the content). */
export interface PointerState {
  readonly id: string;
  /** `ACTIVE` or `DELETED`; `undefined` when the item's `status` breaks the contract. */
  readonly status: PromptStatus | undefined;
  /** The served version; 0 when the item's `version_number` breaks the contract. */
  readonly versionNumber: number;
  /** The highest version written (never below `versionNumber`); 0 when unknown. */
  readonly latestVersionNumber: number;
  readonly checksum?: string;
  readonly sourceChecksum?: string;
  readonly sourceRevision?: string;
  readonly sourceUpdatedAt?: string;
  /** Believed only when well formed and not in the future (see {@link MAX_CLOCK_SKEW_MS}). */
  readonly sourceReadAt?: string;
  readonly sourceVersion?: string;
  /**
   * When `CURRENT` was last written with a move (the sync's writes, an activation, a deletion mark; not the
   * source's bookkeeping): ISO-8601 with milliseconds as the writers write it, absent when not so.
   */
  readonly syncedAt?: string;
  /**
   * The pointer's write counter to continue from: every pointer write sets it to this + 1. When the value read
   * cannot be believed (absent, broken), a floor no earlier revision can exceed (see {@link revisionBase}).
   */
  readonly revision: number;
  /** What breaks the contract on this pointer; empty for a healthy one. */
  readonly problems: readonly string[];
  /** Raw values for the write guard. */
  readonly guard: PointerGuardValues;
}

/** The state of a pointer item, checked against the contract at `nowMs`. */
export function toPointerState(item: Item, nowMs = Date.now()): PointerState {
  const p = fromItem(item);
  const problems: string[] = [];
  const bad = (attr: string, rule: string) => problems.push(`\`${attr}\` ${rule}, got ${show(item[attr])}`);

  const rawStatus = p[Attr.status];
  const status = rawStatus === STATUS_ACTIVE || rawStatus === STATUS_DELETED ? rawStatus : undefined;
  if (status === undefined) bad(Attr.status, `must be ${STATUS_ACTIVE} or ${STATUS_DELETED}`);

  const vn = versionNumberOf(p[Attr.versionNumber]);
  if (vn === undefined) bad(Attr.versionNumber, `must be a whole number from 1 to ${MAX_VERSION_NUMBER}`);
  const lvn = versionNumberOf(p[Attr.latestVersionNumber]);
  if (p[Attr.latestVersionNumber] !== undefined && lvn === undefined) {
    bad(Attr.latestVersionNumber, `must be a whole number from 1 to ${MAX_VERSION_NUMBER}`);
  } else if (lvn !== undefined && vn !== undefined && lvn < vn) {
    bad(Attr.latestVersionNumber, `must not be below \`${Attr.versionNumber}\` (${vn})`);
  }

  const rawRevision = p[Attr.revision];
  const revisionValid = rawRevision === undefined || isRevision(rawRevision);
  if (!revisionValid) bad(Attr.revision, `must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}`);

  const rawReadAt = p[Attr.sourceReadAt];
  let sourceReadAt: string | undefined;
  if (rawReadAt !== undefined) {
    if (typeof rawReadAt !== 'string' || !READ_AT_FORMAT.test(rawReadAt) || Number.isNaN(Date.parse(rawReadAt))) {
      bad(Attr.sourceReadAt, 'must be an ISO-8601 UTC time with microseconds');
    } else if (Date.parse(rawReadAt) > nowMs + MAX_CLOCK_SKEW_MS) {
      bad(Attr.sourceReadAt, `must not be in the future (now is ${new Date(nowMs).toISOString()})`);
    } else {
      sourceReadAt = rawReadAt;
    }
  }

  const checksum = stringOf(p[Attr.checksum]);
  if (status === STATUS_ACTIVE && (checksum === undefined || !CHECKSUM_FORMAT.test(checksum))) {
    bad(Attr.checksum, "must be 'sha256:' and 64 hex digits");
  }

  return {
    id: p[Attr.promptId] as string,
    status,
    versionNumber: vn ?? 0,
    latestVersionNumber: Math.max(lvn ?? 0, vn ?? 0),
    checksum,
    sourceChecksum: stringOf(p[Attr.sourceChecksum]),
    sourceRevision: stringOf(p[Attr.sourceRevision]),
    sourceUpdatedAt: stringOf(p[Attr.sourceUpdatedAt]),
    sourceReadAt,
    sourceVersion: stringOf(p[Attr.sourceVersion]),
    syncedAt: isoMillisOf(p[Attr.syncedAt]),
    revision: revisionBase(rawRevision, nowMs),
    problems,
    guard: {
      versionNumber: item[Attr.versionNumber],
      latestVersionNumber: item[Attr.latestVersionNumber],
      status: item[Attr.status],
      revision: item[Attr.revision],
      sourceReadAt: item[Attr.sourceReadAt],
    },
  };
}

function versionNumberOf(value: unknown): number | undefined {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_VERSION_NUMBER ? value as number : undefined;
}

/** `synced_at` as the writers write it (`Date.prototype.toISOString`). */
const SYNCED_AT_FORMAT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function isoMillisOf(value: unknown): string | undefined {
  return typeof value === 'string' && SYNCED_AT_FORMAT.test(value) && !Number.isNaN(Date.parse(value)) ? value : undefined;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A `revision` as the contract writes it: a whole number a reader can compare exactly. */
function isRevision(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/**
 * The `revision` a write continues from (it writes this + 1), for a row that exists, from the raw value read.
 *
 * A well-formed value is continued. One that cannot be believed (absent, which the contract reads as 0; not a
 * number; negative; a fraction; beyond 2^53 - 1) may hide any revision the row had, so the write continues from
 * the larger of the number salvaged from it and the writer's clock in epoch milliseconds: DynamoDB serializes
 * the conditional writes of one item, far below one per millisecond, so a row written only by this library
 * never reached a revision above the milliseconds since 1970, and a repair therefore never goes below one it
 * had (clocks within {@link MAX_CLOCK_SKEW_MS}). The one exception is a hand-written number beyond 2^53 - 1: it
 * has no successor readers can compare exactly (nor, past 38 digits, one DynamoDB can store), so it is replaced.
 */
export function revisionBase(raw: unknown, nowMs: number): number {
  if (raw !== undefined && isRevision(raw)) return raw;
  const salvaged = typeof raw === 'string' ? Number(raw) : typeof raw === 'number' ? Math.floor(raw) : NaN;
  const floor = Math.floor(nowMs);
  return isRevision(salvaged) ? Math.max(salvaged, floor) : floor;
}

function show(value: AttributeValue | undefined): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value);
  return text.length > 60 ? text.slice(0, 57) + '…' : text;
}
