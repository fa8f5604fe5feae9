/**
 * The built-in L2 adapter: ElastiCache for Valkey (or any Redis-protocol server) through node-redis, cluster
 * mode (`createCluster`, a serverless cache) or standalone, TLS, IAM auth token per connection.
 *
 * Loaded only when the L2 is configured (`PROMPT_SERVING_CACHE_ENDPOINT`). node-redis (`redis`, an optional
 * dependency) is loaded at run time by {@link loadRedis}, by a module name bundlers do not follow, so a reader bundle
 * never carries it: a cache reader gets it from the construct's reader layer, which `addReader` attaches
 * (`/opt/nodejs/node_modules/redis`, on `NODE_PATH`: `@redis/client` with the commands this adapter sends, one 150 KB
 * file, scripts/build-layer.ts), or from a `node_modules` beside its bundle. The invalidation
 * function imports it statically and hands it over ({@link useRedisModule}). Connection policy:
 * - connects when created (at client initialisation), not inside a read: reads wait for that first connection
 *   at most `connectTimeoutMs`, never longer, and never for a reconnection (which may take `reconnectTimeoutMs`);
 * - no call waits for a dead connection: every command has a deadline (`commandTimeoutMs`); a command that
 *   misses it, a closed socket, or a keep-alive `PING` (every `pingIntervalMs` while idle) that goes unanswered
 *   drops the connection, so a black-holed connection is replaced within seconds;
 * - reconnects in the background with exponential backoff and jitter (1 s doubling to `maxBackoffMs`, times
 *   1 to 1.25): at most one connection attempt per second, whatever fails (a refused port, a deleted ACL user);
 *   calls meanwhile fail at once (the reader goes to the table), and the L2 resumes by itself;
 * - a fresh connection (fresh token) replaces the open one every `refreshAfterMs`, before ElastiCache drops
 *   IAM-authenticated connections at 12 hours;
 * - a reader's adapter (`breaker`, set by {@link createValkeyL2}) has a breaker: once a call fails or misses its
 *   caller's deadline ({@link L2_DEADLINE_MISSED}), calls fail at once, with no wait, while one background probe per
 *   process (every 0.2–0.6 s) finds the cache again: a `PING` within `probeTimeoutMs` on the open connection, and
 *   when that goes unanswered (a connection the network black-holed) the connection is destroyed and a new one
 *   opened and pinged at once. Calls resume when a probe is answered. A refused login (an ACL user deleted) is
 *   probed on the reconnection backoff instead.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as Redis from 'redis';
import { AwsCredentials, iamAuthToken } from './iam-token';
import { logUnavailable } from './unavailable';
import { Env } from '../schema/env';

/** ElastiCache drops an IAM-authenticated connection after 12 h; replace it well before. */
export const CONNECTION_REFRESH_MS = 11 * 60 * 60 * 1000;
/** First reconnection delay; each failure doubles it up to `maxBackoffMs`. */
export const RECONNECT_BASE_MS = 1000;
/** The breaker's probe runs this long after the previous one, times a jitter of 0.5 to 1.5. */
export const PROBE_INTERVAL_MS = 400;
/**
 * Set by the client's `withTimeout` (src/runtime/l2.ts) on a call's promise when the caller stops waiting for it: the
 * adapter's breaker opens then, not only when its own (longer) `commandTimeoutMs` passes. A registered symbol, so a
 * client bundle and the adapter from the reader layer agree on it without importing each other.
 */
export const L2_DEADLINE_MISSED: unique symbol = Symbol.for('cdk-prompt-serving.l2-deadline-missed') as never;

