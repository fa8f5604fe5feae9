/**
 * What the release path refuses, and why, as codes the release function answers with (HTTP status beside
 * each) and the admin API turns back into its own error classes.
 */

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
} as const;
export type ReleaseErrorCodeValue = typeof ReleaseErrorCode[keyof typeof ReleaseErrorCode];

const STATUS: Record<ReleaseErrorCodeValue, number> = {
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
};

/** A refusal of the release path: `code` says which, `message` says why and what to do. */
export class ReleaseError extends Error {
  readonly status: number;
  constructor(readonly code: ReleaseErrorCodeValue, message: string) {
    super(message);
    this.name = 'ReleaseError';
    this.status = STATUS[code];
  }
}
