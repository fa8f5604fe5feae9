/**
 * Starts a real `redis-server` (Debian's `redis-server` package) on a free loopback port, in memory only
 * (`--save '' --appendonly no`). Used by the L2 tests and the demo; no jest globals.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { freePort } from './dynamodb-local';

export interface RedisServer {
  /** `redis://127.0.0.1:<port>` (`rediss://localhost:<port>` with TLS), for `createClient({ url })`. */
  readonly url: string;
  /** The port clients connect to (the TLS port with TLS). */
  readonly port: number;
  /** With TLS: the CA certificate (PEM) that signed the server's certificate (for `localhost` and 127.0.0.1). */
  readonly ca?: string;
  /** With TLS: the directory holding `ca.crt`, `server.crt`, `server.key` (pass the server as `certsFrom` to restart it). */
  readonly certDir?: string;
  readonly process: ChildProcess;
  /** Sends SIGTERM and waits for the process to exit (SIGKILL after 10 s). Safe to call twice. */
  stop(): Promise<void>;
}

export interface RedisServerOptions {
  /** @default - a free port */
  readonly port?: number;
  /** How long to wait for the first `PONG`. @default 10_000 */
  readonly timeoutMs?: number;
  /** @default - `REDIS_SERVER_BIN`, else `redis-server` from the PATH */
  readonly binary?: string;
  /** TLS only (`--port 0 --tls-port N`), with a CA and server certificate made by `openssl` for this server. @default false */
  readonly tls?: boolean;
  /**
   * Cluster mode with this one node owning all 16384 slots: the stand-in of an ElastiCache Serverless cache.
   * @default false
   */
  readonly cluster?: boolean;
  /** ACL users: `ACL SETUSER <name> on ><password> <rules>`; with any, the default user is turned off. @default - the default user, no password */
  readonly users?: readonly { readonly name: string; readonly password: string; readonly rules: string }[];
  /** Keep a previous server's certificates (a restart on the same port). */
  readonly certsFrom?: RedisServer;
}

/** Starts `redis-server` and waits until it answers `PING`. */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = options.port ?? options.certsFrom?.port ?? (await freePort());
  const binary = options.binary ?? process.env.REDIS_SERVER_BIN ?? 'redis-server';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-server-'));
  const args = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  let ca: string | undefined;
  if (options.tls) {
    const certs = options.certsFrom?.certDir ?? makeCertificates(dir);
    ca = fs.readFileSync(path.join(certs, 'ca.crt'), 'utf8');
    args.push('--port', '0', '--tls-port', String(port), '--tls-cert-file', path.join(certs, 'server.crt'),
      '--tls-key-file', path.join(certs, 'server.key'), '--tls-ca-cert-file', path.join(certs, 'ca.crt'), '--tls-auth-clients', 'no');
    if (options.cluster) args.push('--tls-cluster', 'yes');
  } else {
    args.push('--port', String(port));
  }
  if (options.cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, 'nodes.conf'));
  const acl = path.join(dir, 'users.acl');
  fs.writeFileSync(acl, [
    options.users?.length ? 'user default off' : 'user default on nopass ~* &* +@all',
    `user ${ADMIN_USER} on >${ADMIN_PASSWORD} ~* &* +@all`,
    ...(options.users ?? []).map((u) => `user ${u.name} on >${u.password} ${u.rules}`),
  ].join('\n') + '\n');
  args.push('--aclfile', acl);
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer) => { output = (output + d.toString()).slice(-4000); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let spawnError: Error | undefined;
  child.once('error', (err) => { spawnError = err; });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null && spawnError === undefined;

  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    if (!running()) {
      throw new Error(`redis-server (${binary}) exited before it was ready: ${spawnError?.message ?? output.trim()}`);
    }
    if (await answersPing(port, ca)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      throw new Error(`redis-server did not answer PING on 127.0.0.1:${port} in time: ${output.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  if (options.cluster) await claimAllSlots(port, options.tls === true, options.certsFrom?.certDir ?? dir);
  return {
    url: options.tls ? `rediss://localhost:${port}` : `redis://127.0.0.1:${port}`,
    port,
    ca,
    certDir: options.tls ? (options.certsFrom?.certDir ?? dir) : undefined,
    process: child,
    async stop() {
      if (running()) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      await exited;
    },
  };
}

/** A CA and a server certificate for `localhost` and 127.0.0.1, made by `openssl` in `dir`. */
function makeCertificates(dir: string): string {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=test-ca');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'san.ext');
  return dir;
}

/** One node takes every slot, then waits for `cluster_state:ok`. */
async function claimAllSlots(port: number, tls: boolean, certs: string): Promise<void> {
  const cli = (...args: string[]) => execFileSync('redis-cli', [
    '-h', '127.0.0.1', '-p', String(port), '--user', 'cluster-admin', '--pass', ADMIN_PASSWORD, '--no-auth-warning',
    ...(tls ? ['--tls', '--cacert', path.join(certs, 'ca.crt')] : []), ...args,
  ], { encoding: 'utf8' });
  cli('cluster', 'addslotsrange', '0', '16383');
  for (let i = 0; i < 200; i++) {
    if (cli('cluster', 'info').includes('cluster_state:ok')) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server on ${port}: cluster_state did not become ok`);
}

/** An admin user every server has (tests and the slot set-up use it; the library's users are the ones under test). */
export const ADMIN_USER = 'cluster-admin';
const ADMIN_PASSWORD = 'admin-password';
export const ADMIN_AUTH = { username: ADMIN_USER, password: ADMIN_PASSWORD };

/** One `PING` over a raw socket: `true` on `+PONG` (or `-NOAUTH`/`-NOPERM`: up, just locked), `false` otherwise. */
function answersPing(port: number, ca: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = ca === undefined
      ? net.createConnection({ port, host: '127.0.0.1' })
      : tlsConnect({ port, host: '127.0.0.1', ca, servername: 'localhost' });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once(ca === undefined ? 'connect' : 'secureConnect', () => socket.write('PING\r\n'));
    socket.on('data', (d: Buffer) => {
      reply += d.toString();
      if (reply.includes('\r\n')) done(/^(\+PONG|-NOAUTH|-NOPERM|-ERR)/.test(reply));
    });
  });
}