export interface ValkeyConfig {
  readonly host: string;
  readonly port: number;
  /** @default true */
  readonly tls?: boolean;
  /** PEM CA bundle to trust (tests); the system's CAs otherwise (ElastiCache's certificates are public). */
  readonly ca?: string;
  /** Cluster-mode endpoint (`createCluster`). @default true */
  readonly cluster?: boolean;
  /** IAM auth when set; otherwise no AUTH unless `password` is. */
  readonly iam?: {
    readonly cacheName: string;
    readonly userId: string;
    readonly region: () => Promise<string>;
    readonly serverless: boolean;
    readonly credentials: () => Promise<AwsCredentials>;
  };
  /** Static ACL user (tests, self-managed Redis). */
  readonly username?: string;
  readonly password?: string;
  /** Longest the first connection may take (reads wait for it, bounded). @default 1000 */
  readonly connectTimeoutMs?: number;
  /**
   * Longest a later connection (a reconnection or refresh) may take. Nothing waits for one (calls meanwhile fail
   * at once and the reader goes to the table), so it may take longer than the first: under load a TLS handshake,
   * an IAM token and cluster discovery can take more than a second, and a reconnection cut short at
   * `connectTimeoutMs` only doubled the backoff, so a loaded fleet never got its cache back.
   * @default 5000, or `connectTimeoutMs` if that is longer
   */
  readonly reconnectTimeoutMs?: number;
  /** @deprecated no longer used: every reconnection follows the backoff. */
  readonly maxReconnects?: number;
  /** @deprecated no longer used: see `maxBackoffMs`. */
  readonly retryAfterMs?: number;
  /** Longest pause between two connection attempts (backoff from 1 s, doubling, jittered). @default 10000 */
  readonly maxBackoffMs?: number;
  /** Deadline of every command; past it the connection is dropped and replaced. @default 1000 */
  readonly commandTimeoutMs?: number;
  /** A `PING` is sent when no command succeeded for this long; unanswered, it drops the connection. @default 5000 */
  readonly pingIntervalMs?: number;
  /** @default CONNECTION_REFRESH_MS */
  readonly refreshAfterMs?: number;
  /**
   * A breaker on `get`/`set`: after a failure, or a call its caller stopped waiting for, calls fail at once until a
   * background probe is answered (see the module's doc). {@link createValkeyL2} (readers) turns it on.
   * @default false
   */
  readonly breaker?: boolean;
  /** Deadline of a probe's `PING` (and of the connection it opens, at least `connectTimeoutMs`). @default 250 (a connection slower than that is of no use to a reader), at most `connectTimeoutMs` */
  readonly probeTimeoutMs?: number;
  /** Connection errors (counted, never thrown). */
  readonly onError?: (err: unknown) => void;
}

/**
 * The module name of node-redis, held in a variable so that bundlers (esbuild, `NodejsFunction`) leave the
 * load to run time instead of copying node-redis into every reader's bundle.
 */
const REDIS_MODULE: string = 'redis';
let redisModule: Promise<typeof Redis> | undefined;
let loadedRedis: typeof Redis | undefined;
let loadError: L2UnavailableError | undefined;

/** The fix for a function that cannot load node-redis, said in the one ERROR line and in the error. */
const REDIS_LOAD_FIX = 'attach the reader layer (addReader does, unless the function\'s own `layers` replace it) or ship `redis` '
  + "beside the bundle (nodeModules: ['redis'])";

/**
 * Hands the adapter node-redis itself, imported statically by the caller so that its bundler ships it (the
 * invalidation function does: its asset carries node-redis).
 */
export function useRedisModule(mod: typeof Redis): void {
  loadedRedis = mod;
  redisModule = Promise.resolve(mod);
  loadError = undefined;
}

/** Why node-redis could not be loaded, if the last attempt failed. */
export function redisLoadError(): L2UnavailableError | undefined {
  return loadError;
}

/** node-redis, loaded on the first connection; a clear error naming the fix when the function lacks it. */
export function loadRedis(moduleName: string = REDIS_MODULE): Promise<typeof Redis> {
  redisModule ??= requireAtRunTime(moduleName).then((mod) => {
    loadedRedis = mod as typeof Redis;
    loadError = undefined;
    return loadedRedis;
  }, (err: unknown) => {
    redisModule = undefined;
    loadError = new L2UnavailableError(`node-redis (redis) cannot be loaded: ${REDIS_LOAD_FIX}; reads go to the table (${(err as Error)?.message?.split('\n')[0]})`);
    throw loadError;
  });
  return redisModule;
}

