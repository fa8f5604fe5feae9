/**
 * Starts a real `redis-server` (Debian's `redis-server` package) on a free loopback port, in memory only
 * (`--save '' --appendonly no`). Used by the L2 tests and the demo; no jest globals.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as net from 'node:net';
import { freePort } from './dynamodb-local';

export interface RedisServer {
  /** `redis://127.0.0.1:<port>`, for `createClient({ url })`. */
  readonly url: string;
  readonly port: number;
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
}

/** Starts `redis-server` and waits until it answers `PING`. */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const binary = options.binary ?? process.env.REDIS_SERVER_BIN ?? 'redis-server';
  const child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
    if (await answersPing(port)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      throw new Error(`redis-server did not answer PING on 127.0.0.1:${port} in time: ${output.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  return {
    url: `redis://127.0.0.1:${port}`,
    port,
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

/** One `PING` over a raw socket: `true` on `+PONG`, `false` on refusal, an error reply or no answer in 1 s. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.createConnection({ port, host: '127.0.0.1' });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d: Buffer) => {
      reply += d.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}
