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

/**
 * `render(variables)` was refused: a `{{placeholder}}` without a value (`missing`), a variable the prompt neither uses
 * nor declares (`extra`, unless `allowExtra`), or a value of a type the variable does not take (`invalid`). Every
 * problem is listed at once; nothing is filled.
 */
export class PromptRenderError extends PromptServingError {
  /** The prompt id. */
  readonly promptId: string;
  /** The version number of the prompt that refused the variables (0 for a fallback). */
  readonly version: number;
  /** Every placeholder without a value, in order of first use. */
  readonly missing: readonly string[];
  /** Every variable given that the prompt neither uses nor declares, sorted (UTF-16 code units). */
  readonly extra: readonly string[];
  /** Every placeholder whose value is not a string, finite number or boolean (or JSON, where opted in), in order of first use. */
  readonly invalid: readonly string[];

  constructor(promptId: string, version: number, missing: readonly string[], extra: readonly string[] = [], invalid: readonly string[] = []) {
    super(renderErrorMessage(promptId, version, missing, extra, invalid));
    this.name = 'PromptRenderError';
    this.promptId = promptId;
    this.version = version;
    this.missing = missing;
    this.extra = extra;
    this.invalid = invalid;
  }

  /** Same as `missing` (the name before strict rendering). */
  get missingVariables(): readonly string[] {
    return this.missing;
  }
}

/** `cannot render prompt 'x' version 3: missing variables 'a', 'b'; unexpected variable 'c'; invalid value for 'd' (…)`. */
function renderErrorMessage(
  promptId: string, version: number, missing: readonly string[], extra: readonly string[], invalid: readonly string[],
): string {
  const list = (names: readonly string[]) => names.map(showName).join(', ');
  const s = (names: readonly string[]) => (names.length > 1 ? 's' : '');
  const parts: string[] = [];
  if (missing.length > 0) parts.push(`missing variable${s(missing)} ${list(missing)}`);
  if (extra.length > 0) parts.push(`unexpected variable${s(extra)} ${list(extra)} (not in the template nor declared)`);
  if (invalid.length > 0) {
    parts.push(`invalid value${s(invalid)} for ${list(invalid)} (a value is a string, a finite number or a boolean; `
      + 'any JSON value only for a name in json_variables)');
  }
  return `cannot render prompt ${showName(promptId)} version ${version}: ${parts.join('; ')}`;
}

/** A name as error messages show it: `'name'`, with every code unit outside printable ASCII (and `'`, `\`) as `\uXXXX`. */
export function showName(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    out += c >= 0x20 && c < 0x7f && c !== 0x5c && c !== 0x27 ? name[i] : `\\u${c.toString(16).padStart(4, '0')}`;
  }
  return `'${out}'`;
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
