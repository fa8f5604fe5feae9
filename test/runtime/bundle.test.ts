/**
 * Bundle budget: a Lambda handler that imports only `cdk-prompt-serving/runtime`, bundled the way Lambda
 * functions are (esbuild, minified, platform node, AWS SDK external), stays small and CDK-free.
 *
 * The bundle is built from what the package ships: `src/runtime`, `src/schema/` and `src/ddb-codec.ts` compiled
 * to CommonJS with the project's tsconfig (as jsii compiles `lib/`), resolved through the package's real
 * `exports` map. CommonJS cannot be tree-shaken, so this is the size users get, not the smaller size the
 * TypeScript sources would bundle to.
 *
 * Without the cache tier `redis` (node-redis, an optional dependency) is left out (`external`, or simply not
 * installed): the client requires it only when PROMPT_SERVING_CACHE_ENDPOINT is set. With the tier it is
 * bundled; that size is measured too (and reported in docs/CACHE.md), not budgeted.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build, Metafile } from 'esbuild';
import * as ts from 'typescript';

const BUDGET_BYTES = 25 * 1024;
const root = path.resolve(__dirname, '../..');

const handler = `
import { PromptClient, PromptNotFoundError } from 'cdk-prompt-serving/runtime';
const prompts = new PromptClient();
export const handler = async (event: { promptId: string; variables: Record<string, string> }) => {
  try {
    const prompt = await prompts.getPrompt(event.promptId);
    return prompt.templateType === 'TEXT' ? prompt.render(event.variables) : prompt.render(event.variables).messages;
  } catch (e) {
    if (e instanceof PromptNotFoundError) return { statusCode: 404 };
    throw e;
  }
};
`;

let work: string;
let output: { bytes: number; text: string; inputs: string[] };
let withCache: { bytes: number; inputs: string[] };

/** Compiles the runtime's sources as `lib/` is compiled, into `<dir>/node_modules/cdk-prompt-serving`. */
function installCompiledPackage(dir: string): void {
  const pkgDir = path.join(dir, 'node_modules', 'cdk-prompt-serving');
  const config = ts.getParsedCommandLineOfConfigFile(path.join(root, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); },
  })!;
  const sources = [
    'src/ddb-codec.ts',
    ...fs.readdirSync(path.join(root, 'src/schema')).map((f) => `src/schema/${f}`),
    ...fs.readdirSync(path.join(root, 'src/runtime')).map((f) => `src/runtime/${f}`),
  ];
  for (const source of sources) {
    const fileName = path.join(root, source);
    const { outputText } = ts.transpileModule(fs.readFileSync(fileName, 'utf8'), { compilerOptions: config.options, fileName });
    const out = path.join(pkgDir, 'lib', path.relative(path.join(root, 'src'), fileName).replace(/\.ts$/, '.js'));
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, outputText);
  }
  const { name, exports, main } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  fs.writeFileSync(path.join(pkgDir, 'package.json'), JSON.stringify({ name, main, exports }));
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'runtime-bundle-'));
  installCompiledPackage(work);
  const bundle = (external: string[]) => build({
    absWorkingDir: work,
    stdin: { contents: handler, resolveDir: work, sourcefile: 'handler.ts', loader: 'ts' },
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
  const result = await bundle(['@aws-sdk/*', 'redis']);
  const file = result.outputFiles[0];
  if (process.env.BUNDLE_BREAKDOWN) {
    const outputs = Object.values((result.metafile as Metafile).outputs)[0].inputs;
    process.stdout.write(Object.entries(outputs).map(([k, v]) => `${v.bytesInOutput}\t${k}`).sort((a, b) => parseInt(b) - parseInt(a)).join('\n') + '\n');
  }
  output = { bytes: file.contents.byteLength, text: file.text, inputs: Object.keys((result.metafile as Metafile).inputs) };
  const full = await bundle(['@aws-sdk/*']);
  withCache = { bytes: full.outputFiles[0].contents.byteLength, inputs: Object.keys((full.metafile as Metafile).inputs) };
  process.stdout.write(`runtime bundle: ${(output.bytes / 1024).toFixed(1)} KB without the cache tier, ${(withCache.bytes / 1024).toFixed(1)} KB with node-redis bundled\n`);
});

afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

test(`the minified bundle is at most ${BUDGET_BYTES / 1024} KB`, () => {
  expect(output.inputs).toContain('node_modules/cdk-prompt-serving/lib/runtime/client.js');
  expect(output.bytes).toBeLessThanOrEqual(BUDGET_BYTES);
});

test('nothing from aws-cdk-lib or constructs is bundled', () => {
  expect(output.inputs.filter((input) => /(^|\/)(aws-cdk-lib|constructs)\//.test(input))).toEqual([]);
  expect(output.inputs.filter((input) => !input.startsWith('node_modules/cdk-prompt-serving/lib/') && input !== 'handler.ts')).toEqual([]);
  expect(withCache.inputs.filter((input) => /(^|\/)(aws-cdk-lib|constructs)\//.test(input))).toEqual([]);
  expect(output.text).not.toMatch(/aws-cdk-lib|require\("constructs"\)/);
});

test('the AWS SDK stays external (the Lambda Node.js runtime provides it)', () => {
  expect(output.text).toContain('require("@aws-sdk/client-dynamodb")');
});

test('node-redis is required only by the Valkey adapter, which the client loads only when the cache is configured', () => {
  expect(output.text.match(/require\("redis"\)/g)).toHaveLength(1);
  expect(withCache.inputs.some((input) => input.includes('node_modules/@redis/client/'))).toBe(true);
  expect(withCache.bytes).toBeGreaterThan(output.bytes);
});
