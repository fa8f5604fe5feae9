/**
 * The built-in L2 adapter: ElastiCache for Valkey (or any Redis-protocol server) through node-redis, cluster
 * mode (`createCluster`, a serverless cache) or standalone, TLS, IAM auth token per connection. This file is the
 * adapter's entry (the reader layer's `cdk-prompt-serving-cache`, scripts/build-layer.ts) and the reader's breaker;
 * beside it:
 * - ./valkey-connection.ts: the connection (connect at start-up, command deadlines, reconnection backoff, refresh);
 * - ./valkey-options.ts: the settings (`ValkeyConfig`) and the node-redis client they make (cluster, TLS, IAM);
 * - ./valkey-redis.ts: node-redis itself, loaded at run time (never bundled into a reader).
 *
 * Loaded only when the L2 is configured (`PROMPT_SERVING_CACHE_ENDPOINT`), by ./l2-env.ts. A reader's adapter
 * (`breaker`, set by {@link createValkeyL2}) has a breaker: once a call fails or misses its caller's deadline
 * ({@link L2_DEADLINE_MISSED}), calls fail at once, with no wait, while one background probe per process (every
 * 0.2–0.6 s) finds the cache again: a `PING` within `probeTimeoutMs` on the open connection, and when that goes
 * unanswered (a connection the network black-holed) the connection is destroyed and a new one opened and pinged at
 * once; a new connection whose first `PING` is late is kept and pinged again by the next probe. Calls resume when
 * a probe is answered. A refused login (an ACL user deleted) is probed on the reconnection backoff instead.
 */
import { logUnavailable } from './unavailable';
import { ValkeyConnection } from './valkey-connection';
import type { ValkeyConfig } from './valkey-options';
import { Conn, isLoginRefused, isReply, L2UnavailableError, redisLoadError } from './valkey-redis';
import { Env } from '../schema/env';

export { ValkeyConnection } from './valkey-connection';
export { CONNECTION_REFRESH_MS, RECONNECT_BASE_MS } from './valkey-options';
export type { ValkeyConfig } from './valkey-options';
export { L2UnavailableError, loadRedis, redisLoadError, useRedisModule } from './valkey-redis';

/** The breaker's probe runs this long after the previous one, times a jitter of 0.5 to 1.5. */
export const PROBE_INTERVAL_MS = 400;
/**
 * Set by the client's `withTimeout` (src/runtime/l2.ts) on a call's promise when the caller stops waiting for it: the
 * adapter's breaker opens then, not only when its own (longer) `commandTimeoutMs` passes. A registered symbol, so a
 * client bundle and the adapter from the reader layer agree on it without importing each other.
 */
export const L2_DEADLINE_MISSED: unique symbol = Symbol.for('cdk-prompt-serving.l2-deadline-missed') as never;

/** What a call gets while the breaker is open: one error for every call (no stack captured per call). */
const SKIPPED = new L2UnavailableError('L2 skipped after a failure (a background probe is looking for it)');

/** The adapter a reader's `PromptClient` uses (`PromptCacheL2`): the connection, with the breaker when `breaker` is set. */
export class ValkeyL2 extends ValkeyConnection {
  /** Breaker probes run so far. */
  probes = 0;
  /** The breaker is open: `get`/`set` fail at once until a probe is answered. */
  private tripped = false;
  private probeTimer: NodeJS.Timeout | undefined;

  /**
   * Resolves once the first connection is up or has failed, or at once while the breaker is open (calls fail at once
   * then: nothing is gained by waiting for a connection). Never rejects; bounded by `connectTimeoutMs`.
   */
  override ready(): Promise<void> {
    return this.tripped ? Promise.resolve() : super.ready();
  }

  /** Whether the breaker is open (calls fail at once while a background probe looks for the cache). */
  get isTripped(): boolean {
    return this.tripped;
  }

  get(key: string): Promise<string | null> {
    return this.guard(() => this.run((c) => c.get(key)));
  }

  set(key: string, value: string, ttlSeconds: number): Promise<unknown> {
    return this.guard(() => this.run((c) => c.set(key, value, { EX: ttlSeconds })));
  }

