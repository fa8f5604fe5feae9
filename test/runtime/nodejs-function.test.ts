/**
 * The README's reader, built the way users build it and started the way Lambda starts it.
 *
 * - Bundled by a real `NodejsFunction` (aws-cdk-lib runs esbuild with its own options) in both output formats:
 *   ESM with the README's top-level `await prompts.preload(...)`, and CommonJS (the default) without it.
 * - Against the package as published (test/support/compiled-package.ts: CommonJS lib/, ES module entries,
 *   the real `exports` map), installed next to the entry file.
 * - Cold-started like Lambda: a fresh `node` process with the bundle alone in its task directory and the AWS
 *   SDK only in a parent `node_modules` (Lambda's runtime provides it), importing the handler file, then invoking
 *   the handler against DynamoDB Local with the environment `addReader` sets.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import { Env } from '../../src/schema';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { installCompiledPackage } from '../support/compiled-package';
import { createServingTable, deleteTable, localDynamoDBClient, localEndpoint } from '../support/table';

const root = path.resolve(__dirname, '../..');
const README = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

/** The README's code block that starts with `// <file>`. */
function readmeBlock(file: string): string {
  const block = README.split('```').find((b) => b.replace(/^\w*\n/, '').startsWith(`// ${file}\n`));
  if (!block) throw new Error(`README.md has no code block starting with // ${file}`);
  return block.replace(/^\w*\n/, '');
}

const ddb = localDynamoDBClient();
let tableName: string;
let work: string;

beforeAll(async () => {
  tableName = await createServingTable(ddb, 'bundled-reader');
  const report = await new SyncEngine({ dynamoDBClient: ddb, tableName, source: new DirectoryPromptSource(path.join(root, 'examples/prompts')) }).fullSync();
  expect(report.failures).toEqual([]);
  // Inside the project (NodejsFunction's projectRoot is the lockfile's directory), in the ignored .tmp/.
  fs.mkdirSync(path.join(root, '.tmp'), { recursive: true });
  work = fs.mkdtempSync(path.join(root, '.tmp', 'reader-'));
  // The reader is an app of its own: without its own package.json, `cdk-prompt-serving/runtime` would resolve
  // to this repository itself (a package importing its own name), i.e. to a lib/ that `npm test` has not built.
  fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ name: 'reader-app', private: true }));
  await installCompiledPackage(work);
});

afterAll(async () => {
  await deleteTable(ddb, tableName);
  ddb.destroy();
  fs.rmSync(work, { recursive: true, force: true });
});

/** Synthesizes a NodejsFunction for `entry` and returns the directory of its bundled asset. */
function bundleWithNodejsFunction(entry: string, bundling: nodejs.BundlingOptions): string {
  const outdir = path.join(work, `cdk.out-${path.basename(entry)}`);
  const app = new App({ outdir });
  const stack = new Stack(app, 'Reader');
  new nodejs.NodejsFunction(stack, 'Inference', {
    entry,
    runtime: lambda.Runtime.NODEJS_22_X,
    depsLockFilePath: path.join(root, 'package-lock.json'),
    bundling,
  });
  const assembly = app.synth();
  const assets = fs.readdirSync(assembly.directory).filter((f) => f.startsWith('asset.'));
  expect(assets).toHaveLength(1);
  return path.join(assembly.directory, assets[0]);
}

/** Copies the bundle into a Lambda-like layout and invokes its handler once, in a fresh process. */
function coldStart(assetDir: string, handlerFile: string, event: unknown): any {
  const lambdaRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'lambda-'));
  try {
    const task = path.join(lambdaRoot, 'var', 'task');
    fs.cpSync(assetDir, task, { recursive: true });
    expect(fs.readdirSync(task)).toEqual([handlerFile]); // the bundle alone: no node_modules next to it
    fs.mkdirSync(path.join(lambdaRoot, 'node_modules'));
    fs.symlinkSync(path.join(root, 'node_modules', '@aws-sdk'), path.join(lambdaRoot, 'node_modules', '@aws-sdk'));
    const bootstrap = `
      const { pathToFileURL } = require('node:url');
      (async () => {
        const mod = await import(pathToFileURL(${JSON.stringify(path.join(task, handlerFile))}).href);
        const result = await (mod.handler ?? mod.default.handler)(${JSON.stringify(event)}, {});
        process.stdout.write(JSON.stringify(result));
      })().catch((err) => { console.error(err); process.exit(1); });`;
    const stdout = execFileSync(process.execPath, ['-e', bootstrap], {
      cwd: task,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        AWS_ENDPOINT_URL_DYNAMODB: localEndpoint(),
        [Env.tableName]: tableName,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return JSON.parse(stdout);
  } finally {
    fs.rmSync(lambdaRoot, { recursive: true, force: true });
  }
}

const event = { variables: { audience: 'executives', sentences: 3, document: 'Q3 revenue grew.' } };

test('ESM bundle (top-level await, as in the README) cold-starts and serves the prompt', () => {
  const source = readmeBlock('lambda/inference.mjs');
  expect(source).toMatch(/^await prompts\.preload\(/m);
  const entry = path.join(work, 'inference.mjs');
  fs.writeFileSync(entry, source);
  const asset = bundleWithNodejsFunction(entry, { format: nodejs.OutputFormat.ESM });
  const bundle = fs.readFileSync(path.join(asset, 'index.mjs'), 'utf8');
  expect(bundle).not.toMatch(/require\(["']@aws-sdk/);
  expect(bundle).toMatch(/from\s*["']@aws-sdk\/client-dynamodb["']/);

  const result = coldStart(asset, 'index.mjs', event);
  expect(result).toEqual({
    prompt: 'summarize',
    version: 1,
    request: expect.stringContaining('Summarise the following document for executives in at most 3 sentences.'),
  });
});

test('CommonJS bundle (NodejsFunction\'s default format) cold-starts and serves the prompt', () => {
  const source = readmeBlock('lambda/inference.js');
  expect(source).not.toMatch(/^await /m);
  const entry = path.join(work, 'inference.js');
  fs.writeFileSync(entry, source);
  const asset = bundleWithNodejsFunction(entry, {});
  const bundle = fs.readFileSync(path.join(asset, 'index.js'), 'utf8');
  expect(bundle).toMatch(/require\(["']@aws-sdk\/client-dynamodb["']\)/);

  const result = coldStart(asset, 'index.js', event);
  expect(result).toEqual({
    prompt: 'summarize',
    version: 1,
    request: expect.stringContaining('<document>\nQ3 revenue grew.\n</document>'),
  });
});
