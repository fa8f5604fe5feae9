/**
 * Bundle sizes of the README's reader in each output format, from the package as published (CommonJS lib/ and
 * the ES module entries, through the real `exports` map), AWS SDK external:
 *
 *   npx tsx bench/bundle.bench.ts
 *
 * Rows: the `import` condition (the ES module entry, what esbuild picks for an `import` statement) and, as the
 * peer in the same run, the `require` condition (jsii's CommonJS lib/, what every bundle got before the ES
 * module entry existed), each in ESM and CommonJS output, minified (the bundle budget) and not (NodejsFunction's
 * default).
 *
 *   BUNDLE_ALTERNATIVES=1 npx tsx bench/bundle.bench.ts
 *
 * prints instead what three readers (getPrompt only, the README reader, a label with a rollout) bundle from src/ as
 * `NodejsFunction` does when a part of the client is not reachable from them (that part's modules replaced by empty
 * stubs): the bytes each "paid for by use" design can save (docs/adr/0007-reader-paid-for-by-use.md).
 */
const ROOT = path.resolve(__dirname, '..');
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build, Format, Plugin } from 'esbuild';
import { installCompiledPackage } from '../test/support/compiled-package';
import { LAMBDA_BUNDLE_OPTIONS } from '../test/support/lambda-bundle';

const READER = `
import { PromptClient, render } from 'cdk-prompt-serving/runtime';
const prompts = new PromptClient();
export const handler = async (event) => {
  const prompt = await prompts.getPrompt('summarize');
  return { prompt: prompt.id, version: prompt.version, request: render(prompt, event.variables) };
};
`;