  /**
   * A reader's call through the breaker: failed at once while it is open; otherwise run, and a failure that is not
   * the server's answer, or the caller giving up on it ({@link L2_DEADLINE_MISSED}), opens it.
   */
  private guard<T>(call: () => Promise<T>): Promise<T> {
    if (this.config.breaker !== true) return call();
    if (this.tripped) return Promise.reject(SKIPPED);
    const promise = call().catch((err: unknown) => {
      if (!isReply(err)) this.trip();
      throw err;
    });
    (promise as unknown as Record<symbol, () => void>)[L2_DEADLINE_MISSED] = () => this.trip();
    return promise;
  }

  /** Opens the breaker and schedules its probe (one per process). */
  private trip(): void {
    if (this.tripped || this.closed) return;
    this.tripped = true;
    this.scheduleProbe();
  }

  private scheduleProbe(delayMs = PROBE_INTERVAL_MS * (0.5 + Math.random())): void {
    clearTimeout(this.probeTimer);
    this.probeTimer = setTimeout(() => void this.probe(), delayMs);
    this.probeTimer.unref();
  }

  /**
   * One probe: a `PING` on the open connection within `probeTimeoutMs`; unanswered, the connection is destroyed
   * (the network may have black-holed it) and a new one opened (not waiting for the reconnection backoff: the probe
   * is its own rate limit) and pinged. Answered, the breaker closes; otherwise the next probe is scheduled.
   */
  private async probe(): Promise<void> {
    if (this.closed || !this.tripped) return;
    this.probes++;
    const timeoutMs = Math.min(this.config.probeTimeoutMs ?? 250, this.config.connectTimeoutMs ?? 1000);
    let conn = this.conn;
    try {
      if (conn !== undefined) {
        try {
          await this.ping(conn, timeoutMs);
        } catch (err) {
          if (err instanceof L2UnavailableError) this.timeouts++;
          this.drop(conn, err);
          conn = undefined;
        }
      }
      if (conn === undefined) {
        conn = await this.open();
        await this.ping(conn, timeoutMs);
      }
      this.tripped = false;
    } catch (err) {
      // A new connection whose first PING missed its deadline is kept (a cache just woken answers its backlog first):
      // the next probe pings it again. One that failed otherwise is dropped.
      if (!(err instanceof L2UnavailableError) && conn !== undefined) this.drop(conn, err);
      // A refused login (an ACL user deleted or disabled, a bad token) is not coming back in a second: probed on the
      // reconnection backoff. Anything else (no answer in time, a refused, reset or closed socket, a cluster whose
      // root node did not answer) every 0.2–0.6 s, as the Python client does.
      if (!this.closed) this.scheduleProbe(isLoginRefused(err) ? this.backoffMs() : undefined);
    }
  }

  /** A `PING` within `timeoutMs`; an error the server answers counts as an answer. */
  private async ping(conn: Conn, timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => setImmediate(() => reject(new L2UnavailableError(`L2 did not answer a PING within ${timeoutMs} ms`))), timeoutMs);
    });
    try {
      await Promise.race([conn.ping !== undefined ? conn.ping() : conn.sendCommand!(undefined, true, ['PING']), timeout]);
      this.lastSuccessAt = Date.now();
    } catch (err) {
      if (!isReply(err)) throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the connection and stops reconnecting (and probing). */
  override close(): Promise<void> {
    clearTimeout(this.probeTimer);
    return super.close();
  }
}

/**
 * The built-in adapter for `config` (node-redis is loaded by its first connection, never before). If the first connection
 * cannot be made (node-redis missing, or the cache unreachable), the reader says so loudly, once: one ERROR log
 * line naming the fix that is also an Embedded Metric Format record of `ReaderCacheUnavailable` (the cache tier's
 * alarm watches it; dimension `tableName`), and `onUnavailable` (the client's `stats().l2Unavailable`). Reads go on to
 * the table.
 */
export function createValkeyL2(config: ValkeyConfig, tableName?: string, onUnavailable?: () => void): ValkeyL2 {
  const l2 = new ValkeyL2({ breaker: true, ...config });
  void l2.ready().then(() => {
    if (l2.isConnected) return;
    const reason = redisLoadError()?.message ?? `the cache at ${config.host}:${config.port} cannot be reached (check the function's VPC, `
      + 'security group and elasticache:Connect, which addReader sets); reads go to the table';
    onUnavailable?.();
    logUnavailable(reason, tableName ?? process.env[Env.tableName] ?? '');
  });
  return l2;
}
