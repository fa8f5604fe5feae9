/**
 * What the release path refuses, and why, as codes the release function answers with (HTTP status beside
 * each) and the admin API turns back into its own error classes.
 */
import { RELEASE_ERROR_STATUS } from '../schema/release-api';

export const ReleaseErrorCode = {
  /** The request is malformed: a missing or wrong field, a percent out of range, an unknown alarm name. 400. */
  badRequest: 'BadRequest',
  /** The caller may not move this pointer (see principal.ts). 403. */
  forbidden: 'Forbidden',
  /** The activation gate denied the move (or failed: fail closed). 403. */
  gateDenied: 'GateDenied',
  /** No such prompt (or the id can never exist). 404. */
  promptNotFound: 'PromptNotFound',
  /** No such version of the prompt. 404. */
  versionNotFound: 'VersionNotFound',
  /** No such label on the prompt (set it first). 404. */
  labelNotFound: 'LabelNotFound',
  /** The label has no rollout in progress (or not the one named). 404. */
  rolloutNotFound: 'RolloutNotFound',
  /** The prompt was deleted at the source: nothing of it moves until it is back. 409. */
  promptDeleted: 'PromptDeleted',
  /** The label has a rollout in progress: promote or abort it first. 409. */
  rolloutInProgress: 'RolloutInProgress',
  /** The guarded write kept losing to concurrent moves; nothing was overwritten. 409. */
  conflict: 'Conflict',
  /** The client token was used for another request by this caller within the window. 422. */
  clientTokenReused: 'ClientTokenReused',
  /** A call did not answer before the function's deadline (the detail says whether the move may have committed). 504. */
  deadlineExceeded: 'DeadlineExceeded',
} as const;
export type ReleaseErrorCodeValue = typeof ReleaseErrorCode[keyof typeof ReleaseErrorCode];

/** A refusal of the release path: `code` says which, `message` says why and what to do. */
export class ReleaseError extends Error {
  readonly status: number;
  /** The structured detail of the code (schema/release-api.ts `ReleaseErrorDetails`). */
  readonly detail?: Record<string, unknown>;
  constructor(readonly code: ReleaseErrorCodeValue, message: string, detail?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReleaseError';
    this.status = RELEASE_ERROR_STATUS[code];
    this.detail = detail;
  }
}

/** The refusals the release engine makes, each with its structured detail. */
export function promptNotFound(promptId: string): ReleaseError {
  return new ReleaseError(ReleaseErrorCode.promptNotFound, `prompt '${promptId}' not found`, { promptId });
}

export function promptDeleted(promptId: string): ReleaseError {
  return new ReleaseError(ReleaseErrorCode.promptDeleted, `prompt '${promptId}' was deleted at the source; add it back there before moving its pointers`, { promptId });
}

export function versionNotFound(promptId: string, version: number): ReleaseError {
  return new ReleaseError(ReleaseErrorCode.versionNotFound, `version ${version} of prompt '${promptId}' not found`, { promptId, version });
}

export function labelNotFound(promptId: string, label: string): ReleaseError {
  return new ReleaseError(ReleaseErrorCode.labelNotFound, `prompt '${promptId}' has no label '${label}': set it first (label set)`, { promptId, label });
}

export function rolloutNotFound(promptId: string, label: string): ReleaseError {
  return new ReleaseError(ReleaseErrorCode.rolloutNotFound, `label '${label}' of prompt '${promptId}' has no rollout in progress`, { promptId, label });
}

export function rolloutInProgress(promptId: string, label: string): ReleaseError {
  return new ReleaseError(ReleaseErrorCode.rolloutInProgress, `label '${label}' of prompt '${promptId}' has a rollout in progress: promote or abort it first`, { promptId, label });
}

/** A call that did not answer before the deadline; `committed`: whether the move's write had been sent. */
export function deadlineExceeded(call: string, committed: 'no' | 'unknown', cause: unknown): ReleaseError {
  const what = committed === 'no'
    ? 'nothing was moved'
    : 'the move was sent and may have committed: retry with the same client token (a committed move then answers `replayed: true` and moves nothing)';
  return new ReleaseError(ReleaseErrorCode.deadlineExceeded, `${call} did not answer before the release function's deadline; ${what}`, { call, committed }, { cause });
}
