/**
 * `cdk-prompt-serving types`: typed prompts. Reads the prompts of a prompts-as-code directory (`--directory`) or the
 * CURRENT items of a deployed table (`--table`) and prints a TypeScript declaration file that fills the runtime's
 * `PromptCatalog` (so `render(await getPrompt('id'), …)` takes exactly that prompt's variables), or with `--python` a `.pyi`
 * stub declaring `TypedPromptClient` (a `PromptClient` whose `get_prompt('id')` returns a prompt whose `render` takes a
 * `TypedDict` of its variables).
 *
 * Per prompt: every placeholder is a required variable; a declared name (`input_variables`, front matter
 * `variables:`) the template does not use is optional; a name in `json_variables` takes any JSON value, the others a
 * string, number or boolean. The same rule `render` applies (src/runtime/render.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DynamoDBClient, ScanCommand, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { CliIo, printable } from './terminal';
import { Attr, CURRENT, STATUS_DELETED, TEMPLATE_CHAT, isValidPromptId } from '../schema';
import { fromItem } from '../schema/ddb-codec';
import { templateVariables } from '../schema/template';
import { readPromptFiles, scanPromptDirectory } from '../sync/sources/directory';

/** The command's help. */
export const TYPES_USAGE = `Usage: cdk-prompt-serving types (--directory DIR | --table TABLE) [--python]

Print type declarations of the prompts' variables on stdout:
  TypeScript (default): a .d.ts that makes render(getPrompt('id'), ...) take exactly
      that prompt's variables:    cdk-prompt-serving types --directory prompts > prompts.d.ts
  --python: a .pyi stub declaring TypedPromptClient for mypy / pyright:
      cdk-prompt-serving types --python --directory prompts > prompts.pyi
  --directory DIR   read the prompt files in DIR (no AWS access)
  --table TABLE     read the CURRENT prompts of a deployed serving table
`;

/** The content attribute naming the variables that take JSON values. */
const JSON_VARIABLES = 'json_variables';

/** What one prompt takes. */
export interface PromptTypeInfo {
  readonly id: string;
  readonly templateType: 'TEXT' | 'CHAT';
  /** Placeholders, in order of first use. */
  readonly required: readonly string[];
  /** Declared names the template does not use. */
  readonly optional: readonly string[];
  /** Names that take JSON values. */
  readonly json: ReadonlySet<string>;
}

/** The variables of one stored or parsed content. */
export function promptTypeInfo(id: string, content: Record<string, unknown>): PromptTypeInfo {
  const chat = content[Attr.templateType] === TEMPLATE_CHAT;
  const templates = chat ? strings([content[Attr.system] ?? [], content[Attr.messages] ?? []]) : [String(content[Attr.text] ?? '')];
  const required = [...new Set(templates.flatMap((t) => templateVariables(t)))];
  const declared = Array.isArray(content[Attr.inputVariables]) ? (content[Attr.inputVariables] as unknown[]).filter((v): v is string => typeof v === 'string') : [];
  const json = Array.isArray(content[JSON_VARIABLES]) ? (content[JSON_VARIABLES] as unknown[]).filter((v): v is string => typeof v === 'string') : [];
  return { id, templateType: chat ? 'CHAT' : 'TEXT', required, optional: declared.filter((n) => !required.includes(n)), json: new Set(json) };
}

function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) strings(v, out);
  return out;
}

/** The prompts of a directory, and its files that cannot be read (as `file: reason`). */
export function directoryPromptTypes(directory: string): { prompts: PromptTypeInfo[]; problems: string[] } {
  const root = path.resolve(directory);
  const scan = scanPromptDirectory(root);
  const read = readPromptFiles(root, scan.files);
  return {
    prompts: read.prompts.map(({ prompt }) => promptTypeInfo(prompt.id, prompt.content as Record<string, unknown>)).sort(byId),
    problems: [...scan.problems, ...read.problems].map((p) => `${p.file}: ${p.reason}`),
  };
}

/** Most pages of one table scan (1 MB each): a bound, not a limit anyone should meet. */
const MAX_SCAN_PAGES = 10_000;

/** The attributes `promptTypeInfo` reads (and the scan's filter): the scan fetches nothing else of a row. */
const TYPE_ATTRIBUTES = [
  Attr.promptId, Attr.version, Attr.status, Attr.templateType, Attr.text, Attr.system, Attr.messages, Attr.inputVariables, JSON_VARIABLES,
] as const;

/** Bounds of {@link tablePromptTypes}' scan (tests shrink them to reach the bound). */
export interface TableScanBounds {
  /** @default 10,000 */
  readonly maxPages?: number;
  /** Items per page (`Limit`). @default - DynamoDB's 1 MB pages */
  readonly pageSize?: number;
}

