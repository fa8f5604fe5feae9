/**
 * The release API: what a caller sends to the release function (a JSON body of a signed `POST` to its URL) and what
 * it answers, shared by the release function, the admin API and the CLI. Answer: `200 { "result": ReleaseAnswer }`
 * or `<status> { "error": { "code", "message", "detail" } }`, the code one of {@link RELEASE_ERROR_CODES} and the
 * detail structured per code (a caller reads `detail.version`, never a number out of `message`).
 *
 * Moves are idempotent per client token: a request carrying `clientToken` whose move already committed (same caller,
 * same request, within {@link CLIENT_TOKEN_WINDOW_SECONDS}) answers that move's result with `replayed: true` and
 * moves nothing. No dependency on the AWS SDK.
 */
import type { AuditAction } from './labels';

/** How long a committed move's client token is remembered: a retry within it never moves twice. 24 hours. */
export const CLIENT_TOKEN_WINDOW_SECONDS = 24 * 3600;
/** A client token: 1 to 64 characters of letters, digits, `-` and `_` (a UUID fits). */
export const CLIENT_TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export const RELEASE_ACTIONS = ['activate', 'set-label', 'rollout-start', 'rollout-step', 'rollout-promote', 'rollout-abort'] as const;
export type ReleaseAction = typeof RELEASE_ACTIONS[number];

/** Fields every request may carry. */
export interface ReleaseRequestCommon {
  readonly promptId: string;
  readonly reason?: string;
  /** One per user intent, reused on every retry of it (see {@link CLIENT_TOKEN_WINDOW_SECONDS}). */
  readonly clientToken?: string;
}

/**
 * The requests as sent on the wire. Rollout shares are basis points (whole numbers, 1 to 10,000 = 0.01 % to 100 %),
 * the unit of label items and readers (`percent_bp`). `percent` and `steps` (in percent) are deprecated: still
 * accepted for one release; a request carrying both forms of one share must make them agree.
 */
export type ReleaseRequestBody =
  | (ReleaseRequestCommon & { readonly action: 'activate'; readonly version: number })
  | (ReleaseRequestCommon & { readonly action: 'set-label'; readonly label: string; readonly version: number })
  | (ReleaseRequestCommon & {
    readonly action: 'rollout-start';
    readonly label: string;
    readonly version: number;
    /** The share served the candidate at first, in basis points. Required (or the deprecated `percent`). */
    readonly percentBp?: number;
    /** Shares to step to, rising, in basis points. */
    readonly stepsBp?: readonly number[];
    /** @deprecated send `percentBp` (basis points); accepted for one release. */
    readonly percent?: number;
    /** @deprecated send `stepsBp` (basis points); accepted for one release. */
    readonly steps?: readonly number[];
    readonly stepIntervalSeconds?: number;
    readonly alarms?: readonly string[];
  })
  | (ReleaseRequestCommon & {
    readonly action: 'rollout-step';
    readonly label: string;
    /** The share to step to, in basis points; absent: the rollout's next step. */
    readonly percentBp?: number;
    /** @deprecated send `percentBp` (basis points); accepted for one release. */
    readonly percent?: number;
  })
  | (ReleaseRequestCommon & { readonly action: 'rollout-promote' | 'rollout-abort'; readonly label: string });

/**
 * One audited pointer move: what the writers put in the table (`src/write/audit.ts`: the item `AUDIT#…` and its
 * EventBridge event), what the admin API's `listAudit` reads back (`cdk-prompt-serving/admin`) and what the CLI's
 * `history --audit` prints. The stored attributes are the snake_case of these fields (`AuditAttr` in
 * `./labels.ts`, `percent_bp`); `percent` and `expiresAt` are derived when a record is read, never stored as such.
 */
export interface AuditRecord {
  readonly promptId: string;
  /**
   * `sync`, `activate`, `label`, `rollout-start`, `rollout-step`, `rollout-promote`, `rollout-abort` or `gate-deny`.
   * Read back as stored: an item edited by hand may carry another word.
   */
  readonly action: AuditAction;
  /** `CURRENT` or the label. */
  readonly target: string;
  /** The version served before (absent when there was none: a new prompt or label). */
  readonly fromVersion?: number;
  /** The version served after (absent when there is none: a deletion). */
  readonly toVersion?: number;
  /** The caller's IAM principal ARN, or the sync's / rollout controller's role. */
  readonly actor: string;
  /** Why: the caller's reason (cut to 1,000 characters when written), the gate's reason, the alarm. */
  readonly reason?: string;
  /** ISO-8601, the writer's clock. */
  readonly at: string;
  readonly rolloutId?: string;
  /** A rollout's share after the move, in basis points (0 to 10,000). */
  readonly percentBp?: number;
  /** @deprecated read `percentBp`; the same share in percent, still set when read back, for one release. Never stored. */
  readonly percent?: number;
  /**
   * When DynamoDB may delete the record (ISO-8601), if audit retention is on. Set when read back; a writer's is
   * ignored (the writer stamps it from its own clock and the retention).
   */
  readonly expiresAt?: string;
}

/** What the post-commit audit event became: best-effort, the move and its audit record are committed either way. */
export type AuditEventDelivery = 'sent' | 'failed' | 'off';

