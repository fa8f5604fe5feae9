/**
 * The admin API's error family. Everything `PromptAdmin` throws is a `PromptAdminError`; catch the subclasses
 * to tell "no such prompt or version" from "deleted at the source" from "lost a race" from "the table failed".
 *
 * Each class sets `name` explicitly (not from `new.target.name`) so it survives minified bundles.
 */

/** Base class of every error the admin API throws. */
export class PromptAdminError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PromptAdminError';
  }
}

/**
 * The table holds no such prompt (or the id can never exist: empty, too long, or reserved `#…`). Named apart
 * from the runtime client's `PromptNotFoundError` (a `PromptServingError`), so that code importing both entry
 * points catches each family by its own name.
 */
export class AdminPromptNotFoundError extends PromptAdminError {
  constructor(readonly promptId: string, reason?: string) {
    super(`prompt '${promptId}' not found${reason ? `: ${reason}` : ''}`);
    this.name = 'AdminPromptNotFoundError';
  }
}

/** The prompt exists but has no such version (or the number can never be one: not an integer from 1 to 999999). */
export class PromptVersionNotFoundError extends AdminPromptNotFoundError {
  constructor(promptId: string, readonly versionNumber: number) {
    super(promptId);
    this.message = `version ${versionNumber} of prompt '${promptId}' not found`;
    this.name = 'PromptVersionNotFoundError';
  }
}

/**
 * The prompt was deleted at the source (`status = DELETED`): readers get not-found and the catalog no longer
 * lists it, so no version of it can be activated. Add it back at the source; the next sync serves it again.
 */
export class PromptDeletedError extends PromptAdminError {
  constructor(readonly promptId: string) {
    super(`prompt '${promptId}' was deleted at the source; add it back there before activating one of its versions`);
    this.name = 'PromptDeletedError';
  }
}

/**
 * The guarded pointer write kept losing to concurrent writers (a sync or another activation) and the
 * activation gave up. Nothing was overwritten: `CURRENT` holds what the last of those writers wrote.
 */
export class ActivationConflictError extends PromptAdminError {
  constructor(readonly promptId: string, readonly versionNumber: number, readonly attempts: number) {
    super(`could not activate version ${versionNumber} of prompt '${promptId}': `
      + `CURRENT changed under each of ${attempts} attempts; check \`list-versions\` and try again`);
    this.name = 'ActivationConflictError';
  }
}

/**
 * The serving table could not be read or written: it does not exist, access was denied, requests were
 * throttled beyond the SDK's retries, the network failed. The AWS SDK error is the `cause`.
 */
export class PromptTableError extends PromptAdminError {
  constructor(readonly tableName: string, message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'PromptTableError';
  }
}

/**
 * The release function refused the request (see its `code`: `BadRequest`, `LabelNotFound`, `RolloutNotFound`,
 * `RolloutInProgress`, …). Nothing moved. The subclasses name the refusals a caller usually handles apart.
 */
export class ReleaseRefusedError extends PromptAdminError {
  /** The structured detail of the code (see `ReleaseErrorDetails` in the release API), e.g. `{ field, value, allowed }`. */
  readonly detail?: Readonly<Record<string, unknown>>;
  constructor(readonly code: string, readonly status: number, message: string, detail?: Readonly<Record<string, unknown>>) {
    super(message);
    this.name = 'ReleaseRefusedError';
    this.detail = detail;
  }
}

/** The activation gate denied the move (or failed, which denies: fail closed). The denial is audited (`gate-deny`). */
export class GateDeniedError extends ReleaseRefusedError {
  constructor(message: string) {
    super('GateDenied', 403, message);
    this.name = 'GateDeniedError';
  }
}

/** The caller may not move that pointer: no release grant, or a grant scoped to other labels. */
export class ReleaseForbiddenError extends ReleaseRefusedError {
  constructor(message: string) {
    super('Forbidden', 403, message);
    this.name = 'ReleaseForbiddenError';
  }
}

/** The move kept losing to concurrent moves of the same pointer; nothing was overwritten. */
export class ReleaseConflictError extends ReleaseRefusedError {
  constructor(message: string) {
    super('Conflict', 409, message);
    this.name = 'ReleaseConflictError';
  }
}

/** The release function could not be reached or failed (network, timeout, a 5xx answer). */
export class ReleaseCallError extends PromptAdminError {
  constructor(readonly url: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReleaseCallError';
  }
}

/** The release function answered 200 with a body that is not a release answer (named in the message). Nothing is assumed moved or not. */
export class MalformedReleaseAnswerError extends ReleaseCallError {
  constructor(url: string, readonly problem: string) {
    super(url, `the release function at ${url} answered with something that is not a release answer: ${problem}`);
    this.name = 'MalformedReleaseAnswerError';
  }
}
