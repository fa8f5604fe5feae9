/**
 * The README's stacks, built as the README builds them, for the as-deployed tests and the fleet bench:
 * - `Cached`: a Bedrock source with the serverless cache (README "A cache tier"), read by the README's Node readers
 *   (`NodejsFunction`, ESM with top-level await and CommonJS, default bundling options, no `nodeModules`) and a
 *   Python reader packaged as its README shows (`Code.fromAsset` of the handler's folder; the client and redis-py
 *   come with the layer `addReader` attaches);
 * - `Directory`: prompts as code (README "Prompts as code"), read by the same Node readers without the cache;
 * - `Replica`: a table with replicas (README "Multi-Region").
 * The reader entries are the README's code blocks, in an app folder of their own with the package installed as
 * published (test/support/compiled-package.ts). No jest globals.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import { PromptCache, PromptServingTable, PromptSource } from '../../src';
import { installCompiledPackage } from '../support/compiled-package';

const root = path.resolve(__dirname, '../..');

/** The README's code block that starts with `// <file>` (or `# <file>` for Python). */
export function readmeBlock(file: string, readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')): string {
  const block = readme.split('```').find((b) => {
    const body = b.replace(/^\w*\n/, '');
    return body.startsWith(`// ${file}\n`) || body.startsWith(`# ${file}\n`);
  });
  if (!block) throw new Error(`README.md has no code block starting with // ${file}`);
  return block.replace(/^\w*\n/, '');
}

/** The readers' app folder (inside the project: NodejsFunction's projectRoot is the lockfile's folder). */
export async function prepareReaderApp(): Promise<string> {
  fs.mkdirSync(path.join(root, '.tmp'), { recursive: true });
  const work = fs.mkdtempSync(path.join(root, '.tmp', 'readme-app-'));
  fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ name: 'reader-app', private: true }));
  await installCompiledPackage(work);
  fs.mkdirSync(path.join(work, 'lambda', 'reader-py'), { recursive: true });
  fs.writeFileSync(path.join(work, 'lambda', 'inference.mjs'), readmeBlock('lambda/inference.mjs'));
  fs.writeFileSync(path.join(work, 'lambda', 'inference.js'), readmeBlock('lambda/inference.js'));
  fs.writeFileSync(path.join(work, 'lambda', 'reader-py', 'handler.py'), readmeBlock('lambda/reader-py/handler.py'));
  return work;
}

export interface ReadmeApp {
  readonly cached: Stack;
  readonly directory: Stack;
  readonly replica: Stack;
}

/** Adds the README's stacks to `app`; the reader entries come from `work` (see {@link prepareReaderApp}). */
export function buildReadmeApp(app: App, work: string, prompts = path.join(root, 'examples/prompts')): ReadmeApp {
  const env = { account: '123456789012', region: 'us-east-1' };
  const nodeReader = (scope: Stack, id: string, format: 'esm' | 'cjs', vpc?: ec2.IVpc) => new nodejs.NodejsFunction(scope, id, {
    entry: path.join(work, 'lambda', format === 'esm' ? 'inference.mjs' : 'inference.js'),
    runtime: lambda.Runtime.NODEJS_22_X,
    depsLockFilePath: path.join(root, 'package-lock.json'),
    vpc,
    ...(format === 'esm' ? { bundling: { format: nodejs.OutputFormat.ESM } } : {}),
  });

  const cached = new Stack(app, 'Cached', { env });
  const vpc = new ec2.Vpc(cached, 'Vpc', { maxAzs: 2, natGateways: 0, subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }] });
  const cachedTable = new PromptServingTable(cached, 'Prompts', {
    source: PromptSource.bedrock(),
    cache: PromptCache.serverless({ vpc, dynamoDbGatewayEndpoint: true, maxEcpuPerSecond: 100_000 }),
  });
  cachedTable.addReader(nodeReader(cached, 'ReaderEsm', 'esm', vpc));
  cachedTable.addReader(nodeReader(cached, 'ReaderCjs', 'cjs', vpc));
  cachedTable.addReader(new lambda.Function(cached, 'ReaderPython', {
    runtime: lambda.Runtime.PYTHON_3_12,
    handler: 'handler.handler',
    code: lambda.Code.fromAsset(path.join(work, 'lambda', 'reader-py')),
    vpc,
  }));

  const directory = new Stack(app, 'Directory', { env });
  const directoryTable = new PromptServingTable(directory, 'Prompts', { source: PromptSource.fromDirectory(prompts) });
  directoryTable.addReader(nodeReader(directory, 'ReaderEsm', 'esm'));
  directoryTable.addReader(nodeReader(directory, 'ReaderCjs', 'cjs'));

  const replica = new Stack(app, 'Replica', { env });
  new PromptServingTable(replica, 'Prompts', {
    source: PromptSource.bedrock(),
    tableName: 'prompts-prod',
    replicaRegions: ['us-west-2', 'ap-southeast-2'],
  });
  return { cached, directory, replica };
}
