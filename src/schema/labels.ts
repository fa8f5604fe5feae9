/**
 * Wire contract (table schema v2): labels, their rollouts, and the audit trail.
 *
 * A **label** is a named pointer beside `CURRENT` (`production`, `staging`, …): one item per prompt and label,
 * sort key `LABEL#<name>`, of the same shape as `CURRENT` (a full copy of the version it serves, with
 * `version_number`, `checksum`, `status`, `schema_version` and `revision`), plus the attributes in
 * {@link LabelAttr}. The sync moves `CURRENT` only; labels move only through the release path (admin API, CLI,
 * a rollout step), and each move is audited.
 *
 * A label may carry a **rollout** (map attribute {@link LabelAttr.rollout}): while it is there, readers that
 * ask for the label serve the label's own content (arm A) or the immutable version item
 * `rollout.candidate_version` (arm B), chosen by {@link rolloutBucket} against `rollout.percent_bp`.
 *
 * An **audit record** is an immutable item in the prompt's partition, sort key
 * `AUDIT#<ISO-8601 time>#<8 hex digits>`, one per pointer move (see {@link AuditAttr}).
 */
import { hash } from 'node:crypto';
import { MAX_VERSION_NUMBER } from './keys';

/** Sort key prefix of label items: `LABEL#production`. */
export const LABEL_SORT_KEY_PREFIX = 'LABEL#';
/** Sort key prefix of audit records: `AUDIT#2026-12-01T18:00:00.000Z#1f2e3d4c`. */
export const AUDIT_SORT_KEY_PREFIX = 'AUDIT#';

/** A label name: a lowercase letter, then up to 62 lowercase letters, digits, `-` or `_`. */
export const LABEL_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,62}$/;
/** Names that match the pattern but are not labels: `current` is the `CURRENT` pointer; `latest` is kept for later. */
export const RESERVED_LABEL_NAMES: ReadonlySet<string> = new Set(['current', 'latest']);

/** Basis points in 100 %: rollout shares are whole basis points (0.01 %). */
export const ROLLOUT_SCALE = 10_000;

/** Attributes a label item adds to the `CURRENT` shape (snake_case on the wire). */
export const LabelAttr = {
  /** The label's name (S). */
  label: 'label',
  /** When and by whom the label last moved (S: ISO-8601; S: an IAM principal ARN, or the sync's role). */
  movedAt: 'moved_at',
  movedBy: 'moved_by',
  /**
   * Set (S: ISO-8601) by the sync when the source deleted the prompt: the label keeps serving the content it
   * copies, and readers report it (`sourceDeleted`). Removed when the prompt reappears at the source.
   */
  sourceDeletedAt: 'source_deleted_at',
  /** The rollout in progress (M), absent when none; its keys are {@link RolloutAttr}. */
  rollout: 'rollout',
} as const;

/**
 * Attributes a label item carries beside the prompt content: they describe the label, not the prompt, so readers
 * leave them out of the content they serve (the checksum of a label item is its version's checksum).
 */
export const LABEL_ITEM_ATTRIBUTES: ReadonlySet<string> = /* @__PURE__ */ new Set(/* @__PURE__ */ Object.values(LabelAttr));

/**
 * The keys of a rollout map a reader reads, each a constant of its own: a bundler keeps only what a reader names,
 * where it keeps every key of {@link RolloutAttr} (the controller's too) as soon as one is read from it.
 */
export const ROLLOUT_ID = 'rollout_id';
export const ROLLOUT_CANDIDATE_VERSION = 'candidate_version';
export const ROLLOUT_CANDIDATE_CHECKSUM = 'candidate_checksum';
export const ROLLOUT_PERCENT_BP = 'percent_bp';

/** Keys of a label's `rollout` map. */
export const RolloutAttr = {
  /** A random id naming the rollout (S), carried into audit records and reported by readers. */
  rolloutId: ROLLOUT_ID,
  /** Arm B: the immutable version item readers serve to the rollout's share (N), and its checksum (S). */
  candidateVersion: ROLLOUT_CANDIDATE_VERSION,
  candidateChecksum: ROLLOUT_CANDIDATE_CHECKSUM,
  /** The share served arm B, in basis points, 0 to {@link ROLLOUT_SCALE} (N). */
  percentBp: ROLLOUT_PERCENT_BP,
  /** Shares still to step to, in basis points, ascending (L of N); empty when only manual steps remain. */
  stepsBp: 'steps_bp',
  /** Seconds between scheduled steps (N); absent for manual steps only. */
  stepIntervalSeconds: 'step_interval_seconds',
  /** When the next scheduled step is due (S: ISO-8601); absent for manual steps only. */
  nextStepAt: 'next_step_at',
  /** Names of CloudWatch alarms that abort the rollout when one goes to ALARM (L of S). */
  alarms: 'alarms',
  /** When and by whom the rollout started (S, S). */
  startedAt: 'started_at',
  startedBy: 'started_by',
} as const;

