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
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build, Format } from 'esbuild';
import { installCompiledPackage } from '../test/support/compiled-package';

const READER = `
import { PromptClient } from 'cdk-prompt-serving/runtime';
const prompts = new PromptClient();
export const handler = async (event) => {
  const prompt = await prompts.getPrompt('summarize');
  return { prompt: prompt.id, version: prompt.version, request: prompt.render(event.variables) };
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

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
