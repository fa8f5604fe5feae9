/**
 * The hook for a shared cache tier (Valkey/Redis, Memcached, …) between the in-process cache and the table.
 * Keys and values follow the L2 wire contract (src/schema/l2.ts, v3): reader fills under `…/#fill/…` keys with
 * their table-read time, stream values written through by the invalidation function, so the built-in adapter,
 * the invalidation function and the Python client share one cache.
 */
import { l2ItemKey } from '../schema/l2';

/**
 * A shared cache `PromptClient` consults after its in-process cache and before the table. Any method may
 * reject or time out: the client counts the failure in `stats().l2Errors` and reads the table instead.
 * `new PromptClient()` builds one by itself (node-redis) when `PROMPT_SERVING_CACHE_ENDPOINT` is set.
 *
 * @example
 * // node-redis (v4 and later), a store nothing else writes: fills expire by their TTL (the L1 bound)
 * const l2: PromptCacheL2 = {
 *   get: (key) => redis.get(key),
 *   set: (key, value, ttlSeconds) => redis.set(key, value, { EX: ttlSeconds }),
 *   delete: (key) => redis.del(key),
 * };
 * const prompts = new PromptClient({ l2 });
 */
export interface PromptCacheL2 {
  /**
   * `true` when the invalidation function writes every change through to this store (the construct's cache
   * tier): stream values of the epoch's table incarnation are served whatever their age, and the client watches
   * the table's freshness epoch.
   * @default false - only fills are used, each for `maxAgeSeconds` after it was read from the table
   */
  readonly writeThrough?: boolean;
  /**
   * `true` while every call would fail at once (a breaker open after a failure: the built-in adapter's): the client
   * skips the store then, counting each call it skips in `stats().l2Errors` as a failed one, so a read during a cache
   * outage costs what it costs with no L2 (no call, no deadline, no fill encoded for a store that cannot take it).
   * @default false - every call is made
   */
  readonly isTripped?: boolean;
  /** The value stored under `key`, or `undefined`/`null` when there is none. */
  get(key: string): Promise<string | null | undefined>;
  /** Stores a fill `value` under `key` for `ttlSeconds` (a whole number, at least 1: the reader's L1 bound). */
  set(key: string, value: string, ttlSeconds: number): Promise<unknown>;
  /** Not called since the v3 wire contract (fills expire by their TTL); kept so existing adapters still type-check. */
  delete?(key: string): Promise<unknown>;
  /** Not called since the v3 wire contract (readers never order their fills against the stream's values). */
  putIfNewer?(key: string, revision: number, value: string, ttlSeconds: number): Promise<unknown>;
  /** Resolves when the store can take calls (a connection opened at start-up); reads wait for it, bounded. */
  ready?(): Promise<void>;
}

/**
 * The L2 key of one item's stream value: `cdk-prompt-serving:v3/<table>/<prompt id>/<sort key>`, e.g.
 * `cdk-prompt-serving:v3/prompts/support-triage/CURRENT` (see the README's wire contract).
 */
export function l2Key(tableName: string, promptId: string, sortKey: string): string {
  return l2ItemKey(tableName, promptId, sortKey);
}

/**
 * Runs an L2 call with a deadline; synchronous throws become rejections. A deadline that fires rejects only after the
 * event loop's next I/O phase ({@link lateDeadline}): an answer that arrived while the process was not running wins.
 * When it fires, the adapter is told, if its promise has a function under the registered symbol
 * `cdk-prompt-serving.l2-deadline-missed` (the built-in adapter's breaker opens then).
 */
export async function withTimeout<T>(call: () => Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let pending: Promise<T> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = lateDeadline(() => {
      (pending as unknown as Record<symbol, (() => void) | undefined> | undefined)?.[DEADLINE_MISSED]?.();
      reject(new Error(`L2 did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => (pending = call())), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The adapter's `L2_DEADLINE_MISSED` (src/runtime/valkey.ts): not imported, so a reader bundle never carries the adapter. */
const DEADLINE_MISSED = Symbol.for('cdk-prompt-serving.l2-deadline-missed');

/**
 * `setTimeout` for a deadline on I/O: when it fires, `expire` runs in the same loop iteration's check phase
 * (`setImmediate`), after the poll phase has handed over whatever arrived. Node runs due timers before I/O, so a
 * process that was not scheduled for longer than the deadline (50 containers starting on 2 cores; a thread paused by
 * a garbage collection) would otherwise time out answers that are already waiting in its socket: measured, that was
 * why connected readers of a fleet cold start read the table. Costs nothing while the deadline does not fire.
 */
export function lateDeadline(expire: () => void, timeoutMs: number): NodeJS.Timeout {
  return setTimeout(() => setImmediate(expire), timeoutMs);
}