/** Attributes of an audit record (besides `prompt_id` and `version`). */
export const AuditAttr = {
  /** What moved the pointer (S): one of {@link AUDIT_ACTIONS}. */
  action: 'action',
  /** The pointer that moved (S): `CURRENT` or a label name. */
  target: 'target',
  /** Version served before and after (N; `from_version` absent when the pointer is new). */
  fromVersion: 'from_version',
  toVersion: 'to_version',
  /** Who (S): the caller's IAM principal ARN, or the sync function's role. */
  actor: 'actor',
  /** Why (S): the caller's reason, the gate's reason for a denial, the alarm that aborted a rollout. */
  reason: 'reason',
  /** When (S: ISO-8601). */
  at: 'at',
  /** The rollout the move belongs to (S), if any. */
  rolloutId: 'rollout_id',
  /** Epoch seconds after which DynamoDB's TTL may delete the record (N); absent when retention is off. */
  expiresAt: 'expires_at',
} as const;

/** What an audit record says moved a pointer. `gate-deny` records a move the activation gate refused. */
export const AUDIT_ACTIONS = [
  'sync',
  'activate',
  'label',
  'rollout-start',
  'rollout-step',
  'rollout-promote',
  'rollout-abort',
  'gate-deny',
] as const;
export type AuditAction = typeof AUDIT_ACTIONS[number];

/** EventBridge `source` of the audit events (one per audit record). */
export const AUDIT_EVENT_SOURCE = 'cdk-prompt-serving';
/** EventBridge `detail-type` of the audit events. */
export const AUDIT_EVENT_DETAIL_TYPE = 'Prompt Pointer Moved';

/** Why `name` cannot be a label name, or `undefined` when it can. */
export function labelNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return `a label name must be a string, got ${name === null ? 'null' : typeof name}`;
  if (!LABEL_NAME_PATTERN.test(name)) {
    return `label name ${JSON.stringify(name.length > 80 ? name.slice(0, 60) + '…' : name)} must match ${LABEL_NAME_PATTERN.source} (a lowercase letter, then up to 62 lowercase letters, digits, '-' or '_')`;
  }
  if (RESERVED_LABEL_NAMES.has(name)) return `label name '${name}' is reserved (${[...RESERVED_LABEL_NAMES].join(', ')})`;
  return undefined;
}

/** Sort key of label `name` (checked: throws `RangeError` naming the rule). */
export function labelSortKey(name: string): string {
  const problem = labelNameProblem(name);
  if (problem) throw new RangeError(problem);
  return LABEL_SORT_KEY_PREFIX + name;
}

/** The label name in a label sort key, or `undefined` for any other sort key. */
export function parseLabelSortKey(sortKey: string): string | undefined {
  if (!sortKey.startsWith(LABEL_SORT_KEY_PREFIX)) return undefined;
  const name = sortKey.slice(LABEL_SORT_KEY_PREFIX.length);
  return labelNameProblem(name) === undefined ? name : undefined;
}

/**
 * Sticky rollout assignment: the bucket (0 to {@link ROLLOUT_SCALE} − 1) of one stickiness key for one prompt
 * and label. It is the first 4 bytes of SHA-256 over the UTF-8 of `promptId`, a 0x00 byte, `label`, a 0x00
 * byte and `key`, read as a big-endian unsigned integer, modulo {@link ROLLOUT_SCALE}. A reader serves arm B
 * when `bucket < percent_bp`, so raising the share only ever moves keys from A to B. The UTF-8 is the
 * WHATWG encoding of the UTF-16 string: a surrogate pair is its one character, and each lone surrogate (one
 * without its partner, or a pair in the wrong order) is encoded as U+FFFD (EF BF BD). The Python client
 * computes the same (`utf-16-le`/`surrogatepass` round trip, then `replace`), conformance vectors with lone and
 * split surrogates in test/conformance/fixtures/rollout.json.
 */
