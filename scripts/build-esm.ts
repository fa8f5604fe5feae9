/**
 * The ES module build of `cdk-prompt-serving/runtime` and `cdk-prompt-serving/admin` (package.json `exports`,
 * condition `import`). jsii compiles `lib/` to CommonJS; a CommonJS module bundled into an ESM Lambda bundle
 * keeps `require("@aws-sdk/…")`, which fails at cold start ("Dynamic require … is not supported"). So each
 * sub-path also ships as one ES module (`lib/<entry>/index.mjs`) whose imports of the AWS SDK stay `import`s,
 * with types (`index.d.mts`) that re-export the CommonJS declarations.
 *
 * Run by the `compile:esm` task after jsii (`tsx scripts/build-esm.ts [outDir]`); the bundling tests call
 * `buildEsm` to build the same files into a throw-away package.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { build } from 'esbuild';

/** The sub-paths that ship as both CommonJS and ESM. */
export const DUAL_ENTRY_POINTS = ['runtime', 'admin'] as const;

/** Declarations of the ESM entry: the same types as the CommonJS entry next to it. */
const ESM_DECLARATIONS = "export * from './index.js';\n";

/** Builds `<outDir>/<entry>/index.mjs` and `index.d.mts` for every dual entry point from `<srcDir>`. */
export async function buildEsm(srcDir: string, outDir: string): Promise<void> {
  await build({
    entryPoints: DUAL_ENTRY_POINTS.map((entry) => path.join(srcDir, entry, 'index.ts')),
    outbase: srcDir,
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Provided by the Lambda Node.js runtime and an optional dependency of this package: never copied in. (node-redis
    // is loaded at run time by a module name bundlers do not follow; see src/runtime/valkey-redis.ts.)
    external: ['@aws-sdk/*', 'redis'],
    // Readable output: the user's bundler minifies and tree-shakes it.
    minify: false,
    sourcemap: false,
    logLevel: 'warning',
  });
  for (const entry of DUAL_ENTRY_POINTS) {
    fs.writeFileSync(path.join(outDir, entry, 'index.d.mts'), ESM_DECLARATIONS);
  }
}

if (require.main === module) {
  const root = path.resolve(__dirname, '..');
  buildEsm(path.join(root, 'src'), path.resolve(process.argv[2] ?? path.join(root, 'lib'))).catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
