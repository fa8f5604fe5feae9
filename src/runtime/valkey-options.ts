/**
 * The built-in Valkey adapter's settings (`ValkeyConfig`, its defaults) and the node-redis client they make: cluster
 * mode (`createCluster`, a serverless cache) or standalone, TLS, and an IAM auth token per connection or a static ACL
 * user. The connection's life (timeouts, reconnection, refresh) is ./valkey-connection.ts; the reader's breaker
 * ./valkey.ts.
 */
import type * as Redis from 'redis';
import { AwsCredentials, iamAuthToken } from './iam-token';
import type { Conn } from './valkey-redis';

/** ElastiCache drops an IAM-authenticated connection after 12 h; replace it well before. */
export const CONNECTION_REFRESH_MS = 11 * 60 * 60 * 1000;
/** First reconnection delay; each failure doubles it up to `maxBackoffMs`. */
export const RECONNECT_BASE_MS = 1000;

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
  /** Deadline of a probe's `PING` (a connection the probe opens has a reconnection's deadline, `reconnectTimeoutMs`). @default 250 (a connection slower than that is of no use to a reader), at most `connectTimeoutMs` */
  readonly probeTimeoutMs?: number;
  /** Connection errors (counted, never thrown). */
  readonly onError?: (err: unknown) => void;
}

/**
 * A node-redis client (not connected) for `config`: a cluster client or a standalone one, TLS with the host as the
 * server name, IAM auth (a fresh token for each connection) or a static user. node-redis never reconnects by itself:
 * a dropped socket calls `onLost` and closes the client, and the adapter reconnects by its own backoff (one policy,
 * one rate limit). Connection errors go to `config.onError`.
 */
export function createRedisConnection(
  { createClient, createCluster }: typeof Redis, config: ValkeyConfig, connectTimeoutMs: number, onLost: (conn: Conn) => void,
): Conn {
  const { host, port } = config;
  let conn: Conn;
  const reconnectStrategy = (): false => {
    onLost(conn);
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