/** The answer to a move (the release function's `result`; the admin API's `ReleaseResult`). */
export interface ReleaseAnswer {
  readonly promptId: string;
  /** `CURRENT` or the label. */
  readonly target: string;
  readonly action: AuditAction;
  /** What the pointer served before (absent for a new label). */
  readonly fromVersion?: number;
  /** What it serves after (for a rollout: the candidate). */
  readonly toVersion: number;
  /** `false` when nothing had to move: nothing was written or audited. */
  readonly changed: boolean;
  readonly at: string;
  readonly rolloutId?: string;
  /** The rollout's share after the move, in basis points (0 to 10,000). */
  readonly percentBp?: number;
  /** @deprecated read `percentBp`; the same share in percent, still sent for one release. */
  readonly percent?: number;
  /** The next scheduled step, if any. */
  readonly nextStepAt?: string;
  /** The post-commit audit event (EventBridge), best-effort; absent on answers that moved nothing. */
  readonly auditEvent?: AuditEventDelivery;
  /** `true`: a retry of a move that had already committed (same client token); this answer is that move's, nothing moved now. */
  readonly replayed?: boolean;
}

/** Error codes of the release API (HTTP status in {@link RELEASE_ERROR_STATUS}). */
export const RELEASE_ERROR_CODES = [
  'BadRequest', 'Forbidden', 'GateDenied', 'PromptNotFound', 'VersionNotFound', 'LabelNotFound', 'RolloutNotFound',
  'PromptDeleted', 'RolloutInProgress', 'Conflict', 'ClientTokenReused', 'DeadlineExceeded', 'Internal',
] as const;
export type ReleaseErrorCodeName = typeof RELEASE_ERROR_CODES[number];

export const RELEASE_ERROR_STATUS: Record<ReleaseErrorCodeName, number> = {
  BadRequest: 400,
  Forbidden: 403,
  GateDenied: 403,
  PromptNotFound: 404,
  VersionNotFound: 404,
  LabelNotFound: 404,
  RolloutNotFound: 404,
  PromptDeleted: 409,
  RolloutInProgress: 409,
  Conflict: 409,
  ClientTokenReused: 422,
  DeadlineExceeded: 504,
  Internal: 500,
};

/** The structured detail of each error code. */
export interface ReleaseErrorDetails {
  /** The field at fault, the value given (as JSON text) and what is allowed. */
  BadRequest: { readonly field?: string; readonly value?: string; readonly allowed?: string };
  Forbidden: { readonly caller?: string };
  GateDenied: { readonly reason: string };
  PromptNotFound: { readonly promptId: string };
  VersionNotFound: { readonly promptId: string; readonly version: number };
  LabelNotFound: { readonly promptId: string; readonly label: string };
  RolloutNotFound: { readonly promptId: string; readonly label: string };
  PromptDeleted: { readonly promptId: string };
  RolloutInProgress: { readonly promptId: string; readonly label: string };
  Conflict: { readonly promptId?: string; readonly target?: string };
  ClientTokenReused: { readonly clientToken: string };
  /**
   * A call did not answer in time. `committed: 'no'`: nothing moved; `'unknown'`: the move's write was sent and may
   * have committed; retry with the same client token (a committed move then answers `replayed: true`).
   */
  DeadlineExceeded: { readonly call: string; readonly committed: 'no' | 'unknown' };
  Internal: Record<string, never>;
}

/** An error answer of the release API. */
export type ReleaseErrorBody = {
  [C in ReleaseErrorCodeName]: { readonly code: C; readonly message: string; readonly detail?: ReleaseErrorDetails[C] }
}[ReleaseErrorCodeName];

/** A release function's HTTP answer, read: the result, the error it names, or what was wrong with its shape. */
export type ParsedReleaseAnswer =
  | { readonly kind: 'result'; readonly result: ReleaseAnswer }
  | { readonly kind: 'error'; readonly error: ReleaseErrorBody }
  | { readonly kind: 'malformed'; readonly problem: string };

/** The one parser of the release function's answers: every shape it does not know is `malformed`, naming why. */
export function parseReleaseAnswer(status: number, text: string): ParsedReleaseAnswer {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { kind: 'malformed', problem: `the answer (${status}) is not JSON: ${preview(text)}` };
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { kind: 'malformed', problem: `the answer (${status}) is ${preview(text)}, not a JSON object` };
  }
  const b = body as Record<string, unknown>;
  if (status >= 200 && status < 300) {
    const problem = answerProblem(b.result);
    return problem === undefined ? { kind: 'result', result: b.result as ReleaseAnswer } : { kind: 'malformed', problem: `the answer's \`result\` ${problem}` };
  }
  const e = b.error as Record<string, unknown> | undefined;
  if (e === null || typeof e !== 'object' || Array.isArray(e)) return { kind: 'malformed', problem: `the answer (${status}) has no \`error\` object: ${preview(text)}` };
  if (typeof e.code !== 'string' || !(RELEASE_ERROR_CODES as readonly string[]).includes(e.code)) {
    return { kind: 'malformed', problem: `the answer (${status}) names error code ${JSON.stringify(e.code) ?? 'none'}, not one of ${RELEASE_ERROR_CODES.join(', ')}` };
  }
  const detail = e.detail !== null && typeof e.detail === 'object' && !Array.isArray(e.detail) ? e.detail : undefined;
  return { kind: 'error', error: { code: e.code, message: typeof e.message === 'string' ? e.message : '', detail } as ReleaseErrorBody };
}

function answerProblem(r: unknown): string | undefined {
  if (r === null || typeof r !== 'object' || Array.isArray(r)) return `is ${preview(JSON.stringify(r) ?? 'absent')}, not an object`;
  const a = r as Record<string, unknown>;
  for (const k of ['promptId', 'target', 'action', 'at'] as const) if (typeof a[k] !== 'string') return `has no string \`${k}\``;
  if (typeof a.changed !== 'boolean') return 'has no boolean `changed`';
  if (typeof a.toVersion !== 'number' || !Number.isInteger(a.toVersion)) return 'has no whole-number `toVersion`';
  for (const k of ['fromVersion', 'percentBp', 'percent'] as const) if (a[k] !== undefined && typeof a[k] !== 'number') return `has a \`${k}\` that is not a number`;
  return undefined;
}

function preview(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
