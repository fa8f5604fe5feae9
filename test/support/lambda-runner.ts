/**
 * Runs a bundled Lambda handler (`assets/<path>/index.js`) in its own Node.js process, as the Lambda runtime
 * does: the module is loaded once with the function's environment (its module-scope connection opened at
 * init), then invoked with events over IPC. No jest globals.
 */
import { ChildProcess, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const RUNNER = `
const handler = require(process.argv[2]).handler;
process.on('message', async ({ id, event }) => {
  try {
    process.send({ id, result: await handler(event) });
  } catch (err) {
    process.send({ id, error: { name: err && err.name, message: String(err && err.message || err) } });
  }
});
process.send({ ready: true });
`;

export interface LambdaProcess {
  /** Log lines the function wrote (stdout and stderr). */
  readonly logs: string[];
  /** Invokes the handler; rejects with the handler's error (as Lambda reports a function error). */
  invoke<T = unknown>(event: unknown): Promise<T>;
  stop(): Promise<void>;
}

export async function startLambda(bundle: string, env: Record<string, string>): Promise<LambdaProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lambda-runner-'));
  const runner = path.join(dir, 'runner.js');
  fs.writeFileSync(runner, RUNNER);
  const child: ChildProcess = fork(runner, [path.resolve(bundle)], {
    env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1', ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    execArgv: [],
  });
  const logs: string[] = [];
  const keep = (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the function failed at init (exit ${code}): ${logs.join('\n')}`)));
  });
  let next = 0;
  const waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  child.on('message', (m: { id?: number; result?: unknown; error?: { name: string; message: string } }) => {
    if (m.id === undefined) return;
    const w = waiting.get(m.id)!;
    waiting.delete(m.id);
    if (m.error) w.reject(Object.assign(new Error(m.error.message), { name: m.error.name }));
    else w.resolve(m.result);
  });
  return {
    logs,
    invoke: (event) => new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      child.send({ id, event });
    }),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
