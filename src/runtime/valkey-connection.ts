/**
 * The built-in Valkey adapter's connection: one node-redis connection per process, opened at client initialisation
 * and kept usable without any call waiting for a dead one. Policy:
 * - connects when created (at client initialisation), not inside a read: reads wait for that first connection
 *   at most `connectTimeoutMs`, never longer, and never for a reconnection (which may take `reconnectTimeoutMs`);
 * - no call waits for a dead connection: every command has a deadline (`commandTimeoutMs`); a command that
 *   misses it, a closed socket, or a keep-alive `PING` (every `pingIntervalMs` while idle) that goes unanswered
 *   drops the connection, so a black-holed connection is replaced within seconds;
 * - reconnects in the background with exponential backoff and jitter (1 s doubling to `maxBackoffMs`, times
 *   1 to 1.25): at most one connection attempt per second, whatever fails (a refused port, a deleted ACL user);
 *   calls meanwhile fail at once (the reader goes to the table), and the L2 resumes by itself;
 * - a fresh connection (fresh token) replaces the open one every `refreshAfterMs`, before ElastiCache drops
 *   IAM-authenticated connections at 12 hours.
 * The reader's breaker on top of it is ./valkey.ts; the node-redis client's options ./valkey-options.ts.
 */
import { createHash } from 'node:crypto';
import { CONNECTION_REFRESH_MS, createRedisConnection, RECONNECT_BASE_MS, ValkeyConfig } from './valkey-options';
import { Conn, isLoginRefused, isReply, L2UnavailableError, loadRedis } from './valkey-redis';

export class ValkeyConnection {
  /** Values are written through by the invalidation function; the reader watches the epoch. */
  readonly writeThrough = true;
  protected conn: Conn | undefined;
  private connecting: Promise<Conn> | undefined;
  private firstConnection: Promise<void>;
  private nextAttemptAt = 0;
  /** Connection failures in a row (the backoff's exponent); reset by a successful connection. */
  private failures = 0;
  private refreshTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  /** When a command last succeeded (ms). */
  protected lastSuccessAt = Date.now();
  protected closed = false;
  /** Connection attempts so far (the first one and each reconnection or refresh). */
  connections = 0;
  /** Connections dropped because a command or a ping missed its deadline. */
  timeouts = 0;

  constructor(protected readonly config: ValkeyConfig) {
    this.firstConnection = this.open().then(() => undefined, () => undefined);
    const pingMs = config.pingIntervalMs ?? 5000;
    this.pingTimer = setInterval(() => {
      if (this.conn !== undefined && Date.now() - this.lastSuccessAt >= pingMs) {
        void this.run((c) => (c.ping !== undefined ? c.ping() : c.sendCommand!(undefined, true, ['PING']))).catch(() => undefined);
      } else if (this.conn === undefined && this.connecting === undefined && !this.closed && Date.now() >= this.nextAttemptAt) {
        void this.open().catch(() => undefined); // reconnect before the next call needs it
      }
    }, pingMs);
    this.pingTimer.unref();
  }

  /** Resolves once the first connection is up or has failed (never rejects); bounded by `connectTimeoutMs`. */
  ready(): Promise<void> {
    return this.firstConnection;
  }

  get isConnected(): boolean {
    return this.conn !== undefined;
  }

  delete(key: string): Promise<unknown> {
    return this.run((c) => c.del(key));
  }

  /** Plain `INCR` (tests; the invalidation function moves the epoch with its `bumpEpoch`). */
  incr(key: string): Promise<number> {
    return this.run((c) => c.incr(key));
  }

  /** Runs a Lua script by its SHA-1 (`EVALSHA`), sending its text (`EVAL`) when the server does not know it yet. */
  protected script(text: string, keys: string[], args: string[]): Promise<number> {
    const sha = createHash('sha1').update(text).digest('hex');
    const options = { keys, arguments: args };
    return this.run(async (conn) => {
      try {
        return Number(await conn.evalSha(sha, options));
      } catch (err) {
        if (!String((err as Error)?.message).startsWith('NOSCRIPT')) throw err;
        return Number(await conn.eval(text, options));
      }
    });
  }

