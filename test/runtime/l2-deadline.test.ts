import { ChildProcess, spawn } from 'node:child_process';
import * as net from 'node:net';
import { withTimeout } from '../../src/runtime/l2';

/**
 * A process that is not scheduled for longer than an L2 deadline (50 containers starting on 2 cores, a long
 * synchronous module load, a garbage collection) must not time out an answer that is already in its socket: Node
 * runs due timers before I/O, so a plain `setTimeout` deadline lost that race (found in the fleet bench's cold start,
 * where connected readers went to the table).
 */
let server: ChildProcess;
let port: number;

beforeAll(async () => {
  // In another process, so that it answers while this one is blocked (as the cache does).
  const echo = "const s = require('net').createServer((c) => c.on('data', (d) => c.write(d)));"
    + "s.listen(0, '127.0.0.1', () => console.log(s.address().port));";
  server = spawn(process.execPath, ['-e', echo], { stdio: ['ignore', 'pipe', 'inherit'] });
  port = await new Promise<number>((resolve) => server.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
});

afterAll(async () => {
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill();
  await exited;
});

/** One request-answer over a real loopback socket, as an L2 `get` is. */
async function connected(): Promise<{ ask: (what: string) => Promise<string>; close: () => void }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  return {
    ask: (what) => new Promise((resolve) => {
      socket.once('data', (d) => resolve(d.toString()));
      socket.write(what);
    }),
    close: () => socket.destroy(),
  };
}

function blockFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* the process is not running its event loop */ }
}

test('an answer that arrived while the event loop was blocked past the deadline wins over the deadline', async () => {
  // GIVEN a connection, and a call whose answer arrives while the loop is blocked for 4× the deadline
  const conn = await connected();
  try {
    // WHEN
    const answer = withTimeout(() => conn.ask('epoch'), 50);
    // the request is on the wire; the block ends in the check phase, so the next loop turn starts with due timers
    await new Promise((resolve) => setImmediate(() => { blockFor(200); resolve(undefined); }));
    // THEN the answer is taken, not the deadline
    await expect(answer).resolves.toBe('epoch');
  } finally {
    conn.close();
  }
});

test('an answer that does not come still times out within the deadline and one loop turn', async () => {
  // GIVEN a call that is never answered
  const started = performance.now();
  // WHEN / THEN
  await expect(withTimeout(() => new Promise<string>(() => undefined), 50)).rejects.toThrow('L2 did not answer within 50 ms');
  expect(performance.now() - started).toBeLessThan(500);
});