/**
 * The CURRENT, ACTIVE prompts of a serving table (one paginated, eventually consistent `Scan`, filtered to the CURRENT
 * rows and projected to the attributes the types need, so version and audit rows are never returned).
 * @throws Error when the table still has pages after `maxPages`: the declarations would silently miss prompts
 */
export async function tablePromptTypes(client: DynamoDBClient, tableName: string, bounds: TableScanBounds = {}): Promise<PromptTypeInfo[]> {
  const maxPages = bounds.maxPages ?? MAX_SCAN_PAGES;
  const prompts: PromptTypeInfo[] = [];
  const names = Object.fromEntries(TYPE_ATTRIBUTES.map((name, i) => [`#a${i}`, name]));
  const ref = (name: string) => `#a${TYPE_ATTRIBUTES.indexOf(name as typeof TYPE_ATTRIBUTES[number])}`;
  let start: ScanCommandOutput['LastEvaluatedKey'];
  for (let page = 0; page < maxPages; page++) {
    const out = await client.send(new ScanCommand({
      TableName: tableName,
      FilterExpression: `${ref(Attr.version)} = :current`,
      ProjectionExpression: Object.keys(names).join(', '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ':current': { S: CURRENT } },
      ExclusiveStartKey: start,
      Limit: bounds.pageSize,
    }));
    for (const raw of out.Items ?? []) {
      const item = fromItem(raw);
      const id = item[Attr.promptId];
      if (typeof id !== 'string' || !isValidPromptId(id) || item[Attr.status] === STATUS_DELETED) continue;
      prompts.push(promptTypeInfo(id, item));
    }
    start = out.LastEvaluatedKey;
    if (start === undefined) return prompts.sort(byId);
  }
  throw new Error(`${tableName} has more than ${maxPages} scan pages: stopped there rather than declare only some of its prompts`);
}

const byId = (a: PromptTypeInfo, b: PromptTypeInfo) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The TypeScript declaration file (module augmentation of `cdk-prompt-serving/runtime`). */
export function typescriptDeclarations(prompts: readonly PromptTypeInfo[], from: string): string {
  const lines = [
    `// Generated by \`cdk-prompt-serving types ${commentText(from)}\`: do not edit; run it again when the prompts change.`,
    'import type { TemplateJson, TemplateValue } from \'cdk-prompt-serving/runtime\';',
    '',
    'declare module \'cdk-prompt-serving/runtime\' {',
    '  interface PromptCatalog {',
  ];
  for (const p of prompts) {
    const type = (n: string) => (p.json.has(n) ? 'TemplateJson' : 'TemplateValue');
    const fields = [
      ...p.required.map((n) => `readonly ${JSON.stringify(n)}: ${type(n)}`),
      ...p.optional.map((n) => `readonly ${JSON.stringify(n)}?: ${type(n)}`),
    ];
    const variables = fields.length > 0 ? `{ ${fields.join('; ')} }` : 'Record<string, never>';
    lines.push(`    ${JSON.stringify(p.id)}: { readonly templateType: '${p.templateType}'; readonly variables: ${variables} };`);
  }
  lines.push('  }', '}', '');
  return lines.join('\n');
}

/**
 * `get_prompt`'s keyword-only parameters, as `PromptClient.get_prompt` declares them: every overload takes them all, so
 * the stub's override stays compatible with the client and a labeled read (`label=`, `stickiness_key=`) of a typed
 * prompt has the render signature of its CURRENT read (the types describe what they were generated from; a label on a
 * version with other variables is caught by `render`'s run-time check).
 */
const GET_PROMPT_KEYWORDS = 'fallback: Optional[PromptFallback] = ..., label: Optional[str] = ..., stickiness_key: Optional[str] = ...';