export function rolloutBucket(promptId: string, label: string, key: string): number {
  const data = `${promptId}\u0000${label}\u0000${key}`;
  // `crypto.hash` (Node.js 20.12+, and the package needs 20.16): a one-shot digest, about twice as fast as `createHash`
  // for short inputs. A named import, not a namespace one that every bundle of this would wrap in an interop helper.
  return hash('sha256', data, 'buffer').readUInt32BE(0) % ROLLOUT_SCALE;
}


/** A rollout map as readers use it (the keys they need of {@link RolloutAttr}; the rest is the controller's). */
export interface RolloutSpec {
  readonly rolloutId: string;
  readonly candidateVersion: number;
  readonly candidateChecksum: string;
  readonly percentBp: number;
}

/** A checksum as the contract writes it: `sha256:` + 64 lowercase hex digits. */
export const CHECKSUM_PATTERN = /^sha256:[0-9a-f]{64}$/;
/** Longest `rollout_id` readers accept (they echo it into logs). */
export const MAX_ROLLOUT_ID_LENGTH = 128;

/**
 * The rollout a label item's `rollout` attribute describes, or why readers cannot use it. A map written by hand
 * may break any rule; readers then serve arm A (the label's own content) and count it, never arm B. The rules
 * (mirrored by the Python client, conformance `rollout.json`): a map; `rollout_id` a non-empty string of at most
 * {@link MAX_ROLLOUT_ID_LENGTH} characters; `candidate_version` a whole number from 1 to 999999;
 * `candidate_checksum` `sha256:` + 64 lowercase hex; `percent_bp` a whole number from 0 to {@link ROLLOUT_SCALE}.
 */
export type ParsedRollout = { readonly spec: RolloutSpec; readonly problem?: undefined } | { readonly spec?: undefined; readonly problem: string };

export function parseRollout(value: unknown): ParsedRollout {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Uint8Array) {
    return { problem: `${LabelAttr.rollout} is not a map` };
  }
  const map = value as Record<string, unknown>;
  const own = (key: string): unknown => (Object.hasOwn(map, key) ? map[key] : undefined);
  const rolloutId = own(ROLLOUT_ID);
  const candidateVersion = own(ROLLOUT_CANDIDATE_VERSION);
  const candidateChecksum = own(ROLLOUT_CANDIDATE_CHECKSUM);
  const percentBp = own(ROLLOUT_PERCENT_BP);
  if (typeof rolloutId !== 'string' || rolloutId.length === 0 || rolloutId.length > MAX_ROLLOUT_ID_LENGTH) {
    return { problem: `${ROLLOUT_ID} ${show(rolloutId)} is not a string of 1 to ${MAX_ROLLOUT_ID_LENGTH} characters` };
  }
  if (!isWhole(candidateVersion, 1, MAX_VERSION_NUMBER)) {
    return { problem: `${ROLLOUT_CANDIDATE_VERSION} ${show(candidateVersion)} is not a whole number from 1 to ${MAX_VERSION_NUMBER}` };
  }
  if (typeof candidateChecksum !== 'string' || !CHECKSUM_PATTERN.test(candidateChecksum)) {
    return { problem: `${ROLLOUT_CANDIDATE_CHECKSUM} ${show(candidateChecksum)} is not sha256: and 64 lowercase hex digits` };
  }
  if (!isWhole(percentBp, 0, ROLLOUT_SCALE)) {
    return { problem: `${ROLLOUT_PERCENT_BP} ${show(percentBp)} is not a whole number from 0 to ${ROLLOUT_SCALE}` };
  }
  return { spec: { rolloutId, candidateVersion, candidateChecksum, percentBp } };
}

/** Arm of a bucket at a share: `B` iff `bucket < percentBp`. */
export function rolloutArm(bucket: number, percentBp: number): 'A' | 'B' {
  return bucket < percentBp ? 'B' : 'A';
}

function isWhole(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** A value in a problem message: JSON for what JSON can say (cut to 40 characters), else its type. */
function show(value: unknown): string {
  if (value === undefined) return 'absent';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    const text = JSON.stringify(value);
    return text.length > 40 ? `${text.slice(0, 37)}...` : text;
  }
  return Array.isArray(value) ? 'a list' : value instanceof Uint8Array ? 'binary' : 'a map';
}
