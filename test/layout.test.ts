/**
 * The layout of src/ (docs/ARCHITECTURE.md): `ls src/*.ts` is the jsii surface; no import loop, type-only
 * imports included (eslint's `import/no-cycle` skips those), between files or between rooms; every room import is
 * an arrow drawn in ARCHITECTURE's room diagram and every drawn arrow is used; only `src/write/` writes the table.
 */
import * as fs from 'fs';
import * as path from 'path';

const SRC = path.join(__dirname, '..', 'src');
const ARCHITECTURE = path.join(__dirname, '..', 'docs', 'ARCHITECTURE.md');
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

/** Room → rooms its files import from (its own room aside), the top level (`top`) included. */
function roomArrows(): Set<string> {
  const arrows = new Set<string>();
  for (const [file, imports] of fileGraph) {
    for (const imported of imports) {
      if (roomOf(imported) !== roomOf(file)) arrows.add(`${roomOf(file)} --> ${roomOf(imported)}`);
    }
  }
  return arrows;
}

/**
 * The arrows of the mermaid `flowchart` under ARCHITECTURE's "Which room may import which": `a --> b`, chains
 * (`a --> b --> c`) and fans (`a --> b & c`); node labels (`top["…"]`) and comments (`%%`) are ignored.
 */
function drawnArrows(markdown: string): Set<string> {
  const section = markdown.split(/^## /m).find((part) => part.startsWith('Which room may import which'));
  const block = section?.match(/```mermaid\n(flowchart[^\n]*\n[\s\S]*?)```/)?.[1];
  if (!block) throw new Error('docs/ARCHITECTURE.md: no mermaid flowchart under "## Which room may import which"');
  const arrows = new Set<string>();
  for (const raw of block.split('\n').slice(1)) {
    const line = raw.replace(/%%.*$/, '').replace(/\["[^"]*"\]/g, '').trim();
    if (!line.includes('-->')) continue;
    const steps = line.split('-->').map((side) => side.split('&').map((node) => node.trim()));
    for (let i = 0; i + 1 < steps.length; i++) {
      for (const from of steps[i]) for (const to of steps[i + 1]) arrows.add(`${from} --> ${to}`);
    }
  }
  return arrows;
}

test('every room import is an arrow drawn in docs/ARCHITECTURE.md, and every drawn arrow is used', () => {
  // GIVEN
  const drawn = drawnArrows(fs.readFileSync(ARCHITECTURE, 'utf8'));
  const used = roomArrows();

  // THEN: an import the plan does not allow fails here; so does an arrow nothing uses (a stale drawing)
  expect({ undrawn: [...used].filter((a) => !drawn.has(a)).sort() }).toEqual({ undrawn: [] });
  expect({ unused: [...drawn].filter((a) => !used.has(a)).sort() }).toEqual({ unused: [] });
});

/** The DynamoDB calls that write an item: only the write kit sends them to the serving table. */
const WRITE_COMMANDS = ['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand',
  'PutCommand', 'UpdateCommand', 'DeleteCommand', 'TransactWriteCommand', 'BatchWriteCommand'];

test('only src/write/ sends a write to the serving table (no other file imports a DynamoDB write command)', () => {
  // GIVEN: value imports of the DynamoDB clients, file by file (a type-only import sends nothing)
  const writers = files.filter((file) => {
    const text = fs.readFileSync(file, 'utf8');
    return [...text.matchAll(/^import\s+(type\s+)?\{([^}]*)\}\s*from\s*'@aws-sdk\/(?:client|lib)-dynamodb'/gm)]
      .filter((m) => m[1] === undefined)
      .some((m) => m[2].split(',').some((name) => !/^\s*type\s/.test(name) && WRITE_COMMANDS.includes(name.trim())));
  }).map((file) => path.relative(SRC, file));

  // THEN
  expect(writers.length).toBeGreaterThan(0);
  expect(writers.filter((file) => roomOf(path.join(SRC, file)) !== 'write')).toEqual([]);
});

test('no handler reaches a client package (admin/, cli/) through its imports', () => {
  // GIVEN: every file a `*.lambda.ts` handler imports, directly or not
  const reached = (start: string): Set<string> => {
    const seen = new Set<string>();
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const next of fileGraph.get(file) ?? []) walk(next);
    };
    walk(start);
    return seen;
  };
  const handlers = files.filter((file) => file.endsWith('.lambda.ts'));

  // THEN
  expect(handlers.length).toBeGreaterThan(0);
  const offending = handlers.flatMap((handler) => [...reached(handler)]
    .filter((file) => ['admin', 'cli'].includes(roomOf(file)))
    .map((file) => `${path.relative(SRC, handler)} -> ${path.relative(SRC, file)}`));
  expect(offending).toEqual([]);
});
