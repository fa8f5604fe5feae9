/**
 * Prompts-as-code: a directory of prompt files shipped with the CDK app (see README "Prompts as code").
 *
 * - `*.md`: optional YAML front matter between `---` lines; the body is the TEXT template.
 * - `variables:` (front matter, or `input_variables` / `inputVariables` in any file) declares the names the prompt takes;
 *   every placeholder must be declared (else the file fails, naming them), and a declared name the template does not
 *   use is a warning (`validate`, synth). Without it the declaration is the template's placeholders.
 * - `json_variables:` lists variables that take JSON values at `render` (inserted as canonical JSON).
 * - `*.yaml` / `*.yml` / `*.json`: one prompt object in the wire contract's words (`text` or `messages`,
 *   `system`, `input_variables`, `model_id`, `inference_config`, any further keys are kept).
 * - The id is the `id` field, else the file's path below the directory without its extension
 *   (`support/greeting.md` → `support/greeting`). Files and folders starting with `.` or `_`, and
 *   `README.md`, are ignored.
 */
import { createHash } from 'node:crypto';
import * as fsSync from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  Attr, JsonValue, PromptContent, TEMPLATE_CHAT, TEMPLATE_TEXT, describePromptId, isPromptFile, isSkippedEntry, isReservedAttribute, promptIdProblem,
  reservedAttributeReason,
} from '../../schema';
import { variableDisagreement } from '../../schema/template';
import { PROTOTYPE_KEY, variablesUsed } from '../../write/content';
import { FetchResult, PromptSourceReader, SourceFailure, SourceListing, SourcePrompt, SourceStats } from '../source';

/** Content field of the variables that take JSON values (the runtime's `render.ts`). */
const JSON_VARIABLES = 'json_variables';

/** camelCase spellings people write, mapped to the wire contract's keys (a Map: `toString` is no alias). */
const KEY_ALIASES: ReadonlyMap<string, string> = new Map([
  ['templateType', 'template_type'],
  ['inputVariables', 'input_variables'],
  ['modelId', 'model_id'],
  ['inferenceConfig', 'inference_config'],
  ['inferenceConfiguration', 'inference_config'],
  ['variables', 'input_variables'],
  ['jsonVariables', JSON_VARIABLES],
]);

/** UTF-8 byte order mark, as editors on Windows write it. */
const BOM = '\ufeff';
/** Strict UTF-8: a file that is not text fails instead of being served as replacement characters. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$/;

export class DirectoryPromptSource implements PromptSourceReader {
  readonly name = 'directory';
  private readonly prompts = new Map<string, SourcePrompt>();
  private reads = 0;

  constructor(private readonly root: string) {}

  async list(): Promise<SourceListing> {
    this.prompts.clear();
    // The same scan and parse `validate` and the synth-time check run (directory-check.ts): one set of rules.
    const scan = scanPromptDirectory(this.root);
    const read = readPromptFiles(this.root, scan.files);
    this.reads += scan.files.length;
    for (const { prompt } of read.prompts) this.prompts.set(prompt.id, prompt);
    const failures: SourceFailure[] = [...scan.problems, ...read.problems].map((p) => ({ id: p.id, reason: `${p.file}: ${p.reason}` }));
    return {
      prompts: [...this.prompts.values()].map((p) => ({ id: p.id, revision: p.revision })),
      failures,
    };
  }

  async fetch(id: string): Promise<FetchResult> {
    if (this.prompts.size === 0) await this.list();
    const prompt = this.prompts.get(id);
    return prompt ? { kind: 'prompt', prompt } : { kind: 'not-found', reason: 'no file defines this prompt id' };
  }

  stats(): SourceStats {
    return { calls: { ReadFile: this.reads }, throttles: 0 };
  }
}

/** One prompt file (or directory entry) that cannot be served, and why. */
export interface PromptFileIssue {
  /** The entry, as a POSIX path relative to the directory. */
  readonly file: string;
  /** The prompt id it defines when known, else the entry's path without its extension (or the entry itself). */
  readonly id: string;
  /** What is wrong, in words a person can act on (without the file name). */
  readonly reason: string;
}

/** Prompt files below a directory, and the entries that could not be looked at (with a reason each). */
export interface PromptDirectoryScan {
  /** POSIX paths relative to the directory, sorted (the order the construct fingerprints and ships them in). */
  readonly files: string[];
  /** Dangling or looping symbolic links, folders reached twice, unreadable entries. */
  readonly problems: PromptFileIssue[];
}

