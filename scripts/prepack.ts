/**
 * `npm pack` guard (package.json `prepack`, also run by jsii-pacmak's pack): the tarball must hold the compiled
 * code (jsii's `lib/` and `.jsii`, the ES module entry points) and the bundled sync handler (`assets/`).
 *
 * Always re-bundles the handler (esbuild, under a second); recompiles when the compiled code is missing or
 * older than any source file; then fails, naming the file, if something the package needs is still absent.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(__dirname, '..');

/** What every published tarball must contain (relative to the package root). */
export const REQUIRED_PACKAGE_FILES = [
  '.jsii',
  'lib/index.js',
  'lib/index.d.ts',
  'lib/runtime/index.js',
  'lib/runtime/index.mjs',
  'lib/runtime/index.d.mts',
  'lib/admin/index.js',
  'lib/admin/index.mjs',
  'lib/cli/index.js',
  'assets/sync/sync.lambda/index.js',
  // The invalidation handler (node-redis bundled in) and the readers' cache client layers (docs/adr/0003-reader-layer.md).
  'assets/invalidation/invalidation.lambda/index.js',
  'assets/layer/nodejs/nodejs/node_modules/redis/index.js',
  'assets/layer/python/python/redis/__init__.py',
  'assets/layer/python/python/cdk_prompt_serving_runtime/__init__.py',
  // The release path (`governance`): the release function and the rollout controller.
  'assets/governance/release.lambda/index.js',
  'assets/governance/rollout-controller.lambda/index.js',
];

function newestSourceTime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSourceTime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

function projen(task: string): void {
  const result = spawnSync('npx', ['projen', task], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`prepack: \`npx projen ${task}\` failed (exit ${result.status})`);
}

function main(): void {
  projen('bundle');
  const compiled = path.join(root, '.jsii');
  const esm = path.join(root, 'lib/runtime/index.mjs');
  const stale = [compiled, esm].some((file) => !fs.existsSync(file) || fs.statSync(file).mtimeMs < newestSourceTime(path.join(root, 'src')));
  if (stale) projen('compile'); // jsii, then compile:esm
  const missing = REQUIRED_PACKAGE_FILES.filter((file) => !fs.existsSync(path.join(root, file)));
  if (missing.length > 0) {
    throw new Error(`prepack: the package would lack ${missing.join(', ')}; run \`npx projen build\` and pack again`);
  }
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    console.error((err as Error).message);
    process.exitCode = 1;
  }
}
