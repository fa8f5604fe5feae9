/**
 * Bundle budget: a Lambda handler that imports only `cdk-prompt-serving/runtime`, bundled the way Lambda
 * functions are (esbuild, minified, platform node, AWS SDK external), stays small and CDK-free.
 *
 * The bundle is built from what the package ships (test/support/compiled-package.ts), resolved through the
 * package's real `exports` map: the handler `import`s the client, so esbuild takes the ES module entry (condition
 * `import`) even for this CommonJS output, as `NodejsFunction` does.
 *
 * The budget is the constant below; the measured size is printed by this test and recorded in docs/BENCHMARKS.md
 * ("Reader bundle and layer"), where each step of its growth (labels and rollouts, strict rendering and read
 * provenance, the cache tier's logic) is in the history. The checks that nothing foreign is bundled are exact; the
 * size budget only catches growth nobody decided on. node-redis is never bundled: the adapter loads it at run time
 * by a module name bundlers do not follow (src/runtime/valkey.ts), from the layer `addReader` attaches to cache
 * readers (docs/adr/0003-reader-layer.md).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build, Metafile } from 'esbuild';
import { installCompiledPackage } from '../support/compiled-package';

const BUDGET_BYTES = 32 * 1024;
const root = path.resolve(__dirname, '../..');

const handler = `
import { PromptClient, PromptNotFoundError, render } from 'cdk-prompt-serving/runtime';
const prompts = new PromptClient();
export const handler = async (event: { promptId: string; variables: Record<string, string> }) => {
  try {
    const prompt = await prompts.getPrompt(event.promptId);
    return prompt.templateType === 'TEXT' ? render(prompt, event.variables) : render(prompt, event.variables).messages;
  } catch (e) {
    if (e instanceof PromptNotFoundError) return { statusCode: 404 };
    throw e;
  }
};
`;

/**
 * Three readers, each measured on its own: what a feature costs a reader that does not call it. The budgets are the
 * read path's goals (docs/adr/0007-reader-paid-for-by-use.md): 25, 30 and 36 KB, met; growth nobody decided on fails.
 * Labels and rollouts are a feature only the label reader passes (`features: [labels]`); `render` and `preload` are
 * functions only the readers that call them bundle; the cache tier comes from the reader layer (or
 * `cacheTier(store)`), so none of these readers bundles it.
 */
const READERS: { name: string; budget: number; contents: string }[] = [
  {
    name: 'getPrompt only',
    budget: 25 * 1024,
    contents: `import { PromptClient } from 'cdk-prompt-serving/runtime';
const prompts = new PromptClient();
export const handler = async (event: { promptId: string }) => (await prompts.getPrompt(event.promptId)).version;`,
  },
  {
    name: 'the README reader (preload, getPrompt, render)',
    budget: 30 * 1024,
    contents: `import { preload, PromptClient, render } from 'cdk-prompt-serving/runtime';
const prompts = new PromptClient();
void preload(prompts, ['summarize']);
export const handler = async (event: { variables: Record<string, string> }) => {
  const prompt = await prompts.getPrompt('summarize');
  const request = render(prompt, event.variables);
  return { prompt: prompt.id, version: prompt.version, request };
};`,
  },
  {
    name: 'a label with a rollout',
    budget: 36 * 1024,
    contents: `import { labels, PromptClient, render } from 'cdk-prompt-serving/runtime';
const prompts = new PromptClient({ features: [labels] });
export const handler = async (event: { userId: string; variables: Record<string, string> }) => {
  const prompt = await prompts.getPrompt('support-answer', { label: 'production', stickinessKey: event.userId });
  return { version: prompt.version, rollout: prompt.rollout, request: render(prompt, event.variables) };
};`,
  },
];

let work: string;
let output: { bytes: number; text: string; inputs: string[] };
const readerBytes = new Map<string, number>();

function bundle(contents: string, external: string[]) {
  return build({
    absWorkingDir: work,
    stdin: { contents, resolveDir: work, sourcefile: 'handler.ts', loader: 'ts' },
    // aws-cdk-lib and constructs stay resolvable, so pulling them in would show in the metafile, not fail to resolve.
    nodePaths: [path.join(root, 'node_modules')],
    bundle: true,
    minify: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    external,
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'runtime-bundle-'));
  await installCompiledPackage(work);
  // node-redis is resolvable here (a devDependency), as it is in an app that installed this package's optional
  // dependencies: the bundle must still not contain it.
  const result = await bundle(handler, ['@aws-sdk/*']);
  const file = result.outputFiles[0];
  if (process.env.BUNDLE_BREAKDOWN) {
    const outputs = Object.values((result.metafile as Metafile).outputs)[0].inputs;
    process.stdout.write(Object.entries(outputs).map(([k, v]) => `${v.bytesInOutput}\t${k}`).sort((a, b) => parseInt(b) - parseInt(a)).join('\n') + '\n');
  }
  output = { bytes: file.contents.byteLength, text: file.text, inputs: Object.keys((result.metafile as Metafile).inputs) };
  for (const reader of READERS) readerBytes.set(reader.name, (await bundle(reader.contents, ['@aws-sdk/*'])).outputFiles[0].contents.byteLength);
  process.stdout.write(`runtime bundle: ${(output.bytes / 1024).toFixed(1)} KB; ${READERS.map((r) => `${r.name}: ${readerBytes.get(r.name)} B`).join('; ')}\n`);
});

afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

test(`the minified bundle is at most ${BUDGET_BYTES / 1024} KB`, () => {
  expect(output.inputs).toContain('node_modules/cdk-prompt-serving/lib/runtime/index.mjs');
  expect(output.bytes).toBeLessThanOrEqual(BUDGET_BYTES);
});

test.each(READERS.map((r) => [r.name, r.budget] as const))('%s: the minified bundle is at most %d bytes', (name, budget) => {
  expect(readerBytes.get(name)).toBeLessThanOrEqual(budget);
});

test('nothing from aws-cdk-lib or constructs is bundled', () => {
  expect(output.inputs.filter((input) => /(^|\/)(aws-cdk-lib|constructs)\//.test(input))).toEqual([]);
  expect(output.inputs.filter((input) => !input.startsWith('node_modules/cdk-prompt-serving/lib/') && input !== 'handler.ts')).toEqual([]);
  expect(output.text).not.toMatch(/aws-cdk-lib|require\("constructs"\)/);
});

test('the AWS SDK stays external (the Lambda Node.js runtime provides it)', () => {
  expect(output.text).toContain('require("@aws-sdk/client-dynamodb")');
});

test('node-redis is never bundled, even where it is installed: the Valkey adapter loads it at run time', () => {
  expect(output.inputs.filter((input) => input.includes('@redis/') || input.includes('/redis/'))).toEqual([]);
  expect(output.text).not.toMatch(/require\("redis"\)|import\("redis"\)/);
});