/**
 * Prompt files below `root`, by the rules in schema.ts (`isPromptFile`, `isSkippedEntry`). Symbolic links are
 * followed, but a dangling link, a link loop, a folder reached twice (a link to a parent) and an unreadable
 * entry are reported, each alone, instead of failing the walk. Synchronous: the construct runs it at synth,
 * `validate` and the sync function alike.
 */
export function scanPromptDirectory(root: string): PromptDirectoryScan {
  const files: string[] = [];
  const problems: PromptFileIssue[] = [];
  const seen = new Set<string>();
  const walk = (relative: string): void => {
    const dir = path.join(root, ...relative.split('/').filter(Boolean));
    let entries: fsSync.Dirent[];
    try {
      const real = fsSync.realpathSync(dir);
      if (seen.has(real)) {
        const target = path.relative(root, real).split(path.sep).join('/') || '.';
        problems.push({ file: relative, id: relative, reason: `a symbolic link leads back to a folder already read (${target}); skipped` });
        return;
      }
      seen.add(real);
      entries = fsSync.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if (relative === '') throw err; // the directory itself: the caller's error to report
      problems.push({ file: relative, id: relative, reason: entryProblem(err) });
      return;
    }
    for (const entry of entries) {
      if (isSkippedEntry(entry.name)) continue;
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      let stat: fsSync.Stats;
      try {
        stat = fsSync.statSync(path.join(dir, entry.name));
      } catch (err) {
        problems.push({ file: child, id: child, reason: entryProblem(err) });
        continue;
      }
      if (stat.isDirectory()) walk(child);
      else if (stat.isFile() && isPromptFile(entry.name)) files.push(child);
    }
  };
  walk('');
  return { files: files.sort(), problems: problems.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0)) };
}

/** Parsed prompt files, and the files that do not parse or reuse an id (first file wins), in file order. */
export interface PromptFilesRead {
  readonly prompts: { readonly file: string; readonly prompt: SourcePrompt }[];
  readonly problems: PromptFileIssue[];
}

/** Reads and parses `files` (POSIX paths relative to `root`, from {@link scanPromptDirectory}). */
export function readPromptFiles(root: string, files: readonly string[]): PromptFilesRead {
  const prompts: { file: string; prompt: SourcePrompt }[] = [];
  const problems: PromptFileIssue[] = [];
  const owners = new Map<string, string>(); // prompt id → first file defining it
  for (const file of files) {
    const fallbackId = file.replace(/\.[^.]+$/, '');
    let prompt: SourcePrompt;
    try {
      prompt = parsePromptFile(file, fallbackId, fsSync.readFileSync(path.join(root, ...file.split('/'))));
    } catch (err) {
      problems.push({ file, id: fallbackId, reason: err instanceof Error ? err.message : String(err) });
      continue;
    }
    const owner = owners.get(prompt.id);
    if (owner !== undefined) {
      problems.push({ file, id: prompt.id, reason: `prompt id ${JSON.stringify(prompt.id)} is already used by ${owner}` });
      continue;
    }
    owners.set(prompt.id, file);
    prompts.push({ file, prompt });
  }
  return { prompts, problems };
}

function entryProblem(err: unknown): string {
  const code = (err as { code?: string }).code;
  if (code === 'ELOOP') return 'a symbolic link loop (the link resolves to itself)';
  if (code === 'ENOENT') return 'a dangling symbolic link (its target does not exist)';
  if (code === 'EACCES' || code === 'EPERM') return 'cannot be read (permission denied)';
  return `cannot be read (${code ?? (err as Error).message})`;
}

