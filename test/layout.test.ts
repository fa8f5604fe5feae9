/**
 * The layout of src/ (docs/ARCHITECTURE.md): `ls src/*.ts` is the jsii surface, and no import loop, type-only
 * imports included (eslint's `import/no-cycle` skips those), between files or between rooms.
 */
import * as fs from 'fs';
import * as path from 'path';

const SRC = path.join(__dirname, '..', 'src');
/** The files of src/*.ts that are not a public construct, enum-like class or struct. */
const ENTRY_POINT = 'index.ts';

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Relative module specifiers of `import … from`, `export … from`, `import '…'` and `import('…')`. */
function relativeImports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const specifiers: string[] = [];
  const patterns = [/^\s*(?:import|export)\s[^;]*?\sfrom\s*'(\.[^']*)'/gm, /^\s*import\s*'(\.[^']*)'/gm, /\bimport\(\s*'(\.[^']*)'\s*\)/g];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) specifiers.push(match[1]);
  }
  return specifiers;
}

function resolve(from: string, specifier: string): string {
  const base = path.resolve(path.dirname(from), specifier);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) {
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`${path.relative(SRC, from)}: cannot resolve '${specifier}'`);
}

/** The room of a file: its first folder under src/, or `top` for src/*.ts. */
function roomOf(file: string): string {
  const parts = path.relative(SRC, file).split(path.sep);
  return parts.length === 1 ? 'top' : parts[0];
}

/** Every cycle's first closing path found by a depth-first walk (empty when the graph has none). */
function findCycles(graph: Map<string, Set<string>>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

const files = sourceFiles(SRC);
const fileGraph = new Map(files.map((file) => [file, new Set(relativeImports(file).map((s) => resolve(file, s)))]));

test('src/*.ts is exactly the jsii surface: the entry point and the files it exports', () => {
  // GIVEN
  const entry = fs.readFileSync(path.join(SRC, ENTRY_POINT), 'utf8');
  const exported = [...entry.matchAll(/^export \* from '\.\/([^']+)';$/gm)].map((m) => `${m[1]}.ts`);
  const otherLines = entry.split('\n').filter((line) => line.trim() !== '' && !/^export \* from '\.\/[^/']+';$/.test(line));

  // THEN
  expect(otherLines).toEqual([]);
  const topLevel = fs.readdirSync(SRC).filter((name) => name.endsWith('.ts') && name !== ENTRY_POINT);
  expect(topLevel.sort()).toEqual(exported.sort());
});

test('no import loop between files of src/, type-only imports included', () => {
  const cycles = findCycles(fileGraph).map((cycle) => cycle.map((file) => path.relative(SRC, file)).join(' -> '));
  expect(cycles).toEqual([]);
});

test('no import loop between the rooms of src/ (the public files at the top aside)', () => {
  // GIVEN: room → rooms it imports from; the top level (public types) is imported by the rooms it uses
  const rooms = new Map<string, Set<string>>();
  for (const [file, imports] of fileGraph) {
    const from = roomOf(file);
    if (from === 'top') continue;
    const targets = rooms.get(from) ?? new Set<string>();
    for (const imported of imports) {
      const to = roomOf(imported);
      if (to !== from && to !== 'top') targets.add(to);
    }
    rooms.set(from, targets);
  }

  // THEN
  expect(findCycles(rooms)).toEqual([]);
  expect(rooms.get('schema')).toEqual(new Set());
  expect(rooms.get('runtime')).toEqual(new Set(['schema']));
});
