/**
 * The runtime client's error family. Every error it throws is a `PromptServingError`; catch the subclasses
 * to tell "no such prompt" from "bad variables" from "the table could not be read".
 *
 * Each class sets `name` explicitly (not from `new.target.name`) so it survives minified bundles.
 */

/** Base class of every error the runtime client throws (also used for invalid client configuration). */
export class PromptServingError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PromptServingError';
  }
}

/**
 * The prompt does not exist, was deleted at the source (`status = DELETED`), is not in the catalog, or the id
 * or version cannot exist (reserved `#` prefix, empty, not a positive integer version).
 */
export class PromptNotFoundError extends PromptServingError {
  /** The prompt id asked for. */
  readonly promptId: string;
  /** The exact version asked for; `undefined` for the current version. */
  readonly version: number | undefined;

  constructor(promptId: string, version: number | undefined, reason?: string) {
    const what = version === undefined ? `prompt '${promptId}'` : `version ${version} of prompt '${promptId}'`;
    super(`${what} not found${reason ? `: ${reason}` : ''}`);
    this.name = 'PromptNotFoundError';
    this.promptId = promptId;
    this.version = version;
  }
}

/** `render(variables)` was called without a value for one or more `{{placeholders}}`. */
export class PromptRenderError extends PromptServingError {
  /** The prompt id. */
  readonly promptId: string;
  /** Every placeholder without a value, in order of first use. */
  readonly missingVariables: readonly string[];

  constructor(promptId: string, missingVariables: readonly string[]) {
    super(`cannot render prompt '${promptId}': missing variable${missingVariables.length > 1 ? 's' : ''} `
      + missingVariables.map((v) => `'${v}'`).join(', '));
    this.name = 'PromptRenderError';
    this.promptId = promptId;
    this.missingVariables = missingVariables;
  }
}

/**
 * The serving table could not be read (unreachable, throttled past the retry budget, timed out, access denied)
 * or returned an item that does not follow the wire contract. The SDK error is kept as `cause`.
 * Thrown only when no stale copy within `staleIfErrorSeconds` could be served instead.
 */
export class PromptStoreError extends PromptServingError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PromptStoreError';
  }
}
