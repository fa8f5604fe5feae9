/**
 * Calling the caller's `onRead` hook. Whatever it does — returns, throws any value (a null-prototype object, one
 * whose `message` or `toString` throws), returns a promise that rejects (an `async` hook type-checks as `OnRead`) or
 * a thenable whose `then` throws — the read it reports is served and no rejection is left unhandled; the first
 * failure is written once to stderr as a JSON WARN line.
 */
import type { OnRead, ReadInfo, ReadingClient } from './provenance';

/** Calls `hook`; never throws, never leaves a rejection unhandled. `failed` is called for each failure. */
export function callReadHook(hook: OnRead, info: ReadInfo, client: ReadingClient, failed: (err: unknown) => void): void {
  let returned: unknown;
  try {
    returned = hook(info, client);
  } catch (err) {
    failed(err);
    return;
  }
  // Only a returned object can be a promise: a plain hook (returning undefined) costs this one check.
  if (returned !== null && (typeof returned === 'object' || typeof returned === 'function')) {
    Promise.resolve(returned).then(undefined, failed);
  }
}

/** A hook failure as one line of text, whatever was thrown. */
export function describeThrown(err: unknown): string {
  try {
    return String((err as { message?: unknown } | null | undefined)?.message ?? err);
  } catch {
    try {
      return Object.prototype.toString.call(err);
    } catch {
      return 'a value that cannot be printed';
    }
  }
}

/**
 * The once-only warning of a failing hook (stderr, one JSON line). `describeThrown` always returns a string, so the
 * line always serializes: no second, fixed line is needed.
 */
export function warnHookFailed(err: unknown): void {
  process.stderr.write(JSON.stringify({
    level: 'WARN',
    message: `cdk-prompt-serving: the onRead hook threw (reads are served regardless; reported once): ${describeThrown(err)}`,
  }) + '\n');
}
