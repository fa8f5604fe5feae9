/**
 * The reader surface, Node side: test/conformance/fixtures/surface.json lists the public methods, their parameters
 * and options, the stats fields, the error classes and the exported names of the runtime client, decided once for
 * both languages; python/tests/test_conformance.py checks the Python client against the same file. Declarations
 * are read with the TypeScript compiler (types and `private` leave no trace at run time); the module and a client
 * instance are checked at run time too.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import * as ts from 'typescript';
import * as runtime from '../../src/runtime';
import { fallbackPrompt, PromptFallback } from '../../src/runtime/fallback';

interface Method { readonly name: string; readonly params: string[]; readonly nodeOptionsType?: string; readonly options?: string[] }
interface FallbackCase {
  readonly name: string;
  readonly promptId: string;
  readonly fallback: PromptFallback;
  readonly expect: Record<string, unknown>;
}
interface Export { readonly node: string; readonly python?: string }
const SURFACE = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'surface.json'), 'utf8')) as {
  client: string;
  clientOptions: { nodeOptionsType: string; options: string[]; nodeOnly: Record<string, string> };
  methods: Method[];
  fallback: { type: string; fields: string[]; cases: FallbackCase[] };
  stats: { type: string; fields: string[] };
  errors: { base: string; subclasses: string[] };
  invalidIdReason: string;
  exports: { both: Export[]; nodeOnly: Record<string, string> };
};

/**
 * What the Node client offers as functions of its module where the surface (and the Python and Java clients) has a
 * method, with the reason: a method is bundled by every reader that keeps the class, a function only by the readers
 * that call it (docs/adr/0007-reader-paid-for-by-use.md). A listed client method here is a function that takes the
 * client first, then the listed parameters and options.
 */
const NODE_FUNCTIONS: Record<string, string> = {
  preload: 'a method of the client in Python and Java; a function of the Node module (the client first) so a reader that never preloads bundles none of it',
  render: 'a method of the prompt in Python and Java; a function of the Node module (the prompt first) so a reader that never renders bundles none of it',
};

/** Exports of the Node module that stand for no name of the surface, with the reason. */
const NODE_ONLY_EXPORTS: Record<string, string> = {
  cacheTier: 'the cache tier over a store of yours, for the l2 option: a Node reader that passes no l2 bundles none of the tier; Python and Java take the store as it is (nothing is bundled)',
  PromptCacheTier: 'as cacheTier',
};

const RUNTIME = path.join(__dirname, '..', '..', 'src', 'runtime');
const sources = new Map<string, ts.SourceFile>();
function source(file: string): ts.SourceFile {
  let sf = sources.get(file);
  if (sf === undefined) {
    sf = ts.createSourceFile(file, fs.readFileSync(path.join(RUNTIME, file), 'utf8'), ts.ScriptTarget.Latest, true);
    sources.set(file, sf);
  }
  return sf;
}

/** The declaration named `name` among the top-level statements of every runtime file. */
function declaration(name: string): ts.Statement {
  for (const file of fs.readdirSync(RUNTIME).filter((f) => f.endsWith('.ts'))) {
    const found = source(file).statements.find((s) =>
      (ts.isInterfaceDeclaration(s) || ts.isClassDeclaration(s) || ts.isTypeAliasDeclaration(s) || ts.isFunctionDeclaration(s))
      && s.name?.text === name);
    if (found !== undefined) return found;
  }
  throw new Error(`no declaration of ${name} in src/runtime`);
}

function interfaceMembers(name: string): string[] {
  const decl = declaration(name);
  if (!ts.isInterfaceDeclaration(decl)) throw new Error(`${name} is not an interface`);
  return decl.members.map((m) => (m.name as ts.Identifier).text);
}

const isPublic = (m: ts.ClassElement): boolean =>
  m.name !== undefined && !ts.isPrivateIdentifier(m.name)
  && !(ts.canHaveModifiers(m) ? ts.getModifiers(m) ?? [] : [])
    .some((mod) => mod.kind === ts.SyntaxKind.PrivateKeyword || mod.kind === ts.SyntaxKind.ProtectedKeyword);

const clientClass = declaration(SURFACE.client) as ts.ClassDeclaration;
const paramNames = (fn: ts.SignatureDeclarationBase): string[] => fn.parameters.map((p) => (p.name as ts.Identifier).text);

