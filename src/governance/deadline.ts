/**
 * Deadlines of the governance functions: every call the release function and the rollout controller make (DynamoDB,
 * EventBridge, CloudWatch, the gate's Lambda invoke) is aborted when the invocation's deadline passes, so a
 * dependency that accepts connections and never answers costs at most the function's own time, never the caller's
 * retry. The deadline is the function's remaining time minus {@link ANSWER_MARGIN_MS} (time to write the answer),
 * carried per invocation in an `AsyncLocalStorage`, and applied by {@link withCallDeadlines} to a client's `send`
 * as an `abortSignal` (a caller's own signal wins). A phase can narrow it ({@link Deadline.within}); nothing widens it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { ReleaseError, ReleaseErrorCode } from './errors';

/** Time kept back from the function's remaining time to log and answer. */
export const ANSWER_MARGIN_MS = 1_500;
/** Longest a single DynamoDB call of a move may take (the SDK's retries included) before it is abandoned. */
export const TABLE_CALL_LIMIT_MS = 5_000;
/** Longest the post-commit audit events (EventBridge `PutEvents`, retries included) may take: best-effort. */
export const EVENTS_LIMIT_MS = 2_000;
/** Time a move keeps back after asking the gate: to write the move (or the denial) and its audit record. */
export const WRITE_RESERVE_MS = 3_000;
/** Per-attempt socket limits of the governance functions' SDK clients (a backstop under the deadline). */
export const CONNECTION_TIMEOUT_MS = 2_000;
export const REQUEST_TIMEOUT_MS = 5_000;

/** A point in time (epoch ms) by which an invocation must answer. */
export class Deadline {
  /** The invocation's deadline from Lambda's context: remaining time minus the answer margin (at least 0). */
  static fromContext(context: { getRemainingTimeInMillis?: () => number } | undefined, fallbackMs: number, now = Date.now()): Deadline {
    const remaining = typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : fallbackMs;
    return new Deadline(now + Math.max(0, (Number.isFinite(remaining) ? remaining : fallbackMs) - ANSWER_MARGIN_MS));
  }

  constructor(readonly atMs: number) {}

  remainingMs(now = Date.now()): number {
    return Math.max(0, this.atMs - now);
  }

  /** This deadline or `limitMs` from now, whichever comes first. */
  within(limitMs: number, now = Date.now()): Deadline {
    return new Deadline(Math.min(this.atMs, now + Math.max(0, limitMs)));
  }

  /** A signal that aborts when the deadline passes. */
  signal(): AbortSignal {
    const ms = this.remainingMs();
    return ms <= 0 ? AbortSignal.abort(timeoutReason()) : AbortSignal.timeout(ms);
  }
}

function timeoutReason(): Error {
  const err = new Error('the deadline had passed');
  err.name = 'TimeoutError';
  return err;
}

const current = new AsyncLocalStorage<Deadline>();

/** Runs `fn` with `deadline` (narrowed by any deadline already in force) applying to every call it makes. */
export function runWithDeadline<T>(deadline: Deadline, fn: () => Promise<T>): Promise<T> {
  const outer = current.getStore();
  const effective = outer && outer.atMs < deadline.atMs ? outer : deadline;
  return current.run(effective, fn);
}

/** The deadline in force, if any. */
export function currentDeadline(): Deadline | undefined {
  return current.getStore();
}

/** Runs `fn` within `limitMs` of now (or the deadline in force, if sooner). */
export function runWithin<T>(limitMs: number, fn: () => Promise<T>): Promise<T> {
  const outer = current.getStore();
  return runWithDeadline(outer ? outer.within(limitMs) : new Deadline(Date.now() + limitMs), fn);
}

interface Sender {
  send(command: unknown, options?: unknown): Promise<unknown>;
}

/**
 * Makes every `send` of `client` carry the deadline in force (narrowed to `limitMs` per call, when given) as its
 * `abortSignal`; with no deadline in force, unchanged. The SDK stops retrying once the signal has aborted. Returns
 * the client.
 */
export function withCallDeadlines<C>(client: C, limitMs?: number): C {
  const c = client as unknown as Sender;
  const send = c.send.bind(c);
  c.send = (command: unknown, options?: unknown) => {
    const deadline = current.getStore();
    const given = options as { abortSignal?: unknown } | undefined;
    if (deadline === undefined || typeof options === 'function' || given?.abortSignal !== undefined) return send(command, options);
    return send(command, { ...given, abortSignal: (limitMs === undefined ? deadline : deadline.within(limitMs)).signal() });
  };
  return client;
}

/** Whether `err` is a call abandoned at its deadline (the SDK's abort, or a timeout). */
export function isDeadlineError(err: unknown): boolean {
  const name = (err as { name?: unknown } | undefined)?.name;
  return name === 'AbortError' || name === 'TimeoutError' || (err instanceof ReleaseError && err.code === ReleaseErrorCode.deadlineExceeded);
}
