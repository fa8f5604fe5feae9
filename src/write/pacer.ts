/**
 * Pacing for calls to a rate-limited API: a token bucket that spaces out call starts across concurrent
 * callers, and jittered exponential backoff for the calls that are throttled anyway.
 *
 * Used by the sync's source readers (Bedrock's `GetPrompt`/`ListPrompts` share a small, fixed account
 * quota). No AWS dependency; time comes from the global `performance.now()` and `setTimeout`, so jest's
 * fake timers drive it in tests.
 */

/** Milliseconds in a second. */
const MS_PER_SECOND = 1000;

/** Default first backoff ceiling: the first retry waits a random 0–100 ms. */
export const DEFAULT_BASE_DELAY_MS = 100;
/** Default cap of a single backoff delay. */
export const DEFAULT_MAX_DELAY_MS = 5_000;

export interface RateLimiterOptions {
  /** Sustained rate: call starts per second. */
  readonly ratePerSecond: number;
  /**
   * Calls that may start back to back after an idle period (the bucket's capacity). With the default of
   * 1, starts are evenly spaced `1000 / ratePerSecond` ms apart, so no one-second window ever sees more
   * than `ratePerSecond` (+1 at its closed edge) starts.
   * @default 1
   */
  readonly burst?: number;
}

/**
 * A token bucket shared by concurrent callers, in its "generic cell rate algorithm" form: instead of
 * counting tokens it keeps the theoretical arrival time (TAT) of the next call. Each `acquire()` reserves
 * a start time synchronously, so concurrent callers are served in call order without a queue, and waits
 * until that time.
 */
export class RateLimiter {
  /** Milliseconds between two starts at the sustained rate. */
  private readonly intervalMs: number;
  /** How far ahead of the TAT a call may start (the burst allowance). */
  private readonly toleranceMs: number;
  private theoreticalArrivalMs = Number.NEGATIVE_INFINITY;

  constructor(options: RateLimiterOptions) {
    const { ratePerSecond, burst = 1 } = options;
    if (!Number.isFinite(ratePerSecond) || ratePerSecond <= 0) {
      throw new RangeError(`ratePerSecond must be a positive number, got ${ratePerSecond}`);
    }
    if (!Number.isInteger(burst) || burst < 1) {
      throw new RangeError(`burst must be a positive integer, got ${burst}`);
    }
    this.intervalMs = MS_PER_SECOND / ratePerSecond;
    this.toleranceMs = this.intervalMs * (burst - 1);
  }

  /** Resolves when the caller may start one call. */
  async acquire(): Promise<void> {
    const now = performance.now();
    const tat = Math.max(this.theoreticalArrivalMs, now);
    const startAt = Math.max(now, tat - this.toleranceMs);
    this.theoreticalArrivalMs = tat + this.intervalMs;
    if (startAt > now) await sleep(startAt - now);
  }
}

export interface BackoffOptions {
  /** Ceiling of the first delay; each further attempt doubles it. @default DEFAULT_BASE_DELAY_MS */
  readonly baseDelayMs?: number;
  /** Cap of any single delay. @default DEFAULT_MAX_DELAY_MS */
  readonly maxDelayMs?: number;
  /** Source of randomness in [0, 1). @default Math.random */
  readonly random?: () => number;
}

/**
 * "Full jitter" exponential backoff: a uniformly random delay in `[0, min(maxDelayMs, baseDelayMs * 2^(retry-1)))`
 * before retry number `retry` (1 for the first retry). Full jitter spreads competing callers out best.
 */
export function backoffDelay(retry: number, options: BackoffOptions = {}): number {
  if (!Number.isInteger(retry) || retry < 1) throw new RangeError(`retry must be a positive integer, got ${retry}`);
  const { baseDelayMs = DEFAULT_BASE_DELAY_MS, maxDelayMs = DEFAULT_MAX_DELAY_MS, random = Math.random } = options;
  // Clamp the exponent so large retry numbers cannot overflow to Infinity before the cap applies.
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(retry - 1, 30));
  return Math.floor(random() * ceiling);
}

export interface RetryOptions extends BackoffOptions {
  /** Attempts in all, the first included (1 = no retry). */
  readonly maxAttempts: number;
  /** Whether an error is worth another attempt (e.g. throttling). Other errors are rethrown at once. */
  readonly isRetryable: (error: unknown) => boolean;
  /** Called before each backoff sleep, e.g. to log or count. */
  readonly onRetry?: (error: unknown, retry: number, delayMs: number) => void;
}

/**
 * Runs `operation` until it succeeds, fails with a non-retryable error, or `maxAttempts` attempts failed;
 * sleeps {@link backoffDelay} between attempts. Rethrows the last error unchanged.
 */
export async function retryWithBackoff<T>(operation: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const { maxAttempts, isRetryable, onRetry } = options;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError(`maxAttempts must be a positive integer, got ${maxAttempts}`);
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (error) {
      if (attempt >= maxAttempts || !isRetryable(error)) throw error;
      const delayMs = backoffDelay(attempt, options);
      onRetry?.(error, attempt, delayMs);
      await sleep(delayMs);
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
