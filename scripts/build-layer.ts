/**
 * Builds the construct's reader layers into `assets/layer/` (shipped in the npm tarball like the bundled handlers),
 * which `addReader` attaches to cache readers by runtime family (docs/adr/0003-reader-layer.md):
 *
 * - `assets/layer/nodejs/nodejs/node_modules/redis/`: node-redis bundled by esbuild into one minified CommonJS file
 *   (+ package.json); beside it `cdk-prompt-serving-cache/`, the runtime client's cache adapter (src/runtime/valkey.ts),
 *   which the client loads only when the cache is configured, so no reader bundle carries it. Lambda puts `/opt/nodejs/node_modules` on `NODE_PATH`; the runtime client loads `redis` with a
 *   `createRequire` require, which honours it in CommonJS and ES module bundles alike.
 * - `assets/layer/python/python/`: redis-py (pinned, from PyPI with pip) and the Python runtime client
 *   (`cdk_prompt_serving_runtime`, from python/). Lambda puts `/opt/python` on `sys.path`.
 *
 *   npx tsx scripts/build-layer.ts            # both layers
 *   npx tsx scripts/build-layer.ts nodejs     # one of them
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import { ADAPTER_MODULE } from '../src/runtime/l2-env';

const root = path.resolve(__dirname, '..');
/**
 * redis-py for the Python layer: pure Python, Python 3.8+ (every Python runtime Lambda offers), and the one
 * dependency it has below Python 3.11.3 (`async-timeout`; the as-deployed test caught its absence on 3.11.2).
 */
export const REDIS_PY_REQUIREMENTS = ['redis==5.2.1', 'async-timeout==4.0.3'];
const PYTHON = process.env.LAYER_PYTHON ?? '/usr/bin/python3';

export function buildNodeLayer(outDir = path.join(root, 'assets/layer/nodejs')): string {
  const pkgDir = path.join(outDir, 'nodejs', 'node_modules', 'redis');
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(pkgDir, { recursive: true });
  const version = JSON.parse(fs.readFileSync(require.resolve('redis/package.json', { paths: [root] }), 'utf8')).version as string;
  buildSync({
    absWorkingDir: root,
    entryPoints: [require.resolve('redis', { paths: [root] })],
    outfile: path.join(pkgDir, 'index.js'),
    bundle: true,
    minify: true,
    keepNames: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    legalComments: 'none',
    logLevel: 'warning',
  });
  fs.writeFileSync(path.join(pkgDir, 'package.json'), JSON.stringify({
    name: 'redis', version, main: 'index.js', description: `node-redis ${version}, bundled by cdk-prompt-serving (one file)`, license: 'MIT',
  }, undefined, 2) + '\n');
  // The runtime client's cache adapter (src/runtime/valkey.ts), loaded by the client only when the cache is
  // configured, so that no reader bundle carries it (the client finds it here by ADAPTER_MODULE, src/runtime/l2-env.ts).
  const adapterDir = path.join(outDir, 'nodejs', 'node_modules', ADAPTER_MODULE);
  fs.mkdirSync(adapterDir, { recursive: true });
  buildSync({
    absWorkingDir: root,
    entryPoints: [path.join(root, 'src', 'runtime', 'valkey.ts')],
    outfile: path.join(adapterDir, 'index.js'),
    bundle: true,
    minify: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    external: ['@aws-sdk/*', 'redis'],
    legalComments: 'none',
    logLevel: 'warning',
  });
  const own = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string; license?: string };
  fs.writeFileSync(path.join(adapterDir, 'package.json'), JSON.stringify({
    name: ADAPTER_MODULE, version: own.version, main: 'index.js', description: 'The cdk-prompt-serving runtime client\'s cache adapter (one file)', license: own.license ?? 'Apache-2.0',
  }, undefined, 2) + '\n');
  return outDir;
}

export function buildPythonLayer(outDir = path.join(root, 'assets/layer/python')): string {
  const site = path.join(outDir, 'python');
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(site, { recursive: true });
  execFileSync(PYTHON, [
    '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-compile', '--no-deps',
    '--only-binary=:all:', '--target', site, ...REDIS_PY_REQUIREMENTS,
  ], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, PIP_ROOT_USER_ACTION: 'ignore' } });
  const client = path.join(root, 'python', 'cdk_prompt_serving_runtime');
  fs.cpSync(client, path.join(site, 'cdk_prompt_serving_runtime'), {
    recursive: true,
    filter: (src) => !src.includes('__pycache__') && !src.endsWith('.pyc'),
  });
  // pip's records name this machine's paths; nothing at run time reads them.
  for (const entry of fs.readdirSync(site)) {
    if (entry.endsWith('.dist-info')) fs.rmSync(path.join(site, entry, 'RECORD'), { force: true });
  }
  return outDir;
}

if (require.main === module) {
  const which = process.argv[2];
  if (which === undefined || which === 'nodejs') console.log(`node layer: ${buildNodeLayer()}`);
  if (which === undefined || which === 'python') console.log(`python layer: ${buildPythonLayer()}`);
}
