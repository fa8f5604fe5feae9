/**
 * Builds the construct's reader layers into `assets/layer/` (shipped in the npm tarball like the bundled handlers),
 * which `addReader` attaches to cache readers by runtime family (docs/adr/0003-reader-layer.md):
 *
 * - `assets/layer/nodejs/nodejs/node_modules/redis/`: node-redis for the cache adapter, bundled by esbuild into one
 *   minified CommonJS file: `@redis/client` (not the whole `redis` package) with its command table cut to the commands
 *   the adapter and the connection send (~150 KB instead of ~420 KB; `createClient` ~1 ms instead of ~35 ms), plus
 *   package.json and the licences of what the file holds (THIRD-PARTY-LICENSES.txt); beside it
 *   `cdk-prompt-serving-cache/`, the runtime client's cache adapter and cache tier (src/runtime/cache-layer.ts), which the client loads only
 *   when the cache is configured, so no reader bundle carries it. Lambda puts `/opt/nodejs/node_modules` on `NODE_PATH`;
 *   the runtime client loads `redis` with a `createRequire` require, which honours it in CommonJS and ES module bundles
 *   alike.
 * - `assets/layer/python/python/`: redis-py (pinned, from PyPI with pip) and the Python runtime client
 *   (`cdk_prompt_serving_runtime`, from python/). Lambda puts `/opt/python` on `sys.path`.
 *
 *   npx tsx scripts/build-layer.ts            # both layers
 *   npx tsx scripts/build-layer.ts nodejs     # one of them
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { build, buildSync } from 'esbuild';
import { ADAPTER_MODULE } from '../src/runtime/l2-env';

const root = path.resolve(__dirname, '..');
/**
 * redis-py for the Python layer: pure Python, Python 3.8+ (every Python runtime Lambda offers), and the one
 * dependency it has below Python 3.11.3 (`async-timeout`; the as-deployed test caught its absence on 3.11.2).
 */
export const REDIS_PY_REQUIREMENTS = ['redis==5.2.1', 'async-timeout==4.0.3'];
const PYTHON = process.env.LAYER_PYTHON ?? '/usr/bin/python3';

/**
 * The commands the cache adapter sends (src/runtime/valkey-redis.ts, its `Conn`: `get`, `set`, `del`, `incr`, `ping`, `evalSha`,
 * `eval`). test/runtime/layer-redis.test.ts checks that clients made from the layer's file have each of them.
 */
export const ADAPTER_REDIS_COMMANDS = ['GET', 'SET', 'DEL', 'INCR', 'PING', 'EVAL', 'EVALSHA'] as const;
/** The commands node-redis's own connection code takes from its command table: the handshake and cluster discovery. */
export const CONNECTION_REDIS_COMMANDS = ['AUTH', 'CLIENT_SETNAME', 'READONLY', 'CLUSTER_SLOTS'] as const;
/**
 * Command-named methods the included node-redis files call that are not Redis commands (a `Map`'s `keys`, the command
 * queue's `flushAll`, the `digest` helper, a diagnostics channel's `publish`), or belong to APIs the adapter never calls
 * (`scanIterator` and its kin). The build fails on any other command-named call to a command it drops, so a node-redis
 * upgrade cannot break the layer silently.
 */
const NOT_SENT_BY_THE_ADAPTER = new Set(['keys', 'flushAll', 'digest', 'publish', 'scan', 'sScan', 'hScan', 'hScanNoValues', 'zScan']);

/** The layer's node-redis: a client (`createClient`), a cluster client (`createCluster`) and the error classes. */
const NODE_REDIS_EXPORTS = ['client/index.js', 'cluster/index.js', 'errors.js'];

/**
 * node-redis's command table: every entry (`GET: GET_1.default`, `get: GET_1.default`, …) and the names under which the
 * layer keeps one (both names of each command in {@link ADAPTER_REDIS_COMMANDS} and {@link CONNECTION_REDIS_COMMANDS}).
 */
function commandTable(file: string): { entries: { name: string; variable: string }[]; kept: Set<string> } {
  const src = fs.readFileSync(file, 'utf8');
  const table = /^exports\.default = \{\n([\s\S]*?)\n\};$/m.exec(src)?.[1];
  if (table === undefined) throw new Error(`${file}: no \`exports.default = { … }\` command table (node-redis changed its layout; update build-layer.ts)`);
  const entries = [...table.matchAll(/^ {4}'?([\w-]+)'?: (\w+)\.default,?$/gm)].map((m) => ({ name: m[1], variable: m[2] }));
  const wanted = new Set<string>([...ADAPTER_REDIS_COMMANDS, ...CONNECTION_REDIS_COMMANDS]);
  for (const name of wanted) {
    if (!entries.some((e) => e.name === name)) throw new Error(`${file}: node-redis has no command ${name} (update build-layer.ts)`);
  }
  const variables = new Set(entries.filter((e) => wanted.has(e.name)).map((e) => e.variable));
  return { entries, kept: new Set(entries.filter((e) => variables.has(e.variable)).map((e) => e.name)) };
}

