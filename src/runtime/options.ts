/**
 * Every option of the runtime client, its default and the environment variable that overrides the default.
 * Precedence: an explicit option, then the environment variable, then `Defaults`.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PromptServingError } from './errors';
import type { PromptClientFeature } from './label-feature';
import type { OnRead } from './provenance';
import type { ResolvedOptions } from './resolved-options';
import type { PromptCacheTier } from './tier';

/** Default of every numeric option; each can be overridden by its variable in `EnvVars`. */
export const Defaults = {
  /** L1 freshness of a CURRENT prompt. */
  maxAgeSeconds: 60,
  /** Most prompts held in L1 (and, separately, most not-found ids remembered). */
  maxEntries: 1000,
  /** How long a not-found answer from the table is remembered. */
  notFoundMaxAgeSeconds: 10,
  /** How long past `maxAgeSeconds` an expired prompt is served while one background read refreshes it. */
  staleWhileRevalidateSeconds: 60,
  /** How long past `maxAgeSeconds` the last good copy is served when the table cannot be read. */
  staleIfErrorSeconds: 3600,
  /** How often the Bloom-filter catalog is re-read. */
  catalogMaxAgeSeconds: 60,
  /** Upper bound on the remote work of one load, retries and backoff included. */
  requestTimeoutMs: 2000,
  /** Attempts per read when DynamoDB throttles or a transient network error occurs. */
  maxAttempts: 3,
  /** Upper bound on one L2 call; a slower L2 counts as an L2 error and the table is read. */
  l2TimeoutMs: 100,
  /** Longest a read waits for the L2's first connection (opened at client creation). */
  l2ConnectTimeoutMs: 1000,
  /** How often the freshness epoch is read from a written-through L2 (one GET per process). */
  // 500 ms: a change reaches every process within 1 s (p99) of the table write (docs/BENCHMARKS.md, cache tier fleet).
  epochPollIntervalMs: 500,
} as const;

/** Node.js timers clamp a delay above 2^31 − 1 ms to 1 ms; no millisecond option may exceed it. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The environment variables of the options, by option: `PROMPT_SERVING_` and the option's name in upper snake case. */
interface EnvVarNames {
  readonly tableName: 'PROMPT_SERVING_TABLE_NAME';
  readonly maxAgeSeconds: 'PROMPT_SERVING_MAX_AGE_SECONDS';
  readonly maxEntries: 'PROMPT_SERVING_MAX_ENTRIES';
  readonly notFoundMaxAgeSeconds: 'PROMPT_SERVING_NOT_FOUND_MAX_AGE_SECONDS';
  readonly staleWhileRevalidateSeconds: 'PROMPT_SERVING_STALE_WHILE_REVALIDATE_SECONDS';
  readonly staleIfErrorSeconds: 'PROMPT_SERVING_STALE_IF_ERROR_SECONDS';
  readonly catalogMaxAgeSeconds: 'PROMPT_SERVING_CATALOG_MAX_AGE_SECONDS';
  readonly requestTimeoutMs: 'PROMPT_SERVING_REQUEST_TIMEOUT_MS';
  readonly maxAttempts: 'PROMPT_SERVING_MAX_ATTEMPTS';
  readonly l2TimeoutMs: 'PROMPT_SERVING_L2_TIMEOUT_MS';
  readonly l2ConnectTimeoutMs: 'PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS';
  readonly epochPollIntervalMs: 'PROMPT_SERVING_EPOCH_POLL_INTERVAL_MS';
}

/**
 * Environment variables read by `new PromptClient()`: the table name (set by the construct, `Env.tableName` of the wire
 * contract) and overrides of `Defaults`. Built from the option names (`maxAgeSeconds` → `PROMPT_SERVING_MAX_AGE_SECONDS`),
 * which the names above spell out for the type checker; test/runtime/options.test.ts checks both agree.
 */
export const EnvVars: EnvVarNames = Object.freeze(Object.fromEntries(['tableName', ...Object.keys(Defaults)]
  .map((name) => [name, `PROMPT_SERVING_${name.replace(/[A-Z]/g, '_$&').toUpperCase()}`]))) as unknown as EnvVarNames;