test('the client has exactly the public methods the surface lists (epoch polling is private)', () => {
  const publicMembers = clientClass.members.filter((m) => !ts.isConstructorDeclaration(m) && isPublic(m));
  const methods = SURFACE.methods.filter((m) => NODE_FUNCTIONS[m.name] === undefined);
  expect(publicMembers.map((m) => (m.name as ts.Identifier).text).sort()).toEqual(methods.map((m) => m.name).sort());
  for (const m of methods) {
    expect(typeof (runtime.PromptClient.prototype as unknown as Record<string, unknown>)[m.name]).toBe('function');
  }
  for (const m of SURFACE.methods.filter((x) => NODE_FUNCTIONS[x.name] !== undefined)) {
    expect(typeof (runtime as unknown as Record<string, unknown>)[m.name]).toBe('function');
    expect((runtime.PromptClient.prototype as unknown as Record<string, unknown>)[m.name]).toBeUndefined();
  }
});

test.each(SURFACE.methods.map((m) => [m.name, m] as const))('%s takes the listed parameters and options', (_name, method) => {
  const asFunction = NODE_FUNCTIONS[method.name] !== undefined;
  const decl = asFunction ? declaration(method.name) as ts.FunctionDeclaration
    : clientClass.members.find((m) => ts.isMethodDeclaration(m) && (m.name as ts.Identifier).text === method.name) as ts.MethodDeclaration;
  const expected = method.nodeOptionsType !== undefined ? [...method.params, 'options'] : method.params;
  // A function of the module takes the client first.
  if (asFunction) expect(decl.parameters[0].type?.getText()).toBe(SURFACE.client);
  expect(paramNames(decl).slice(asFunction ? 1 : 0)).toEqual(expected);
  if (method.nodeOptionsType !== undefined) {
    expect(decl.parameters[method.params.length + (asFunction ? 1 : 0)].type?.getText()).toBe(method.nodeOptionsType);
    expect(interfaceMembers(method.nodeOptionsType)).toEqual(method.options);
  }
});

test('the constructor takes the listed options (and the Node-only ones, each with its reason)', () => {
  const ctor = clientClass.members.find(ts.isConstructorDeclaration)!;
  expect(ctor.parameters.map((p) => p.type?.getText())).toEqual([SURFACE.clientOptions.nodeOptionsType]);
  expect(interfaceMembers(SURFACE.clientOptions.nodeOptionsType).sort())
    .toEqual([...SURFACE.clientOptions.options, ...Object.keys(SURFACE.clientOptions.nodeOnly)].sort());
});

test('the fallback and the stats have the listed fields, and stats() returns exactly them, in order', () => {
  expect(interfaceMembers(SURFACE.fallback.type)).toEqual(SURFACE.fallback.fields);
  expect(interfaceMembers(SURFACE.stats.type)).toEqual(SURFACE.stats.fields);
  const dynamoDBClient = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  try {
    const client = new runtime.PromptClient({ tableName: 'surface', dynamoDBClient });
    expect(Object.keys(client.stats())).toEqual(SURFACE.stats.fields);
  } finally {
    dynamoDBClient.destroy();
  }
});

describe('a fallback is served as the same prompt by both clients', () => {
  test.each(SURFACE.fallback.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(fallbackPrompt(c.promptId, c.fallback)).toMatchObject(c.expect);
  });
});

test('the error classes: one base, the listed subclasses, each naming itself', () => {
  const classes = runtime as unknown as Record<string, new (...args: never[]) => Error>;
  for (const name of SURFACE.errors.subclasses) {
    expect(classes[name].prototype).toBeInstanceOf(classes[SURFACE.errors.base]);
    expect(classes[name].name).toBe(name);
  }
  expect(classes[SURFACE.errors.base].prototype).toBeInstanceOf(Error);
});

test('an id that can never exist is not found, with the reason both clients give', async () => {
  const dynamoDBClient = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  try {
    const client = new runtime.PromptClient({ tableName: 'surface', dynamoDBClient });
    await expect(client.getPrompt('#reserved')).rejects.toThrow(`prompt '#reserved' not found: ${SURFACE.invalidIdReason}`);
  } finally {
    dynamoDBClient.destroy();
  }
});

test('the module exports exactly the listed names (both clients, then the Node-only ones with their reasons)', () => {
  const index = source('index.ts');
  const exported: string[] = [];
  const values: string[] = [];
  for (const s of index.statements) {
    if (!ts.isExportDeclaration(s) || s.exportClause === undefined || !ts.isNamedExports(s.exportClause)) continue;
    for (const e of s.exportClause.elements) {
      exported.push(e.name.text);
      if (!s.isTypeOnly && !e.isTypeOnly) values.push(e.name.text);
    }
  }
  expect(exported.sort()).toEqual([...SURFACE.exports.both.map((e) => e.node), ...Object.keys(SURFACE.exports.nodeOnly),
    ...Object.keys(NODE_FUNCTIONS), ...Object.keys(NODE_ONLY_EXPORTS)].sort());
  expect(Object.keys(runtime).sort()).toEqual(values.sort());
});
