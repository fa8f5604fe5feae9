/**
 * The README's readers that log which version and tier served each call (Node and Python), run as written against
 * DynamoDB Local: the Node block bundled with esbuild (the package name aliased to this checkout's runtime), the Python
 * block imported by Debian's python3 with the client from python/. Each logs one JSON line per read naming the
 * prompt, version and tier, and returns the tier.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { build } from 'esbuild';
import { publish, textContent } from './fixtures';
import { createServingTable, deleteTable, localDynamoDBClient, localEndpoint } from '../support/table';

const root = path.resolve(__dirname, '../..');
const README = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

/** The README's code block that starts with `// <file>` or `# <file>`. */
function readmeBlock(file: string): string {
  const block = README.split('```').map((b) => b.replace(/^\w*\n/, '')).find((b) => b.startsWith(`// ${file}:`) || b.startsWith(`# ${file}\n`));
  if (block === undefined) throw new Error(`README.md has no code block starting with ${file}`);
  return block;
}

let ddb: DynamoDBClient;
let table: string;
let work: string;

beforeAll(async () => {
  ddb = localDynamoDBClient();
  table = await createServingTable(ddb);
  await publish(ddb, table, 'summarize', 3, textContent('Summarise for {{audience}} in {{sentences}} sentences: {{document}}'));
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-provenance-'));
  // The AWS SDK stays external, as the Lambda runtime provides it: here, the repository's copy beside the bundle.
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(work, 'node_modules'));
});

afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
  await deleteTable(ddb, table);
  ddb.destroy();
});

const env = () => ({
  PATH: process.env.PATH,
  AWS_REGION: 'us-east-1',
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_ENDPOINT_URL_DYNAMODB: localEndpoint(),
  PROMPT_SERVING_TABLE_NAME: table,
});
const variables = { audience: 'executives', sentences: 3, document: 'Q3 revenue grew.' };

/** The JSON lines of `stdout` that are log lines of a read. */
const readLines = (stdout: string) => stdout.split('\n').filter((l) => l.includes('"prompt read"')).map((l) => JSON.parse(l));
/** The EMF lines of `stdout`. */
const emfLines = (stdout: string) => stdout.split('\n').filter((l) => l.includes('"_aws"')).map((l) => JSON.parse(l));
/** Each invocation writes its own EMF line (flush() at the end of the handler): the table read, then the hit. */
const emfPerInvocation = [
  expect.objectContaining({ TableName: expect.any(String), ReaderServedTable: 1, ReaderServedL1: 0, ReaderTableReads: expect.any(Number) }),
  expect.objectContaining({ ReaderServedTable: 0, ReaderServedL1: 1, ReaderTableReads: 0 }),
];

test('Node: the README reader logs one line per read with the version and the tier, and returns the tier', async () => {
  // GIVEN the block bundled as a NodejsFunction would bundle it (AWS SDK external, resolved from this checkout)
  const entry = path.join(work, 'inference-logged.mjs');
  fs.writeFileSync(entry, readmeBlock('lambda/inference-logged.mjs'));
  const bundle = path.join(work, 'index.mjs');
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: bundle,
    logLevel: 'silent',
    alias: { 'cdk-prompt-serving/runtime': path.join(root, 'src/runtime/index.ts') },
    external: ['@aws-sdk/*', '@opentelemetry/api'],
    banner: { js: 'import { createRequire as __cr } from "node:module"; const require = __cr(import.meta.url);' },
  });
  const runner = path.join(work, 'run.mjs');
  fs.writeFileSync(runner, `import { handler } from ${JSON.stringify(bundle)};
const event = { variables: ${JSON.stringify(variables)} };
const out = [await handler(event), await handler(event)];
console.log('RESULT ' + JSON.stringify(out));`);
  // WHEN it handles two events
  const run = spawnSync(process.execPath, [runner], { encoding: 'utf8', timeout: 60_000, env: env() });
  // THEN
  expect(run.stderr).not.toMatch(/Error/);
  expect(readLines(run.stdout)).toEqual([
    expect.objectContaining({ level: 'INFO', promptId: 'summarize', version: 3, source: 'table', stale: false }),
    expect.objectContaining({ promptId: 'summarize', version: 3, source: 'l1', stale: false }),
  ]);
  expect(emfLines(run.stdout)).toEqual(emfPerInvocation);
  const result = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith('RESULT '))!.slice(7));
  expect(result.map((r: { servedFrom: string; version: number }) => [r.version, r.servedFrom])).toEqual([[3, 'table'], [3, 'l1']]);
  expect(result[0].request).toBe('Summarise for executives in 3 sentences: Q3 revenue grew.');
});

test('Python: the README reader logs one line per read with the version and the tier, and returns the tier', () => {
  // GIVEN the block as lambda/reader-py-logged/handler.py
  const dir = path.join(work, 'reader-py-logged');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'handler.py'), readmeBlock('lambda/reader-py-logged/handler.py'));
  // WHEN it handles two events
  const run = spawnSync('/usr/bin/python3', ['-c', [
    'import json, handler',
    `event = {"variables": ${JSON.stringify(variables)}}`,
    'print("RESULT " + json.dumps([handler.handler(event, None), handler.handler(event, None)]))',
  ].join('\n')], { cwd: dir, encoding: 'utf8', timeout: 60_000, env: { ...env(), PYTHONPATH: path.join(root, 'python') } });
  // THEN
  expect(run.stderr).toBe('');
  expect(readLines(run.stdout)).toEqual([
    expect.objectContaining({ level: 'INFO', promptId: 'summarize', version: 3, source: 'table', stale: false }),
    expect.objectContaining({ promptId: 'summarize', version: 3, source: 'l1', stale: false }),
  ]);
  expect(emfLines(run.stdout)).toEqual(emfPerInvocation);
  const result = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith('RESULT '))!.slice(7));
  expect(result.map((r: { served_from: string; version: number }) => [r.version, r.served_from])).toEqual([[3, 'table'], [3, 'l1']]);
  expect(result[0].request).toBe('Summarise for executives in 3 sentences: Q3 revenue grew.');
});