async function size(work: string, format: Format, conditions: string[], minify: boolean): Promise<{ bytes: number; dynamicRequire: boolean }> {
  const result = await build({
    absWorkingDir: work,
    stdin: { contents: READER, resolveDir: work, sourcefile: 'reader.mjs', loader: 'js' },
    bundle: true,
    minify,
    platform: 'node',
    target: 'node22',
    format,
    conditions,
    external: ['@aws-sdk/*'],
    write: false,
    logLevel: 'silent',
  });
  const text = result.outputFiles[0].text;
  // In an ES module, a call like `__require("@aws-sdk/…")` (however the minifier renames it) throws at cold start.
  return { bytes: result.outputFiles[0].contents.byteLength, dynamicRequire: format === 'esm' && /\(\s*["']@aws-sdk\//.test(text) };
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bundle-bench-'));
  try {
    await installCompiledPackage(work);
    // With a `require` condition the ESM entry is skipped: remove `import` to see what the CommonJS entry gives.
    const pkgJson = path.join(work, 'node_modules/cdk-prompt-serving/package.json');
    const pkg = JSON.parse(fs.readFileSync(pkgJson, 'utf8'));
    console.log('| entry the bundler took | output | minified | bytes | how the bundle loads the AWS SDK |');
    console.log('| --- | --- | --- | --- | --- |');
    for (const entry of ['import (ES module)', 'require (CommonJS)']) {
      if (entry.startsWith('require')) {
        pkg.exports['./runtime'] = pkg.exports['./runtime'].require;
        fs.writeFileSync(pkgJson, JSON.stringify(pkg));
      }
      for (const format of ['esm', 'cjs'] as Format[]) {
        for (const minify of [true, false]) {
          const r = await size(work, format, [], minify);
          const start = r.dynamicRequire ? '`require()` inside an ES module: throws "Dynamic require … is not supported"'
            : format === 'esm' ? '`import`' : '`require()`';
          console.log(`| ${entry} | ${format} | ${minify ? 'yes' : 'no'} | ${r.bytes} (${(r.bytes / 1024).toFixed(1)} KB) | ${start} |`);
        }
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/* eslint-disable @stylistic/max-len */
const HANDLERS: Record<string, string> = {
  'getPrompt only': `import { PromptClient } from '${ROOT}/src/runtime/index';
const prompts = new PromptClient();
export const handler = async (event) => (await prompts.getPrompt(event.id)).version;`,
  'README reader (render)': `import { preload, PromptClient, render } from '${ROOT}/src/runtime/index';
const prompts = new PromptClient();
void preload(prompts, ['summarize']);
export const handler = async (event) => {
  const prompt = await prompts.getPrompt('summarize');
  const request = render(prompt, event.variables);
  return { prompt: prompt.id, version: prompt.version, request };
};`,
  'labels + rollout': `import { labels, PromptClient, render } from '${ROOT}/src/runtime/index';
const prompts = new PromptClient({ features: [labels] });
export const handler = async (event) => {
  const prompt = await prompts.getPrompt('support-answer', { label: 'production', stickinessKey: event.userId });
  return { version: prompt.version, rollout: prompt.rollout, request: render(prompt, event.variables) };
};`,
};
const STUBS: Record<string, Record<string, string>> = {
  render: { 'runtime/render.ts': 'export const render=()=>"",renderPlan=()=>0,resolveVariables=()=>0,fillText=()=>"",fillJson=()=>0,jsonStrings=()=>[];' },
  labels: {
    'runtime/labels.ts': 'export const labelCacheKey=(l,i)=>"#"+l+"#"+i,labelItemKey=()=>"",invalidLabelReason=()=>undefined,missingLabelReason=()=>"",promptFromLabelItem=()=>undefined;',
    'runtime/rollout.ts': 'export class RolloutState{};export const logRolloutFault=()=>{};',
    'runtime/rollout-step.ts': 'export class RolloutStep{serve(){}prepareCandidate(){}};',
    'schema/labels.ts': 'export const LabelAttr={},parseRollout=()=>undefined;',
  },
  cache: {
    'runtime/cache-setup.ts': 'export const l2FromEnvironment=()=>undefined,watchEpoch=()=>undefined;',
    'runtime/tiers.ts': `import { TableItemReader } from './store'; import { fromItem } from '../schema/ddb-codec';
export class CacheFirstReader extends TableItemReader { constructor(c,t,r,m,s){super(c,t,r,m,s)} get hasL2(){return false} get writeThrough(){return false}
 async read(p,s,d){const raw=await this.getRawItem(p,s,d);return raw===undefined?undefined:{item:fromItem(raw),fetchedAt:Date.now(),source:'table',fromL2:false}}
 async readShared(){return undefined} }`,
  },
};
function stub(files: Record<string, string>): Plugin {
  return {
    name: 'stub',
    setup(b) {
      b.onLoad({ filter: /\/src\/(runtime|schema)\/[a-z0-9-]+\.ts$/ }, (args) => {
        const rel = path.relative(path.join(ROOT, 'src'), args.path);
        return files[rel] === undefined ? undefined : { contents: files[rel], loader: 'ts', resolveDir: path.dirname(args.path) };
      });
    },
  };
}
async function stubbedSize(handler: string, files: Record<string, string>): Promise<number> {
  const r = await build({ ...LAMBDA_BUNDLE_OPTIONS, stdin: { contents: handler, resolveDir: ROOT, loader: 'ts', sourcefile: 'h.ts' }, write: false, plugins: [stub(files)] });
  return r.outputFiles[0].contents.byteLength;
}
/* eslint-enable @stylistic/max-len */

async function alternatives(): Promise<void> {
  const designs: [string, string[]][] = [['nothing (today: one class)', []], ['render', ['render']], ['labels and rollouts', ['labels']],
    ['the cache tier', ['cache']], ['the cache tier, labels', ['cache', 'labels']], ['the cache tier, labels, render', ['cache', 'labels', 'render']]];
  console.log(`| not reachable from the reader | ${Object.keys(HANDLERS).join(' | ')} |`);
  console.log(`| --- |${Object.keys(HANDLERS).map(() => ' ---: |').join('')}`);
  for (const [name, parts] of designs) {
    const files = Object.assign({}, ...parts.map((part) => STUBS[part]));
    const sizes: number[] = [];
    for (const handler of Object.values(HANDLERS)) sizes.push(await stubbedSize(handler, files));
    console.log(`| ${name} | ${sizes.join(' | ')} |`);
  }
}

(process.env.BUNDLE_ALTERNATIVES ? alternatives() : main()).catch((err) => {
  console.error(err);
  process.exit(1);
});