/**
 * Loads `name` with a CommonJS `require` made by `createRequire`, in the CommonJS and the ES module builds alike:
 * unlike an ES `import`, it honours `NODE_PATH`, where Lambda puts layers (`/opt/nodejs/node_modules`), and it
 * also finds a `node_modules` beside the bundle (the function's task root).
 */
function requireAtRunTime(name: string): Promise<unknown> {
  try {
    const base = typeof __filename === 'string' && __filename ? __filename : `${process.env.LAMBDA_TASK_ROOT ?? process.cwd()}/index.js`;
    return Promise.resolve(createRequire(base)(name));
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * The subset of node-redis both `createClient` and `createCluster` give us. The reader layer's node-redis carries only
 * the commands named in `ADAPTER_REDIS_COMMANDS` (scripts/build-layer.ts): a command added here goes there too
 * (test/runtime/layer-redis.test.ts checks the layer's clients for every method).
 */
interface Conn {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, options: { EX: number }): Promise<unknown>;
  del(key: string): Promise<number>;
  incr(key: string): Promise<number>;
  ping?(): Promise<unknown>;
  sendCommand?(firstKey: undefined, isReadonly: boolean, args: string[]): Promise<unknown>;
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  connect(): Promise<unknown>;
  destroy(): void;
  on(event: 'error', listener: (err: unknown) => void): unknown;
}

/** Whether `err` is the server's answer (an error reply: the cache is there), not a failure to reach it. */
function isReply(err: unknown): boolean {
  return loadedRedis !== undefined && err instanceof loadedRedis.ErrorReply;
}

/** Thrown by calls while there is no usable connection (the reader goes on to the table). */
export class L2UnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'L2UnavailableError';
  }
}

export class ValkeyL2 {
  /** Values are written through by the invalidation function; the reader watches the epoch. */
  readonly writeThrough = true;
  private conn: Conn | undefined;
  private connecting: Promise<Conn> | undefined;
  private firstConnection: Promise<void>;
  private nextAttemptAt = 0;
  /** Connection failures in a row (the backoff's exponent); reset by a successful connection. */
  private failures = 0;
  private refreshTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  /** When a command last succeeded (ms). */
  private lastSuccessAt = Date.now();
  private closed = false;
  /** Connection attempts so far (the first one and each reconnection or refresh). */
  connections = 0;
  /** Connections dropped because a command or a ping missed its deadline. */
  timeouts = 0;
  /** Breaker probes run so far. */
  probes = 0;
  /** The breaker is open: `get`/`set` fail at once until a probe is answered. */
  private tripped = false;
  private probeTimer: NodeJS.Timeout | undefined;