  /**
   * Runs a call on the connection within `commandTimeoutMs`. A failure that is not the server's answer (closed
   * socket, a missed deadline) drops the connection, so a fresh one is opened (with backoff).
   */
  protected async run<T>(call: (conn: Conn) => Promise<T>): Promise<T> {
    const conn = await this.use();
    const timeoutMs = this.config.commandTimeoutMs ?? 1000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      // Rejects after the loop's next I/O phase: an answer that arrived while the process was not running wins (and
      // the connection is not dropped for it). Node runs due timers before I/O.
      timer = setTimeout(() => setImmediate(() => reject(new L2UnavailableError(`L2 did not answer within ${timeoutMs} ms`))), timeoutMs);
    });
    try {
      const result = await Promise.race([call(conn), timeout]);
      this.lastSuccessAt = Date.now();
      return result;
    } catch (err) {
      if (!isReply(err)) {
        if (err instanceof L2UnavailableError) this.timeouts++;
        this.drop(conn, err);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Forgets a broken connection and schedules the next attempt by the backoff. */
  protected drop(conn: Conn, err: unknown): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.failures++;
    this.nextAttemptAt = Date.now() + this.backoffMs();
    this.config.onError?.(err);
    destroyQuietly(conn);
  }

  /** 1 s doubling per failure in a row, capped at `maxBackoffMs`, times a jitter of 1 to 1.25. */
  protected backoffMs(): number {
    const cap = this.config.maxBackoffMs ?? 10_000;
    const base = Math.min(cap, RECONNECT_BASE_MS * 2 ** Math.min(20, Math.max(0, this.failures - 1)));
    return base * (1 + Math.random() / 4);
  }

  /** Closes the connection and stops reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.refreshTimer);
    clearInterval(this.pingTimer);
    const conn = this.conn ?? await this.connecting?.catch(() => undefined);
    this.conn = undefined;
    if (conn !== undefined) destroyQuietly(conn);
  }

  /** The open connection, during the first connection that one (bounded), else an immediate failure. */
  private async use(): Promise<Conn> {
    if (this.conn !== undefined) return this.conn;
    if (this.closed) throw new L2UnavailableError('L2 connection closed');
    if (this.connecting !== undefined && this.connections <= 1) return this.connecting;
    if (this.connecting === undefined && Date.now() >= this.nextAttemptAt) void this.open().catch(() => undefined);
    throw new L2UnavailableError('no L2 connection (reconnecting in the background)');
  }

  /** Opens one connection (one attempt at a time), bounded by `connectTimeoutMs`. */
  protected open(): Promise<Conn> {
    this.connecting ??= this.connect().then((conn) => {
      if (this.closed) {
        destroyQuietly(conn);
        throw new L2UnavailableError('L2 connection closed');
      }
      this.conn = conn;
      this.failures = 0;
      this.lastSuccessAt = Date.now();
      this.scheduleRefresh();
      return conn;
    }, (err: unknown) => {
      this.failures++;
      this.nextAttemptAt = Date.now() + this.backoffMs();
      this.config.onError?.(err);
      throw err;
    }).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connect(): Promise<Conn> {
    const first = this.connections++ === 0;
    const connectTimeoutMs = this.config.connectTimeoutMs ?? 1000;
    const timeoutMs = first ? connectTimeoutMs : Math.max(connectTimeoutMs, this.config.reconnectTimeoutMs ?? 5000);
    // A refused login the connection reports on its way (a cluster client reports its root node's, then throws
    // "All the root nodes are unavailable") is what this attempt throws: the breaker's probe backs off on it.
    let refusal: unknown;
    const onError = (err: unknown) => {
      if (isLoginRefused(err)) refusal ??= err;
      this.config.onError?.(err);
    };
    const conn = createRedisConnection(await loadRedis(), { ...this.config, onError }, timeoutMs, (lost) => {
      if (this.conn === lost) this.drop(lost, new L2UnavailableError('L2 connection lost'));
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => setImmediate(() => reject(new L2UnavailableError(`L2 did not connect within ${timeoutMs} ms`))), timeoutMs);
    });
    const connecting = conn.connect();
    try {
      await Promise.race([connecting, timeout]);
      return conn;
    } catch (err) {
      destroyQuietly(conn);
      // A cluster connection cut off during its slot discovery goes on discovering after destroy() and opens the
      // nodes' connections then (node-redis 5): destroy it again once connect() settles, or those leak. (A standalone
      // client throws "The client is closed" from a second destroy(): quietly, or that is an unhandled rejection.)
      void connecting.then(() => destroyQuietly(conn), () => destroyQuietly(conn));
      throw refusal ?? err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Opens a fresh connection before the 12-hour limit, then swaps it in and drops the old one. */
  private scheduleRefresh(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      // Until the fresh connection is up, calls keep using the old one.
      const old = this.conn;
      void this.connect().then((fresh) => {
        this.conn = fresh;
        if (old !== undefined) destroyQuietly(old);
        this.scheduleRefresh();
      }, (err: unknown) => {
        this.config.onError?.(err);
        this.scheduleRefresh();
      });
    }, this.config.refreshAfterMs ?? CONNECTION_REFRESH_MS);
    this.refreshTimer.unref();
  }
}

/** Destroys a connection that may be closed already (node-redis's standalone client throws then). */
function destroyQuietly(conn: Conn): void {
  try {
    conn.destroy();
  } catch {
    // closed already: nothing left to release
  }
}
