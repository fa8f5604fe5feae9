/** Runs the `cdk-prompt-serving` CLI in-process (`main`) or as its own process (the executable), capturing its output. */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { main } from '../../src/cli/main';
import { localEndpoint } from '../support/table';

const BIN = path.join(__dirname, '../../src/cli/index.ts');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `main` in-process, capturing what it prints. */
export async function cli(...argv: string[]): Promise<Run> {
  const run = { stdout: '', stderr: '' };
  const code = await main(argv, {
    stdout: { write: (text: string) => { run.stdout += text; } },
    stderr: { write: (text: string) => { run.stderr += text; } },
  });
  return { code, ...run };
}

/** Runs the `cdk-prompt-serving` executable as its own process (TypeScript through tsx). */
export function bin(...argv: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    // Pass this test file's environment explicitly: Jest gives each file its own copy of process.env.
    const child = spawn(process.execPath, [require.resolve('tsx/cli'), BIN, ...argv], { env: { ...process.env } });
    const run = { stdout: '', stderr: '' };
    child.stdout.on('data', (d: Buffer) => { run.stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { run.stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, ...run }));
  });
}

/** The CLI finds DynamoDB Local the way it finds any endpoint: through the standard AWS environment. */
const ENDPOINT_VARIABLE = 'AWS_ENDPOINT_URL_DYNAMODB';

/** Points the CLI at DynamoDB Local for the tests of the calling file. */
export function useLocalEndpoint(): void {
  beforeAll(() => {
    process.env[ENDPOINT_VARIABLE] = localEndpoint();
  });
  afterAll(() => {
    delete process.env[ENDPOINT_VARIABLE];
  });
}
