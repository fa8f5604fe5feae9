/**
 * The hook for a shared cache tier (Valkey/Redis, Memcached, …) between the in-process cache and the table,
 * and the key and value formats written to it.
 */
import { PARTITION_KEY } from '../schema/keys';

/**
 * A shared cache `PromptClient` consults after its in-process cache and before the table. Any method may
 * reject or time out: the client counts the failure in `stats().l2Errors` and reads the table instead.
 *
 * @example
 * // node-redis (v4 and later)
 * const l2: PromptCacheL2 = {
 *   get: (key) => redis.get(key),
 *   set: (key, value, ttlSeconds) => redis.set(key, value, { EX: ttlSeconds }),
 *   delete: (key) => redis.del(key),
 * };
 * const prompts = new PromptClient({ l2 });
 */
export interface PromptCacheL2 {
  /** The value stored under `key`, or `undefined`/`null` when there is none. */
  get(key: string): Promise<string | null | undefined>;
  /** Stores `value` under `key` for `ttlSeconds` (a whole number, at least 1). */
  set(key: string, value: string, ttlSeconds: number): Promise<unknown>;
  /** Removes `key`; called when the table says the prompt is gone or an L2 value is unreadable. */
  delete?(key: string): Promise<unknown>;
}

/** Prefix of every L2 key, versioned with the value format. */
export const L2_KEY_PREFIX = 'cdk-prompt-serving:v1';

/** L2 lifetime of an exact version (immutable; the bound only keeps the shared cache from growing forever). */
export const L2_IMMUTABLE_TTL_SECONDS = 24 * 60 * 60;

/**
 * The L2 key of one item: `cdk-prompt-serving:v1/<table>/<prompt id>/<sort key>`, e.g.
 * `cdk-prompt-serving:v1/prompts/support-triage/CURRENT`: one key per pointer, so a cache invalidator can delete
 * `…/<prompt id>/CURRENT` when the pointer changes. Unambiguous: table names and sort keys contain no `/`.
 */
export function l2Key(tableName: string, promptId: string, sortKey: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/${promptId}/${sortKey}`;
}

/** What is stored under an L2 key: the decoded item and when it was read from the table (epoch ms). */
export interface L2Value {
  readonly fetchedAt: number;
  readonly item: Record<string, unknown>;
}

export function encodeL2Value(value: L2Value): string {
  return JSON.stringify(value);
}

/** Parses the L2 value of `promptId`; `undefined` if it is not one (another format, another item, or corrupt). */
export function decodeL2Value(raw: string, promptId: string): L2Value | undefined {
  try {
    const value = JSON.parse(raw) as Partial<L2Value> | null;
    if (typeof value?.fetchedAt === 'number' && value.item?.[PARTITION_KEY] === promptId) {
      return value as L2Value;
    }
  } catch {
    // fall through: treated as absent
  }
  return undefined;
}

/** Runs an L2 call with a deadline; synchronous throws become rejections. */
export async function withTimeout<T>(call: () => Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`L2 did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(call), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