/**
 * node-redis's command table (`@redis/client/dist/lib/commands/index.js`) cut to {@link ADAPTER_REDIS_COMMANDS} and
 * {@link CONNECTION_REDIS_COMMANDS}, under both of their names (`EVALSHA`, `evalSha`), keeping the module's other
 * exports. `createClient` and `createCluster` copy every command of the table (744 names) onto a fresh class and again
 * onto its `MULTI` class: with the full table ~35 ms and ~60 ms of a cache reader's cold start, ~1 ms and ~2 ms with this
 * one (bench/reader-cost.bench.ts).
 */
function trimmedCommandTable(file: string): string {
  const src = fs.readFileSync(file, 'utf8');
  const modules = new Map<string, string>();
  for (const m of src.matchAll(/^const (\w+) = __import(?:Default|Star)\(require\("\.\/([\w-]+)"\)\);$/gm)) modules.set(m[1], m[2]);
  const { entries, kept } = commandTable(file);
  const out = ['"use strict";', 'Object.defineProperty(exports, "__esModule", { value: true });'];
  for (const variable of new Set(entries.filter((e) => kept.has(e.name)).map((e) => e.variable))) {
    out.push(`const ${variable} = require(${JSON.stringify(`./${modules.get(variable)}`)});`);
  }
  out.push('exports.default = {');
  for (const e of entries) if (kept.has(e.name)) out.push(`  ${JSON.stringify(e.name)}: ${e.variable}.default,`);
  out.push('};');
  // The cluster's table is the full one minus the HOTKEYS commands (which need a sticky connection): none of ours.
  out.push('exports.NON_STICKY_COMMANDS = exports.default;');
  // The option enums the package exports beside the table (small modules of their own).
  for (const m of src.matchAll(/^Object\.defineProperty\(exports, "(\w+)", \{ enumerable: true, get: function \(\) \{ return (\w+)\.\1; \} \}\);$/gm)) {
    const from = modules.get(m[2]);
    if (from === undefined) throw new Error(`${file}: ${m[1]} comes from an unknown module (update build-layer.ts)`);
    out.push(`exports.${m[1]} = require(${JSON.stringify(`./${from}`)}).${m[1]};`);
  }
  return out.join('\n') + '\n';
}

/**
 * Fails the build if a node-redis file in the bundle calls a command the trimmed table drops (`client.clusterSlots()`
 * is one node-redis makes itself), or takes one from the table by name (`commands_1.default.AUTH`).
 */
export function checkCommandsCalled(files: readonly string[], tableFile: string): void {
  const { entries, kept: keptNames } = commandTable(tableFile);
  const all = new Set(entries.map((e) => e.name));
  const problems: string[] = [];
  for (const file of files) {
    const code = fs.readFileSync(file, 'utf8');
    for (const m of code.matchAll(/commands_1\.default\.(\w+)/g)) {
      if (!keptNames.has(m[1])) problems.push(`${file} takes ${m[1]} from the command table`);
    }
    for (const m of code.matchAll(/\.(\w+)\(/g)) {
      if (all.has(m[1]) && !keptNames.has(m[1]) && !NOT_SENT_BY_THE_ADAPTER.has(m[1])) problems.push(`${file} calls .${m[1]}()`);
    }
  }
  if (problems.length > 0) {
    throw new Error('the layer\'s node-redis drops commands its own code uses; add them to CONNECTION_REDIS_COMMANDS '
      + `(scripts/build-layer.ts): ${[...new Set(problems)].join('; ')}`);
  }
}

/** Name, version, licence and licence file of the package that holds `file` (a file esbuild bundled). */
function packageOf(file: string): { name: string; version: string; license: string; dir: string; source?: string } {
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (!fs.existsSync(manifest)) continue;
    const pkg = JSON.parse(fs.readFileSync(manifest, 'utf8')) as {
      name?: string; version?: string; license?: string; homepage?: string; repository?: string | { url?: string };
    };
    if (pkg.name === undefined || pkg.version === undefined) continue; // a nested dist/package.json ({ "type": … })
    const source = pkg.homepage ?? (typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url);
    return { name: pkg.name, version: pkg.version, license: pkg.license ?? 'UNKNOWN', dir, source };
  }
  throw new Error(`no package.json above ${file}`);
}

