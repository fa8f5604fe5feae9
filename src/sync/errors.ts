/**
 * The sync's error classes. Which AWS failures are worth retrying is shared with the other parts that call AWS,
 * in src/schema/retryable.ts.
 *
 * Each class sets `name` explicitly (not from `new.target.name`) so it survives minified bundles.
 */

/**
 * A prompt the source holds but cannot be served. `retryable` says whether trying again may help
 * (throttling, a network error) or not (malformed, unsupported, access denied).
 */
export class SourceReadError extends Error {
  readonly retryable: boolean;

  constructor(readonly promptId: string, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options);
    this.name = 'SourceReadError';
    this.retryable = options?.retryable ?? false;
  }
}

/** A sync that must be retried (the invocation fails, so Lambda retries it and then dead-letters it). */
export class SyncRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SyncRetryableError';
  }
}
