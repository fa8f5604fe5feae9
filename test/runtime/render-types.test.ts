/**
 * Typed prompts: `cdk-prompt-serving types` output, checked by the real compilers. `tsc` (strict)
 * compiles a reader against the generated `prompts.d.ts` and fails it when a variable is renamed, missing or of the
 * wrong type; `mypy --strict` does the same with the generated `.pyi` (when a venv with mypy exists: see
 * `mypyPython`). The same declarations come from the directory and from a table the real sync filled (DynamoDB Local).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { main } from '../../src/cli/main';
import { runTypes, tablePromptTypes } from '../../src/cli/types';
import { SyncEngine } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const root = path.resolve(__dirname, '../..');
const FILES: Record<string, string> = {
  'greeting.md': '---\nvariables: [name, product, tone]\njson_variables: [product]\n---\nHi {{name}}, about {{product}}',
  'chat.yaml': 'system: You help with {{topic}}.\nmessages:\n  - role: user\n    content: "{{question}}"\n',
  'static.md': 'No variables here.',
  'support/odd-names.md': 'Dear {{user.name}} ({{first-name}}), it\'s "{{__proto__}}"',
};

let work: string;
let promptsDir: string;

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'typed-prompts-'));
  promptsDir = path.join(work, 'prompts');
  for (const [file, text] of Object.entries(FILES)) {
    fs.mkdirSync(path.dirname(path.join(promptsDir, file)), { recursive: true });
    fs.writeFileSync(path.join(promptsDir, file), text);
  }
});

afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

async function types(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(['types', ...argv], { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } });
  return { code, stdout, stderr };
}

describe('TypeScript', () => {
  let dir: string;

  beforeAll(async () => {
    dir = path.join(work, 'ts');
    fs.mkdirSync(dir);
    const run = await types('--directory', promptsDir);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    fs.writeFileSync(path.join(dir, 'prompts.d.ts'), run.stdout);
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2022',
        module: 'preserve',
        moduleResolution: 'bundler',
        skipLibCheck: true,
        paths: { 'cdk-prompt-serving/runtime': [path.join(root, 'src/runtime/index.ts')] },
        typeRoots: [path.join(root, 'node_modules/@types')],
        types: ['node'],
      },
      files: ['prompts.d.ts', 'app.ts'],
    }));
  });

  /** `tsc -p` over prompts.d.ts and `app.ts` holding `body`; the error lines. */
  function tsc(body: string): string[] {
    fs.writeFileSync(path.join(dir, 'app.ts'), 'import { PromptClient, render, type RenderedChat } from \'cdk-prompt-serving/runtime\';\n'
      + `const prompts = new PromptClient({ tableName: 't' });\nexport async function handler(): Promise<unknown> {\n${body}\n}\n`);
    const run = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8', timeout: 120_000 });
    if (run.status === null) throw new Error(`tsc did not finish: ${run.error}`);
    return run.stdout.split('\n').filter((l) => l.includes('error TS'));
  }

  test('a reader that passes exactly each prompt\'s variables compiles (JSON for json_variables, optional declared names, odd names)', () => {
    expect(tsc([
      '  const greeting = await prompts.getPrompt(\'greeting\');',
      '  const a: string = render(greeting, { name: \'Ana\', product: { sku: [1, 2], tags: null } });',
      '  const b: string = render(greeting, { name: 3, product: \'x\', tone: true }, { allowExtra: false });',
      '  const { messages, system } = render(await prompts.getPrompt(\'chat\'), { topic: \'billing\', question: \'q\' });',
      '  const c: string = render(await prompts.getPrompt(\'static\'));',
      '  const d: string = render(await prompts.getPrompt(\'support/odd-names\'), { \'user.name\': \'U\', \'first-name\': \'F\', \'__proto__\': \'P\' });',
      '  const id: string = \'chosen-at-run-time\';',
      '  const untyped = await prompts.getPrompt(id);',
      '  const e = untyped.templateType === \'TEXT\' ? render(untyped, { anything: 1 }) : render(untyped, {}).messages;',
      '  const either: string | RenderedChat = render(untyped, { anything: 1 });',
      '  const labeled = await prompts.getPrompt(\'greeting\', { label: \'production\', stickinessKey: \'user-1\' });',
      '  const f: string = render(labeled, { name: \'Ana\', product: \'x\' });',
      '  const arm: \'A\' | \'B\' | undefined = labeled.rollout?.arm;',
      '  const g = render(await prompts.getPrompt(\'chat\', { label: \'staging\' }), { topic: \'t\', question: \'q\' }).messages;',
      '  return [a, b, messages, system, c, d, e, either, f, arm, labeled.label, labeled.provenance.source, g];',
    ].join('\n'))).toEqual([]);
  });

  test.each([
    ['a renamed variable', 'render(greeting, { customerName: \'Ana\', product: \'x\' })', /customerName/],
    ['a missing variable', 'render(greeting, { product: \'x\' })', /Argument of type '\{ product: string; \}' is not assignable/],
    ['an object for a plain variable', 'render(greeting, { name: { first: \'Ana\' }, product: \'x\' })', /not assignable to type 'TemplateValue'/],
    ['no variables at all', 'render(greeting)', /Expected 2-3 arguments, but got 1/],
    ['a variable for a prompt that takes none', 'render(await prompts.getPrompt(\'static\'), { x: \'1\' })', /not assignable/],
    ['a renamed variable in a labeled read', 'render(await prompts.getPrompt(\'greeting\', { label: \'production\' }), { customerName: \'Ana\', product: \'x\' })', /customerName/],
    ['a TEXT prompt\'s result used as a CHAT one', 'render(greeting, { name: \'Ana\', product: \'x\' }).messages', /Property 'messages' does not exist on type 'string'/],
    ['an unnarrowed prompt\'s result used as a string', '(render(await prompts.getPrompt(String(greeting.id)), {}) satisfies string)', /not assignable to type 'string'|does not satisfy/],
  ])('%s fails tsc', (_what, call, message) => {
    const errors = tsc(`  const greeting = await prompts.getPrompt('greeting');\n  return ${call};`);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.join('\n')).toMatch(message);
  });
});