/** Parses one file into a prompt; throws an Error whose message says what is wrong. */
export function parsePromptFile(rel: string, fallbackId: string, bytes: Buffer): SourcePrompt {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new Error('not UTF-8 text (a binary file?): prompt files must be UTF-8');
  }
  if (text.includes('\u0000')) throw new Error('holds NUL characters (a binary file?): prompt files must be text');
  if (text.startsWith(BOM)) text = text.slice(BOM.length);
  const ext = path.extname(rel).toLowerCase();
  let doc: unknown;
  let body: string | undefined;
  if (ext === '.md') {
    const m = FRONT_MATTER.exec(text);
    doc = m ? parseYaml(m[1]) ?? {} : {};
    body = (m ? m[2] : text).replace(/^(\r?\n)+/, '').trimEnd();
  } else if (ext === '.json') {
    doc = JSON.parse(text);
  } else {
    doc = parseYaml(text);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new Error(ext === '.md' ? 'front matter must be a YAML mapping' : 'the file must hold one prompt object');
  }
  const fields: Record<string, unknown> = {};
  const spelledAs = new Map<string, string>(); // contract key → the key the file used for it
  for (const [k, v] of Object.entries(doc)) {
    const key = KEY_ALIASES.get(k) ?? k;
    // The id (`id`, `prompt_id`) is the file's to give; every other reserved name is the table's (schema/reserved-attributes.ts).
    if (key !== Attr.promptId && key !== PROTOTYPE_KEY && isReservedAttribute(key)) throw new Error(reservedAttributeReason(k));
    const earlier = spelledAs.get(key);
    if (earlier !== undefined) throw new Error(`\`${earlier}\` and \`${k}\` both give \`${key}\`: keep one of them`);
    spelledAs.set(key, k);
    Object.defineProperty(fields, key, { value: v, enumerable: true, writable: true, configurable: true });
  }
  if (fields.prompt_id !== undefined && fields.id !== undefined && fields.prompt_id !== fields.id) {
    throw new Error(`\`id\` (${describePromptId(fields.id)}) and \`prompt_id\` (${describePromptId(fields.prompt_id)}) disagree: give one of them`);
  }
  const id = fields.prompt_id ?? fields.id ?? fallbackId;
  delete fields.id;
  delete fields.prompt_id;
  const idProblem = promptIdProblem(id);
  if (idProblem !== undefined) throw new Error(`invalid prompt id ${describePromptId(id)}: ${idProblem}`);
  if (body !== undefined) {
    if (fields.text !== undefined) throw new Error('give the template either as the Markdown body or as `text`, not both');
    if (body.length > 0) fields.text = body;
  }
  const content = toContent(fields);
  const digest = 'sha256:' + createHash('sha256').update(bytes).digest('hex');
  return { id: id as string, content, sourceVersion: digest.slice(0, 19), revision: digest };
}

function toContent(fields: Record<string, unknown>): PromptContent {
  const content: Record<string, unknown> = { ...fields };
  content.template_type ??= fields.messages !== undefined ? TEMPLATE_CHAT : TEMPLATE_TEXT;
  if (fields.messages !== undefined) {
    if (!Array.isArray(fields.messages)) throw new Error('`messages` must be a list');
    content.messages = fields.messages.map(toMessage);
  }
  if (fields.system !== undefined) content.system = toTextBlocks(fields.system, '`system`');
  const used = variablesUsed(content as PromptContent);
  if (content.input_variables !== undefined) {
    const declared = content.input_variables;
    if (!Array.isArray(declared) || declared.some((v) => typeof v !== 'string')) {
      throw new Error('`variables` (`input_variables`) must be a list of names');
    }
    const { undeclared } = variableDisagreement(declared as string[], used);
    if (undeclared.length > 0) {
      throw new Error(`the template uses ${undeclared.map((n) => `{{${n}}}`).join(', ')} but \`variables\` does not declare `
        + `${undeclared.length > 1 ? 'them' : 'it'}: add ${undeclared.length > 1 ? 'them' : 'it'} to \`variables\`, or fix the placeholder`);
    }
  }
  const json = content[JSON_VARIABLES];
  if (json !== undefined && (!Array.isArray(json) || json.some((v) => typeof v !== 'string'))) {
    throw new Error('`json_variables` must be a list of names');
  }
  content.input_variables ??= used;
  return content as PromptContent;
}

/** `{ role, content: "Hi {{name}}" }` → Bedrock's `{ role, content: [{ text }] }`. */
function toMessage(message: unknown, i: number): JsonValue {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    throw new Error(`messages[${i}] must be a mapping with \`role\` and \`content\``);
  }
  const { role, content, ...rest } = message as Record<string, unknown>;
  if (typeof role !== 'string') throw new Error(`messages[${i}].role must be a string (user or assistant)`);
  return { ...(rest as Record<string, JsonValue>), role, content: toTextBlocks(content, `messages[${i}].content`) };
}

/** A string, a list of strings, or a list of `{ text }` blocks → a list of blocks. */
function toTextBlocks(value: unknown, what: string): JsonValue[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list)) throw new Error(`${what} must be a string or a list`);
  return list.map((block) => (typeof block === 'string' ? { text: block } : block as JsonValue));
}