export type { ResolvedOptions } from './resolved-options';

/** Options of `new PromptClient(options)`. Every number has a unit in its name. */
export interface PromptClientOptions {
  /**
   * The serving table.
   * @default - the `PROMPT_SERVING_TABLE_NAME` environment variable (set by the construct)
   */
  readonly tableName?: string;
  /**
   * The DynamoDB client to read with. A client you pass keeps its own retry settings; pass one with
   * `maxAttempts: 1` to leave retries to `PromptClient` alone.
   * @default - `new DynamoDBClient({ maxAttempts: 1 })` from the standard environment (`PromptClient` retries itself)
   */
  readonly dynamoDBClient?: DynamoDBClient;
  /**
   * How long a CURRENT prompt is served from memory before it is read again. Exact versions are immutable
   * and never expire (they leave memory only by the size bound).
   * @default 60 (`PROMPT_SERVING_MAX_AGE_SECONDS`)
   */
  readonly maxAgeSeconds?: number;
  /**
   * Most prompts (CURRENT and exact versions) kept in memory; the least recently used go first.
   * Not-found ids are remembered in a separate map of the same bound, so unknown ids cannot evict prompts.
   * @default 1000 (`PROMPT_SERVING_MAX_ENTRIES`)
   */
  readonly maxEntries?: number;
  /**
   * How long a not-found answer read from the table is remembered. Ids the catalog rules out are rejected
   * without a read and need no memory.
   * @default 10 (`PROMPT_SERVING_NOT_FOUND_MAX_AGE_SECONDS`)
   */
  readonly notFoundMaxAgeSeconds?: number;
  /**
   * Window after `maxAgeSeconds` in which an expired prompt is still returned at once (flagged `stale`)
   * while a single background read refreshes it. `0` makes reads past `maxAgeSeconds` wait for the table.
   * @default 60 (`PROMPT_SERVING_STALE_WHILE_REVALIDATE_SECONDS`)
   */
  readonly staleWhileRevalidateSeconds?: number;
  /**
   * Window after `maxAgeSeconds` in which the last good copy is returned (flagged `stale`) when the table
   * cannot be read (down, throttled past `maxAttempts`, timed out). `0` turns stale-if-error off.
   * @default 3600 (`PROMPT_SERVING_STALE_IF_ERROR_SECONDS`)
   */
  readonly staleIfErrorSeconds?: number;
  /**
   * How often the Bloom-filter catalog (`#catalog`) is re-read; a prompt created at the source becomes
   * visible within this time. The first read happens before the first table read of a prompt, or in `preload`.
   * @default 60 (`PROMPT_SERVING_CATALOG_MAX_AGE_SECONDS`)
   */
  readonly catalogMaxAgeSeconds?: number;
  /**
   * Upper bound on the remote work of one load: the first catalog read, the L2 and the table read, retries and
   * backoff included. Past it the read fails with `PromptStoreError` (or serves stale, see `staleIfErrorSeconds`).
   * @default 2000 (`PROMPT_SERVING_REQUEST_TIMEOUT_MS`)
   */
  readonly requestTimeoutMs?: number;
  /**
   * Attempts per table read when DynamoDB throttles (`ProvisionedThroughputExceededException`,
   * `ThrottlingException`, `RequestLimitExceeded`) or the network fails transiently; retries wait a
   * jittered exponential backoff.
   * @default 3 (`PROMPT_SERVING_MAX_ATTEMPTS`)
   */
  readonly maxAttempts?: number;
  /**
   * A shared cache tier between memory and the table over a store of yours (Valkey/Redis, …): `cacheTier(store)`,
   * with `cacheTier` from this module (a reader that passes none bundles none of the tier). Its failures and
   * timeouts are counted in `stats()` and never fail a read.
   * @default - the built-in Valkey adapter, with the tier, from the reader layer when `PROMPT_SERVING_CACHE_ENDPOINT`
   * is set (the construct's `addReader` sets both), else no L2; misses read the table
   */
  readonly l2?: PromptCacheTier;
  /**
   * Upper bound on one L2 call once the client's start-up is over (during the first `l2ConnectTimeoutMs` from its
   * first L2 read, a call may take until the start-up ends; see `l2ConnectTimeoutMs`).
   * @default 100 (`PROMPT_SERVING_L2_TIMEOUT_MS`)
   */
  readonly l2TimeoutMs?: number;
  /**
   * The client's start-up budget for the L2: the longest a read waits for the first connection (opened when the
   * client is created), and for this long from the first L2 read, a call may take until then instead of
   * `l2TimeoutMs`, so a container starting on a busy host is not sent to the table by its first, slowest round trips.
   * Reconnections are never waited for: reads go to the table meanwhile.
   * @default 1000 (`PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS`)
   */
  readonly l2ConnectTimeoutMs?: number;
  /**
   * How often the table's freshness epoch is read from a written-through L2 (the construct's cache tier):
   * a change reaches this process within about this time, without a table read.
   * @default 500 (`PROMPT_SERVING_EPOCH_POLL_INTERVAL_MS`)
   */
  readonly epochPollIntervalMs?: number;
  /**
   * Called once per successful `getPrompt` with where the prompt came from (`source`: `l1`, `l2`, `table`,
   * `fallback`), whether it is stale, its age and version. Helpers: `logReads()`, `emfReadMetrics().onRead`,
   * `otelReadAttributes()`, `combineReadHooks(…)`. An exception it throws never fails the read.
   * @default - no hook (a cached read costs nothing extra)
   */
  readonly onRead?: OnRead;
  /**
   * Features a reader uses beyond `CURRENT` and exact versions, each bundled only by the readers that pass it:
   * `labels` (from this module) to read labels and their rollouts (`getPrompt(id, { label })`).
   * @default - none: a label read is rejected with `PromptServingError`
   */
  readonly features?: readonly PromptClientFeature[];
}