describe('from a deployed table', () => {
  const ddb = localDynamoDBClient();
  let table: string;

  beforeAll(async () => {
    table = await createServingTable(ddb, 'types');
    await new SyncEngine({ dynamoDBClient: ddb, tableName: table, source: new DirectoryPromptSource(promptsDir) }).fullSync();
  });

  afterAll(async () => {
    await deleteTable(ddb, table);
    ddb.destroy();
  });

  test('--table reads the CURRENT items and declares the same prompts as --directory (TypeScript and Python)', async () => {
    for (const python of [[], ['--python']]) {
      // WHEN
      const fromDir = await types(...python, '--directory', promptsDir);
      let stdout = '';
      const code = await runTypes([...python, '--table', table], { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: () => true } },
        () => localDynamoDBClient());
      // THEN
      expect(code).toBe(0);
      const body = (text: string) => text.split('\n').slice(1).join('\n');
      expect(body(stdout)).toBe(body(fromDir.stdout));
      expect(stdout).toContain(python.length > 0 ? 'Literal[\'support/odd-names\']' : '"support/odd-names": { readonly templateType: \'TEXT\'');
    }
  });

  test('--table fetches only the CURRENT rows\' type attributes, and fails rather than stop silently at the page bound', async () => {
    // GIVEN a client that records every item the scans return
    const returned: Record<string, unknown>[] = [];
    const client = localDynamoDBClient();
    client.middlewareStack.add((next) => async (args) => {
      const out = await next(args);
      returned.push(...(((out.output as { Items?: Record<string, unknown>[] }).Items) ?? []));
      return out;
    }, { step: 'initialize', name: 'recordScanItems' });
    try {
      // WHEN
      const prompts = await tablePromptTypes(client, table);
      // THEN only CURRENT rows, and of them only what the types need (no version rows, no checksum, sync or audit fields)
      expect(prompts.map((p) => p.id)).toEqual(['chat', 'greeting', 'static', 'support/odd-names']);
      // (the catalog row is CURRENT too: only its keys come back, not its Bloom filter)
      expect(returned.map((i) => (i.prompt_id as { S: string }).S).sort()).toEqual(['#catalog', 'chat', 'greeting', 'static', 'support/odd-names']);
      const allowed = ['prompt_id', 'version', 'status', 'template_type', 'text', 'system', 'messages', 'input_variables', 'json_variables'];
      for (const item of returned) {
        expect(item.version).toEqual({ S: 'CURRENT' });
        expect(Object.keys(item).filter((k) => !allowed.includes(k))).toEqual([]);
      }
      // AND pages left after the bound fail the command (exit 1, the reason on stderr), never a partial declaration
      await expect(tablePromptTypes(client, table, { maxPages: 2, pageSize: 1 })).rejects.toThrow(
        `${table} has more than 2 scan pages: stopped there rather than declare only some of its prompts`);
    } finally {
      client.destroy();
    }
  });
});