export async function buildNodeLayer(outDir = path.join(root, 'assets/layer/nodejs')): Promise<string> {
  const pkgDir = path.join(outDir, 'nodejs', 'node_modules', 'redis');
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(pkgDir, { recursive: true });
  // node-redis's client alone (@redis/client): the full `redis` package adds the RedisJSON, search, time series and
  // bloom modules, which `createClient` would attach to every client, and the adapter sends none of their commands.
  const client = path.dirname(require.resolve('@redis/client/package.json', { paths: [root] }));
  const lib = path.join(client, 'dist', 'lib');
  const tableFile = path.join(lib, 'commands', 'index.js');
  const [clientFile, clusterFile, errorsFile] = NODE_REDIS_EXPORTS.map((f) => path.join(lib, f));
  const result = await build({
    absWorkingDir: root,
    stdin: {
      contents: [
        `const client = require(${JSON.stringify(clientFile)});`,
        `const cluster = require(${JSON.stringify(clusterFile)});`,
        `module.exports = { ...require(${JSON.stringify(errorsFile)}), createClient: client.default.create, createCluster: cluster.default.create };`,
      ].join('\n'),
      resolveDir: root,
      sourcefile: 'layer-redis.js',
      loader: 'js',
    },
    outfile: path.join(pkgDir, 'index.js'),
    bundle: true,
    minify: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    // Loaded by node-redis only when a user calls its `OpenTelemetry.init()` (the adapter never does): not bundled,
    // whether or not the building machine happens to have it installed.
    external: ['@opentelemetry/api'],
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
    plugins: [{
      name: 'trimmed-command-table',
      setup(b) {
        b.onLoad({ filter: /[\\/]@redis[\\/]client[\\/]dist[\\/]lib[\\/]commands[\\/]index\.js$/ }, (args) => ({
          contents: trimmedCommandTable(args.path), loader: 'js', resolveDir: path.dirname(args.path),
        }));
      },
    }],
  });
  const inputs = Object.keys(Object.values(result.metafile.outputs)[0].inputs).filter((f) => f !== 'layer-redis.js').map((f) => path.resolve(root, f));
  checkCommandsCalled(inputs.filter((f) => f.startsWith(lib) && !f.startsWith(path.join(lib, 'commands') + path.sep)), tableFile);
  // What the file holds, with each package's version and licence (and its licence text where the package ships one).
  const bundled = new Map<string, ReturnType<typeof packageOf>>();
  for (const file of inputs) {
    const pkg = packageOf(file);
    bundled.set(pkg.name, pkg);
  }
  const packages = [...bundled.values()].sort((a, b) => a.name.localeCompare(b.name));
  const clientVersion = bundled.get('@redis/client')?.version;
  if (clientVersion === undefined) throw new Error('@redis/client is not in the layer\'s node-redis bundle');
  const notices = packages.map((p) => {
    const licenseFile = ['LICENSE', 'LICENSE.md', 'LICENSE.txt'].map((f) => path.join(p.dir, f)).find((f) => fs.existsSync(f));
    return `${p.name} ${p.version} (${p.license})\n\n${licenseFile ? fs.readFileSync(licenseFile, 'utf8').trim()
      : `The package ships no licence file; its package.json declares ${p.license}${p.source ? ` (source: ${p.source})` : ''}.`}\n`;
  });
  fs.writeFileSync(path.join(pkgDir, 'THIRD-PARTY-LICENSES.txt'), notices.join('\n' + '-'.repeat(72) + '\n\n'));
  fs.writeFileSync(path.join(pkgDir, 'package.json'), JSON.stringify({
    name: 'redis',
    version: clientVersion,
    main: 'index.js',
    description: `node-redis for the cdk-prompt-serving cache adapter, one file: @redis/client ${clientVersion}'s createClient, `
      + `createCluster and error classes, with the commands ${[...ADAPTER_REDIS_COMMANDS, ...CONNECTION_REDIS_COMMANDS].join(', ')} `
      + 'only. Not the full redis package: a function that uses node-redis itself ships its own, which wins over this layer.',
    license: [...new Set(packages.map((p) => p.license))].sort().join(' AND '),
    bundled: packages.map(({ name, version, license }) => ({ name, version, license })),
  }, undefined, 2) + '\n');
  // The runtime client's cache adapter and cache tier (src/runtime/cache-layer.ts: valkey.ts, cache-tier.ts), loaded by
  // the client only when the cache is configured, so that no reader bundle carries them (the client finds them here by
  // ADAPTER_MODULE, src/runtime/l2-env.ts, and uses them only when their TIER_PROTOCOL is its own).
  const adapterDir = path.join(outDir, 'nodejs', 'node_modules', ADAPTER_MODULE);
  fs.mkdirSync(adapterDir, { recursive: true });
  buildSync({
    absWorkingDir: root,
    entryPoints: [path.join(root, 'src', 'runtime', 'cache-layer.ts')],
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
  void (async () => {
    if (which === undefined || which === 'nodejs') console.log(`node layer: ${await buildNodeLayer()}`);
    if (which === undefined || which === 'python') console.log(`python layer: ${buildPythonLayer()}`);
  })().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
