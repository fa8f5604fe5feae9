/**
 * What a reader's cold start does (figures in docs/BENCHMARKS.md, "What the deployed reader costs"):
 * no ICU formatting at import or construction (`toLocaleString` cost every cold start ~7 ms), and `preload` reads the
 * catalog beside its first item in one request, as a cold `getPrompt` does. Real DynamoDB Local, requests counted with
 * the SDK middleware.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { build } from 'esbuild';
import { logGetItemKeys, publish, textContent, writeCatalog } from './fixtures';
import { preload, PromptClient } from '../../src/runtime';
import { Env } from '../../src/schema/env';
import { CallCounter } from '../support/call-counter';
import { LAMBDA_BUNDLE_OPTIONS } from '../support/lambda-bundle';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const root = path.resolve(__dirname, '../..');
let admin: DynamoDBClient;
let table: string;
const opened: DynamoDBClient[] = [];

beforeAll(async () => {
  admin = localDynamoDBClient();
  table = await createServingTable(admin);
  for (const id of ['greeting', 'farewell', 'summary']) await publish(admin, table, id, 1, textContent(`${id} {{name}}`));
  await writeCatalog(admin, table, ['greeting', 'farewell', 'summary']);
});

afterAll(async () => {
  await deleteTable(admin, table);
  admin.destroy();
});

afterEach(() => {
  for (const client of opened.splice(0)) client.destroy();
});

function newClient() {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  opened.push(dynamoDBClient);
  const keys = logGetItemKeys(dynamoDBClient);
  return { prompts: new PromptClient({ tableName: table, dynamoDBClient }), counter, keys };
}

describe('preload on a cold client', () => {
  test('reads the catalog and its one id in one request (one BatchGetItem), as a cold getPrompt does', async () => {
    // GIVEN a client that has read nothing yet
    const { prompts, counter, keys } = newClient();
    // WHEN
    await preload(prompts, ['greeting']);
    // THEN one round trip, and the prompt and the catalog are both in memory
    expect(counter.snapshot()).toEqual({ BatchGetItem: 1 });
    expect(keys.sort()).toEqual(['#catalog/CURRENT', 'greeting/CURRENT']);
    await prompts.getPrompt('greeting');
    await expect(prompts.getPrompt('never-synced')).rejects.toThrow(/not in the catalog/);
    expect(counter.snapshot()).toEqual({ BatchGetItem: 1 });
    expect(prompts.stats()).toMatchObject({ catalogLoads: 1, storeReads: 1, hits: 1, catalogRejections: 1 });
  });

  test('with several ids: the catalog rides with the first; each other id is its own GetItem (an unlisted id in a scoped grant fails alone)', async () => {
    // GIVEN
    const { prompts, counter, keys } = newClient();
    // WHEN
    await preload(prompts, ['greeting', 'farewell', 'summary']);
    // THEN
    expect(counter.snapshot()).toEqual({ BatchGetItem: 1, GetItem: 2 });
    expect(keys.sort()).toEqual(['#catalog/CURRENT', 'farewell/CURRENT', 'greeting/CURRENT', 'summary/CURRENT']);
  });

  test('an id the table does not hold is remembered as not found, and the read beside it still lands', async () => {
    // GIVEN
    const { prompts, counter } = newClient();
    // WHEN
    await preload(prompts, ['ghost', 'greeting']);
    // THEN neither fails the preload; the ghost is answered without another request
    await expect(prompts.getPrompt('ghost')).rejects.toThrow(/not in the catalog|not found/);
    await expect(prompts.getPrompt('greeting')).resolves.toMatchObject({ id: 'greeting', version: 1 });
    expect(counter.count('BatchGetItem') + counter.count('GetItem')).toBe(2);
  });

  test('without ids: one GetItem of the catalog', async () => {
    const { prompts, counter, keys } = newClient();
    await preload(prompts);
    expect(counter.snapshot()).toEqual({ GetItem: 1 });
    expect(keys).toEqual(['#catalog/CURRENT']);
  });
});

test('importing the client and constructing it use no ICU formatting (Intl, toLocaleString)', async () => {
  // GIVEN the runtime client bundled as a reader's NodejsFunction bundles it (minified, the AWS SDK external)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cold-start-'));
  try {
    const bundle = path.join(dir, 'reader.js');
    await build({
      stdin: {
        contents: `import { PromptClient } from ${JSON.stringify(path.join(root, 'src/runtime'))};\nnew PromptClient();\nprocess.stdout.write('constructed');`,
        resolveDir: root,
        loader: 'ts',
      },
      ...LAMBDA_BUNDLE_OPTIONS,
      outfile: bundle,
    });
    // and a process where the AWS SDK is loaded first, then every ICU formatter throws
    const trap = path.join(dir, 'trap.js');
    fs.writeFileSync(trap, [
      "require('@aws-sdk/client-dynamodb');",
      "const fail = (what) => function () { throw new Error(what + ' called while the reader loaded'); };",
      "for (const proto of [Number.prototype, Date.prototype, Array.prototype, BigInt.prototype]) proto.toLocaleString = fail('toLocaleString');",
      "for (const name of ['NumberFormat', 'DateTimeFormat', 'Collator', 'PluralRules', 'RelativeTimeFormat', 'ListFormat', 'Segmenter']) Intl[name] = fail('Intl.' + name);",
      "String.prototype.localeCompare = fail('localeCompare');",
    ].join('\n'));
    // WHEN
    const out = spawnSync(process.execPath, ['-r', trap, bundle], {
      encoding: 'utf8',
      timeout: 30_000,
      env: {
        PATH: process.env.PATH, NODE_PATH: path.join(root, 'node_modules'), AWS_REGION: 'us-east-1', [Env.tableName]: 'prompts',
      },
    });
    // THEN
    expect({ status: out.status, stderr: out.status === 0 ? '' : out.stderr }).toEqual({ status: 0, stderr: '' });
    expect(out.stdout).toBe('constructed');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