test('the header comment shows the --directory argument on its one line: line breaks in it are escaped', async () => {
  // GIVEN a directory whose name holds a line feed and U+2028 (a line terminator in JavaScript), then code
  const odd = path.join(work, 'odd\nconsole.log(1)\u2028export {}\u2029x');
  fs.mkdirSync(odd);
  fs.writeFileSync(path.join(odd, 'p.md'), 'Hi {{name}}');
  for (const python of [[], ['--python']]) {
    // WHEN
    const run = await types(...python, '--directory', odd);
    // THEN the header is one line, the argument visible as escapes
    expect(run.code).toBe(0);
    const [header, next] = run.stdout.split(/\r\n|[\n\r\u2028\u2029]/);
    expect(header).toMatch(/^(\/\/|#) Generated by `cdk-prompt-serving types .*odd\\u000aconsole\.log\(1\)\\u2028export \{\}\\u2029x`: do not edit; run it again when the prompts change\.$/);
    expect(next).toMatch(/^(import type|# Use it for type checking only:)/);
  }
});

test('usage errors exit 2; a file that cannot be read is skipped, named, and exits 1', async () => {
  expect((await types()).code).toBe(2);
  expect((await types('--directory', promptsDir, '--table', 't')).code).toBe(2);
  expect((await types('--nope')).stderr).toContain('types does not take \'--nope\'');
  const broken = path.join(work, 'broken');
  fs.mkdirSync(broken);
  fs.writeFileSync(path.join(broken, 'ok.md'), 'Hi {{name}}');
  fs.writeFileSync(path.join(broken, 'bad.json'), '{ nope');
  const run = await types('--directory', broken);
  expect(run.code).toBe(1);
  expect(run.stdout).toContain('"ok": { readonly templateType: \'TEXT\'; readonly variables: { readonly "name": TemplateValue } };');
  expect(run.stderr).toMatch(/^skipped bad\.json: /);
});

/** A Python with mypy: the venv scripts/test-python-matrix.sh makes, or one made for this test (see docs), or none. */
function mypyPython(): string | undefined {
  // scripts/test-python-matrix.sh runs these tests again once its venv exists, and requires them to run.
  if (process.env.PROMPT_SERVING_REQUIRE_MYPY === '1') {
    const python = path.join(root, '.tmp/venvs/client-newest/bin/python');
    if (!fs.existsSync(python)) throw new Error(`PROMPT_SERVING_REQUIRE_MYPY=1 but ${python} does not exist`);
    return python;
  }
  for (const candidate of ['.tmp/venvs/client-newest/bin/python', '.tmp/venvs/types-mypy/bin/python', '/usr/bin/python3']) {
    const python = path.isAbsolute(candidate) ? candidate : path.join(root, candidate);
    if (fs.existsSync(python) && spawnSync(python, ['-m', 'mypy', '--version'], { encoding: 'utf8' }).status === 0) return python;
  }
  return undefined;
}

describe('Python stub', () => {
  const python = mypyPython();
  let dir: string;

  beforeAll(async () => {
    dir = path.join(work, 'py');
    fs.mkdirSync(dir);
    const run = await types('--python', '--directory', promptsDir);
    expect(run.code).toBe(0);
    fs.writeFileSync(path.join(dir, 'prompts.pyi'), run.stdout);
  });

  function mypy(body: string): string[] {
    fs.writeFileSync(path.join(dir, 'app.py'), [
      'from typing import TYPE_CHECKING, Any, cast',
      '',
      'from cdk_prompt_serving_runtime import PromptClient',
      '',
      'if TYPE_CHECKING:',
      '    from prompts import TypedPromptClient',
      '',
      'prompts = cast("TypedPromptClient", PromptClient(table_name="t"))',
      '',
      '',
      'def handler() -> Any:',
      body,
      '',
    ].join('\n'));
    const run = spawnSync(python!, ['-m', 'mypy', '--strict', '--config-file', path.join(root, 'python/pyproject.toml'), '--cache-dir', path.join(dir, '.mypy_cache'), 'app.py'], {
      cwd: dir, encoding: 'utf8', timeout: 300_000, env: { ...process.env, MYPYPATH: `${dir}${path.delimiter}${path.join(root, 'python')}` },
    });
    if (run.status === null) throw new Error(`mypy did not finish: ${run.error}`);
    return run.stdout.split('\n').filter((l) => l.includes('error:'));
  }

  (python ? test : test.skip)('mypy --strict accepts a reader that passes exactly each prompt\'s variables', () => {
    expect(mypy([
      '    greeting = prompts.get_prompt("greeting")',
      '    a: str = greeting.render({"name": "Ana", "product": {"sku": [1, 2]}})',
      '    b: str = greeting.render({"name": 3, "product": "x", "tone": True}, allow_extra=False)',
      '    chat = prompts.get_prompt("chat").render({"topic": "billing", "question": "q"})',
      '    c: str = prompts.get_prompt("static").render()',
      '    d: str = prompts.get_prompt("support/odd-names").render({"user.name": "U", "first-name": "F", "__proto__": "P"})',
      '    labeled = prompts.get_prompt("greeting", label="production", stickiness_key="user-1")',
      '    e: str = labeled.render({"name": "Ana", "product": "x"})',
      '    f = prompts.get_prompt("chat", label="staging").render({"topic": "t", "question": "q"})',
      '    untyped = prompts.get_prompt(str(a), label="production", fallback=None)',
      '    return [a, b, chat, c, d, e, f, labeled.rollout, labeled.label, labeled.provenance.source, untyped]',
    ].join('\n'))).toEqual([]);
  });

  (python ? test : test.skip)('mypy --strict accepts the stub of a directory without prompts (a plain get_prompt, no lone overload)', async () => {
    // GIVEN the stub of an empty directory in place of the prompts' one
    const empty = path.join(work, 'no-prompts');
    fs.mkdirSync(empty);
    const run = await types('--python', '--directory', empty);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('@overload');
    const full = fs.readFileSync(path.join(dir, 'prompts.pyi'), 'utf8');
    fs.writeFileSync(path.join(dir, 'prompts.pyi'), run.stdout);
    try {
      // WHEN / THEN
      expect(mypy([
        '    p = prompts.get_prompt("anything", label="production")',
        '    return p.render({"x": 1})',
      ].join('\n'))).toEqual([]);
    } finally {
      fs.writeFileSync(path.join(dir, 'prompts.pyi'), full);
    }
  });

  (python ? test : test.skip)('mypy --strict rejects a renamed variable, a missing one and a wrong type', () => {
    const errors = mypy([
      '    greeting = prompts.get_prompt("greeting")',
      '    return [',
      '        greeting.render({"customer_name": "Ana", "product": "x"}),',
      '        greeting.render({"name": {"first": "Ana"}, "product": "x"}),',
      '        prompts.get_prompt("greeting", label="production").render({"customer": "Ana", "product": "x"}),',
      '    ]',
    ].join('\n'));
    expect(errors.join('\n')).toMatch(/Extra key "customer_name"/);
    expect(errors.join('\n')).toMatch(/Extra key "customer"/); // the labeled read is typed as the CURRENT read
    expect(errors.join('\n')).toMatch(/Missing key "name"/);
    expect(errors.join('\n')).toMatch(/has incompatible type "dict\[str, str\]"; expected "str \| int \| float \| bool"|Incompatible types \(expression has type "dict\[str, str\]", TypedDict item "name" has type/);
  });
});