/** The Python stub (`.pyi`): `TypedPromptClient` with one `get_prompt` overload per prompt id. */
export function pythonStub(prompts: readonly PromptTypeInfo[], from: string): string {
  const lines = [
    `# Generated by \`cdk-prompt-serving types --python ${commentText(from)}\`: do not edit; run it again when the prompts change.`,
    '# Use it for type checking only:',
    '#     if TYPE_CHECKING:  # saved as prompts.pyi on the type checker\'s path',
    '#         from prompts import TypedPromptClient',
    '#     prompts = cast("TypedPromptClient", PromptClient())',
    'from typing import Any, Iterable, Literal, Mapping, Optional, Union, overload',
    '',
    'from typing_extensions import NotRequired, TypedDict',
    '',
    'from cdk_prompt_serving_runtime import Prompt, PromptClient, PromptFallback',
    '',
    'TemplateValue = Union[str, int, float, bool]',
    '',
  ];
  const overloads: string[] = [];
  prompts.forEach((p, i) => {
    const type = (n: string) => (p.json.has(n) ? 'Any' : 'TemplateValue');
    const fields = [
      ...p.required.map((n) => `${pyString(n)}: ${type(n)}`),
      ...p.optional.map((n) => `${pyString(n)}: NotRequired[${type(n)}]`),
    ];
    const returns = p.templateType === 'TEXT' ? 'str' : 'Mapping[str, Any]';
    const optional = p.required.length === 0 ? ' = ...' : '';
    lines.push(
      `_Variables${i} = TypedDict(${pyString(`_Variables${i}`)}, {${fields.join(', ')}})`,
      '',
      '',
      `class _Prompt${i}(Prompt):`,
      `    """${pyDoc(p.id)} (${p.templateType})."""`,
      '',
      `    def render(self, variables: _Variables${i}${optional}, *, allow_extra: bool = ..., `
        + `json_variables: Optional[Iterable[str]] = ...) -> ${returns}: ...  # type: ignore[override]`,
      '',
      '',
    );
    overloads.push(
      '    @overload',
      `    def get_prompt(self, prompt_id: Literal[${pyString(p.id)}], version: Optional[int] = ..., *, ${GET_PROMPT_KEYWORDS}) -> _Prompt${i}: ...`,
    );
  });
  lines.push(
    'class TypedPromptClient(PromptClient):',
    '    """`PromptClient` whose `get_prompt` knows the prompts below (for type checkers only)."""',
    '',
    // one overload alone is an error (mypy: "Single overload definition, multiple required"): without prompts, a plain def
    ...overloads,
    ...(overloads.length > 0 ? ['    @overload'] : []),
    `    def get_prompt(self, prompt_id: str, version: Optional[int] = ..., *, ${GET_PROMPT_KEYWORDS}) -> Prompt: ...`,
    '',
  );
  return lines.join('\n');
}

/**
 * An argument (`--directory DIR`) made safe inside a one-line `//` or `#` comment: control characters, and U+2028 and
 * U+2029 (line terminators in JavaScript), become `\\uXXXX`, so a path cannot end the comment and inject code.
 */
function commentText(value: string): string {
  return printable(value).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/** A Python string literal (ASCII, escaped). */
function pyString(value: string): string {
  return `'${[...value].map((c) => {
    const code = c.codePointAt(0)!;
    if (c === '\\' || c === '\'') return `\\${c}`;
    if (code >= 0x20 && code < 0x7f) return c;
    return code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\U${code.toString(16).padStart(8, '0')}`;
  }).join('')}'`;
}

/** Text safe inside a `"""` docstring. */
function pyDoc(value: string): string {
  return pyString(value).slice(1, -1).replace(/"/g, '\\"');
}

/** Runs `types` (the arguments after the command name); returns the exit code. */
export async function runTypes(argv: readonly string[], io: CliIo, makeClient = () => new DynamoDBClient({})): Promise<number> {
  let directory: string | undefined;
  let table: string | undefined;
  let python = false;
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].startsWith('--') && argv[i].includes('=') ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], undefined];
    if (name === '--help' || name === '-h') {
      io.stdout.write(TYPES_USAGE);
      return 0;
    }
    if (name === '--python' && inline === undefined) {
      python = true;
    } else if ((name === '--directory' || name === '--table') && (inline ?? argv[i + 1]) !== undefined) {
      const value = inline ?? argv[++i];
      if (name === '--directory') directory = value;
      else table = value;
    } else {
      io.stderr.write(`error: types does not take '${printable(argv[i])}'\n\n${TYPES_USAGE}`);
      return 2;
    }
  }
  if ((directory === undefined) === (table === undefined)) {
    io.stderr.write(`error: types needs either --directory or --table\n\n${TYPES_USAGE}`);
    return 2;
  }
  let prompts: PromptTypeInfo[];
  let problems: string[] = [];
  if (directory !== undefined) {
    if (!fs.existsSync(directory) || !fs.statSync(directory).isDirectory()) {
      io.stderr.write(`${printable(directory)}: not a directory\n`);
      return 1;
    }
    ({ prompts, problems } = directoryPromptTypes(directory));
  } else {
    const client = makeClient();
    try {
      prompts = await tablePromptTypes(client, table!);
    } catch (err) {
      io.stderr.write(`error: ${printable(err instanceof Error ? err.message : String(err))}\n`);
      return 1;
    } finally {
      client.destroy();
    }
  }
  const from = directory !== undefined ? `--directory ${directory}` : `--table ${table}`;
  io.stdout.write(python ? pythonStub(prompts, from) : typescriptDeclarations(prompts, from));
  for (const problem of problems) io.stderr.write(`skipped ${printable(problem)}\n`);
  return problems.length > 0 ? 1 : 0;
}