/** Applies environment overrides and defaults; throws `PromptServingError` naming the bad option or variable. */
export function resolveOptions(options: PromptClientOptions, env: NodeJS.ProcessEnv = process.env): ResolvedOptions {
  const tableName = options.tableName ?? env[EnvVars.tableName];
  if (!tableName) {
    throw new PromptServingError(
      `no table name: pass \`tableName\` or set the ${EnvVars.tableName} environment variable (the construct sets it)`);
  }
  const number = (name: keyof typeof Defaults, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const raw = env[EnvVars[name]];
    const fromEnv = raw === undefined || raw.trim() === '' ? undefined : Number(raw);
    const value = options[name] ?? fromEnv ?? Defaults[name];
    if (!Number.isFinite(value) || value < min || value > max) {
      const where = options[name] !== undefined ? `\`${name}\`` : `${EnvVars[name]}=${JSON.stringify(raw)}`;
      const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
      throw new PromptServingError(`${where} must be a number ${range}, got ${value}`);
    }
    return value;
  };
  // Every option of `Defaults`, in its order, by its name: `…Seconds` an age of at least 0, resolved as `…Ms` (ages are
  // compared with the clock, never timed); another `…Ms` a timeout, at least 1 (the epoch poll 10) and at most the
  // timer limit; the counts (`maxEntries`, `maxAttempts`) whole numbers of at least 1. One loop, not a line per option:
  // every reader bundles this.
  const resolved: Record<string, string | number> = { tableName };
  for (const name of Object.keys(Defaults) as (keyof typeof Defaults)[]) {
    if (name.endsWith('Seconds')) {
      resolved[name.replace('Seconds', 'Ms')] = number(name, 0) * 1000;
    } else if (name.endsWith('Ms')) {
      resolved[name] = number(name, name === 'epochPollIntervalMs' ? 10 : 1, MAX_TIMER_MS);
    } else {
      resolved[name] = Math.floor(number(name, 1));
    }
  }
  return resolved as unknown as ResolvedOptions;
}
