/**
 * Installs `cdk-prompt-serving` into `<dir>/node_modules` the way the published package holds it: the runtime's
 * sources compiled to CommonJS with the project's tsconfig (as jsii compiles `lib/`), the ES module entry points
 * built by scripts/build-esm.ts, and the real package.json `exports` map.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { buildEsm } from '../../scripts/build-esm';

const root = path.resolve(__dirname, '../..');

/** Sources the CommonJS runtime entry needs (the ES module entries are bundled from `src/` by `buildEsm`). */
function runtimeSources(): string[] {
  return ['schema', 'runtime'].flatMap((sub) => fs.readdirSync(path.join(root, 'src', sub)).map((f) => `src/${sub}/${f}`));
}

/** Returns the package directory. */
export async function installCompiledPackage(dir: string): Promise<string> {
  const pkgDir = path.join(dir, 'node_modules', 'cdk-prompt-serving');
  const config = ts.getParsedCommandLineOfConfigFile(path.join(root, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); },
  })!;
  for (const source of runtimeSources()) {
    const fileName = path.join(root, source);
    const { outputText } = ts.transpileModule(fs.readFileSync(fileName, 'utf8'), { compilerOptions: config.options, fileName });
    const out = path.join(pkgDir, 'lib', path.relative(path.join(root, 'src'), fileName).replace(/\.ts$/, '.js'));
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, outputText);
  }
  await buildEsm(path.join(root, 'src'), path.join(pkgDir, 'lib'));
  const { name, exports, main } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  fs.writeFileSync(path.join(pkgDir, 'package.json'), JSON.stringify({ name, main, exports }));
  return pkgDir;
}
