/**
 * `npm pack` on a fresh clone: the tracked files only (no lib/, no assets/, no .jsii), with the dependencies
 * installed. The `prepack` guard must build what the tarball needs, so the listing holds the compiled code, the
 * ES module entry points, the bundled sync handler and the bundled `yaml`, and no sources or tests.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { REQUIRED_PACKAGE_FILES } from '../../scripts/prepack';

const root = path.resolve(__dirname, '../..');
let clone: string;
let files: string[];

beforeAll(() => {
  clone = fs.mkdtempSync(path.join(os.tmpdir(), 'fresh-clone-'));
  // The working tree's version of every tracked file, as a clone of this commit would have it.
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const file of tracked) {
    if (!fs.existsSync(path.join(root, file))) continue; // deleted in the working tree
    fs.mkdirSync(path.dirname(path.join(clone, file)), { recursive: true });
    fs.copyFileSync(path.join(root, file), path.join(clone, file));
  }
  for (const built of ['lib', 'assets', '.jsii', 'dist']) expect(fs.existsSync(path.join(clone, built))).toBe(false);
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules')); // what `npm ci` installs
  // Lifecycle scripts print to stdout before npm's JSON: take the JSON array at the end.
  const stdout = execFileSync('npm', ['pack', '--dry-run', '--json'], {
    cwd: clone, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024,
  });
  files = JSON.parse(stdout.slice(stdout.lastIndexOf('\n[\n')))[0].files.map((f: { path: string }) => f.path);
}, 300_000);

afterAll(() => fs.rmSync(clone, { recursive: true, force: true }));

test('the tarball holds the compiled code, the ES module entries and the bundled sync handler', () => {
  expect(files).toEqual(expect.arrayContaining([...REQUIRED_PACKAGE_FILES, 'package.json', 'README.md', 'API.md', 'LICENSE']));
  expect(files).toEqual(expect.arrayContaining(['lib/prompt-serving-table.js', 'lib/cli/commands.js', 'lib/sync/sources/directory-check.js']));
});

test('yaml ships inside the package (the synth-time check and the CLI parse prompt files with it)', () => {
  expect(files).toContain('node_modules/yaml/package.json');
  expect(files.filter((f) => f.startsWith('node_modules/') && !f.startsWith('node_modules/yaml/'))).toEqual([]);
});

test('no sources, tests, scripts or build config ship', () => {
  expect(files.filter((f) => /^(src|test|scripts|bench|docs|\.projen|\.github)\//.test(f) || f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.d.mts'))).toEqual([]);
});
