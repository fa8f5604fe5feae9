/**
 * Prompts-as-code: a directory of prompt files shipped with the CDK app (see README "Prompts as code").
 *
 * - `*.md`: optional YAML front matter between `---` lines; the body is the TEXT template.
 * - `*.yaml` / `*.yml` / `*.json`: one prompt object in the wire contract's words (`text` or `messages`,
 *   `system`, `input_variables`, `model_id`, `inference_config`, any further keys are kept).
 * - The id is the `id` field, else the file's path below the directory without its extension
 *   (`support/greeting.md` → `support/greeting`). Files and folders starting with `.` or `_`, and
 *   `README.md`, are ignored.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  Attr, JsonValue, METADATA_ATTRIBUTES, PromptContent, TEMPLATE_CHAT, TEMPLATE_TEXT, describePromptId, isPromptFile, isSkippedEntry, promptIdProblem,
} from '../../schema';
import { variablesUsed } from '../content';
import { FetchResult, PromptSourceReader, SourceFailure, SourceListing, SourcePrompt, SourceStats } from '../source';

/** camelCase spellings people write, mapped to the wire contract's keys (a Map: `toString` is no alias). */
const KEY_ALIASES: ReadonlyMap<string, string> = new Map([
  ['templateType', 'template_type'],
  ['inputVariables', 'input_variables'],
  ['modelId', 'model_id'],
  ['inferenceConfig', 'inference_config'],
  ['inferenceConfiguration', 'inference_config'],
]);
/** A key that would replace an object's prototype in the JavaScript that reads items: refused. */
const UNSAFE_KEY = '__proto__';
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
    const failures: SourceFailure[] = [];
    const files = new Map<string, string>(); // id → file, to report duplicates
    const scan = await scanPromptFiles(this.root);
    failures.push(...scan.failures);
    for (const file of scan.files) {
      const rel = path.relative(this.root, file).split(path.sep).join('/');
      const fallbackId = rel.replace(/\.[^.]+$/, '');
      let prompt: SourcePrompt;
      try {
        this.reads++;
        prompt = parsePromptFile(rel, fallbackId, await fs.readFile(file));
      } catch (err) {
        failures.push({ id: fallbackId, reason: `${rel}: ${(err as Error).message}` });
        continue;
      }
      const other = files.get(prompt.id);
      if (other) {
        failures.push({ id: prompt.id, reason: `${rel}: prompt id ${JSON.stringify(prompt.id)} is already used by ${other}` });
        continue;
      }
      files.set(prompt.id, rel);
      this.prompts.set(prompt.id, prompt);
    }
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

/** Prompt files below a directory, and the entries that could not be looked at (with a reason each). */
export interface PromptFileScan {
  /** Absolute paths, sorted by relative path. */
  readonly files: string[];
  /** Dangling or looping symbolic links, unreadable folders: `id` is the entry's relative path. */
  readonly failures: SourceFailure[];
}

/**
 * Prompt files below `root`, sorted by relative path (the order the construct fingerprints and ships them in),
 * by the rules in schema.ts (`isPromptFile`, `isSkippedEntry`). Symbolic links are followed, but a dangling
 * link, a link loop and a folder reached twice (a link to a parent) are reported instead of failing the walk.
 */
export async function scanPromptFiles(root: string): Promise<PromptFileScan> {
  const out: string[] = [];
  const failures: SourceFailure[] = [];
  const rel = (file: string) => path.relative(root, file).split(path.sep).join('/');
  const seen = new Set<string>();
  const walk = async (dir: string): Promise<void> => {
    const real = await fs.realpath(dir);
    if (seen.has(real)) {
      failures.push({ id: rel(dir), reason: `${rel(dir)}: a symbolic link leads back to a folder already read (${rel(real) || '.'}); skipped` });
      return;
    }
    seen.add(real);
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      if (isSkippedEntry(entry.name)) continue;
      const full = path.join(dir, entry.name);
      let stat;
      try {
        stat = await fs.stat(full);
      } catch (err) {
        failures.push({ id: rel(full), reason: `${rel(full)}: ${entryProblem(err)}` });
        continue;
      }
      if (stat.isDirectory()) await walk(full);
      else if (stat.isFile() && isPromptFile(entry.name)) out.push(full);
    }
  };
  await walk(root);
  return { files: out.sort((a, b) => (rel(a) < rel(b) ? -1 : rel(a) > rel(b) ? 1 : 0)), failures };
}

/** Prompt files below `root` (see {@link scanPromptFiles}); throws a readable error for an entry it cannot look at. */
export async function promptFiles(root: string): Promise<string[]> {
  const { files, failures } = await scanPromptFiles(root);
  if (failures.length > 0) throw new Error(failures.map((f) => f.reason).join('; '));
  return files;
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
  for (const [k, v] of Object.entries(doc)) {
    if (k === UNSAFE_KEY) throw new Error(`the key \`${UNSAFE_KEY}\` is not allowed (it would replace the prototype of objects read from the table)`);
    const key = KEY_ALIASES.get(k) ?? k;
    if (METADATA_ATTRIBUTES.has(key) && key !== Attr.promptId) {
      throw new Error(`\`${key}\` is an attribute the table itself writes on every item (wire contract); rename this key`);
    }
    Object.defineProperty(fields, key, { value: v, enumerable: true, writable: true, configurable: true });
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
  content.input_variables ??= variablesUsed(content as PromptContent);
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