  constructor(private readonly config: ValkeyConfig) {
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
    if (this.tripped) {
      return Promise.reject(new L2UnavailableError('L2 skipped after a failure (a background probe is looking for it)'));
    }
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
    let opened = false;
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
        opened = true;
        await this.ping(conn, timeoutMs);
      }
      this.tripped = false;
    } catch (err) {
      // Only a cache that cannot be reached (no answer in time, a refused or reset socket) is probed every half
      // second. One that takes the connection and then refuses it (a login refused: an ACL user deleted, a bad
      // token; node-redis reports a closed client) is not coming back in a second: probed on the reconnection backoff.
      const unreachable = err instanceof L2UnavailableError || typeof (err as { code?: unknown })?.code === 'string';
      const refused = opened || !unreachable;
      if (refused && conn !== undefined) this.drop(conn, err);
      if (!this.closed) this.scheduleProbe(refused ? this.backoffMs() : undefined);
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

  delete(key: string): Promise<unknown> {
    return this.run((c) => c.del(key));
  }

  /** Plain `INCR` (tests; the invalidation function moves the epoch with {@link bumpEpoch}). */
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
  private async run<T>(call: (conn: Conn) => Promise<T>): Promise<T> {
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
  private drop(conn: Conn, err: unknown): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.failures++;
    this.nextAttemptAt = Date.now() + this.backoffMs();
    this.config.onError?.(err);
    conn.destroy();
  }

  /** 1 s doubling per failure in a row, capped at `maxBackoffMs`, times a jitter of 1 to 1.25. */
  private backoffMs(): number {
    const cap = this.config.maxBackoffMs ?? 10_000;
    const base = Math.min(cap, RECONNECT_BASE_MS * 2 ** Math.min(20, Math.max(0, this.failures - 1)));
    return base * (1 + Math.random() / 4);
  }

  /** Closes the connection and stops reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.probeTimer);
    clearTimeout(this.refreshTimer);
    clearInterval(this.pingTimer);
    const conn = this.conn ?? await this.connecting?.catch(() => undefined);
    this.conn = undefined;
    conn?.destroy();
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
  private open(): Promise<Conn> {
    this.connecting ??= this.connect().then((conn) => {
      if (this.closed) {
        conn.destroy();
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
    const conn = this.build(await loadRedis(), timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => setImmediate(() => reject(new L2UnavailableError(`L2 did not connect within ${timeoutMs} ms`))), timeoutMs);
    });
    const connecting = conn.connect();
    try {
      await Promise.race([connecting, timeout]);
      return conn;
    } catch (err) {
      conn.destroy();
      // A cluster connection cut off during its slot discovery goes on discovering after destroy() and opens the
      // nodes' connections then (node-redis 5): destroy it again once connect() settles, or those leak.
      void connecting.then(() => conn.destroy(), () => conn.destroy());
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private build({ createClient, createCluster }: typeof Redis, connectTimeoutMs: number): Conn {
    const config = this.config;
    const { host, port } = config;
    let conn: Conn;
    // node-redis never reconnects by itself: a dropped socket closes the connection, the next call sees it
    // failed and drops it, and this adapter reconnects by its own backoff (one policy, one rate limit).
    const reconnectStrategy = (): false => {
      if (this.conn === conn) this.drop(conn, new L2UnavailableError('L2 connection lost'));
      return false;
    };
    const tls = config.tls ?? true;
    const socket = {
      host,
      port,
      connectTimeout: connectTimeoutMs,
      keepAlive: true,
      reconnectStrategy,
      ...(tls ? { tls: true as const, servername: host, ...(config.ca ? { ca: config.ca } : {}) } : {}),
    };
    const iam = config.iam;
    const auth = iam
      ? {
        credentialsProvider: {
          type: 'async-credentials-provider' as const,
          credentials: async () => ({
            username: iam.userId,
            password: iamAuthToken({ ...iam, region: await iam.region(), credentials: await iam.credentials() }),
          }),
        },
      }
      : { username: config.username, password: config.password };
    if (config.cluster ?? true) {
      conn = createCluster({
        rootNodes: [{ socket }],
        defaults: { socket: { ...socket, host: undefined, port: undefined }, ...auth, disableClientInfo: true },
        maxCommandRedirections: 4,
      }) as unknown as Conn;
    } else {
      conn = createClient({ socket, ...auth, disableClientInfo: true }) as unknown as Conn;
    }
    conn.on('error', (err) => config.onError?.(err));
    return conn;
  }

  /** Opens a fresh connection before the 12-hour limit, then swaps it in and drops the old one. */
  private scheduleRefresh(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      // Until the fresh connection is up, calls keep using the old one.
      const old = this.conn;
      void this.connect().then((fresh) => {
        this.conn = fresh;
        old?.destroy();
        this.scheduleRefresh();
      }, (err: unknown) => {
        this.config.onError?.(err);
        this.scheduleRefresh();
      });
    }, this.config.refreshAfterMs ?? CONNECTION_REFRESH_MS);
    this.refreshTimer.unref();
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
