/**
 * Checks prompt files before they ship, by the rules the sync applies when it reads them: the directory's
 * entries can be read (`scanPromptDirectory`: no dangling or looping links), each file parses
 * (`parsePromptFile`), its id is not used by another file (`readPromptFiles`), its content keeps the wire
 * contract and can be stored (`contentProblem`) and its pointer item fits in a DynamoDB item (`sizeProblem`).
 * The sync runs the same functions (the directory source the first three, the engine the last two, for every
 * source), so a file fails in `validate`, at synth and in the sync alike, with the same reason.
 *
 * Used at synth time by `PromptSource.fromDirectory` and by `cdk-prompt-serving validate`. Synchronous, so it
 * can run while a CDK app is constructed.
 */
import { readPromptFiles, scanPromptDirectory } from './directory';
import { checksum } from '../../schema';
import { cachePointWarnings, variableDisagreement } from '../../schema/template';
import { contentProblem, pointerItem, sizeProblem, variablesUsed } from '../../write/content';

/** One problem in one prompt file. */
export interface PromptFileProblem {
  /** The file, as a POSIX path relative to the directory. */
  readonly file: string;
  /** What is wrong, in words a person can act on. */
  readonly reason: string;
}

/** Bookkeeping a pointer item carries at its largest, so the size check is not optimistic. */
const WORST_CASE_METADATA = {
  versionNumber: 999_999,
  latestVersionNumber: 999_999,
  source: 'directory',
  sourceUpdatedAt: '2000-01-01T00:00:00.000000Z',
  syncedAt: '2000-01-01T00:00:00.000000Z',
  sourceReadAt: '2000-01-01T00:00:00.000000Z',
};

/**
 * The prompt files of `root` (see `scanPromptDirectory`), every problem of the directory, and the warnings about files
 * that sync but serve less well than they could ({@link promptFileWarnings}), each in file order.
 */
export function checkPromptDirectory(root: string): { files: string[]; problems: PromptFileProblem[]; warnings: PromptFileProblem[] } {
  const scan = scanPromptDirectory(root);
  const problems = [...scan.problems.map(({ file, reason }) => ({ file, reason })), ...checkPromptFiles(root, scan.files)];
  return { files: scan.files, problems: problems.sort(byFile), warnings: promptFileWarnings(root, scan.files) };
}

/**
 * Warnings about prompt files that sync: a CHAT prompt with a variable before a cache point (Bedrock's prompt cache
 * misses whenever the variable changes: `cachePointWarnings`), and declared `variables` the template never uses
 * (accepted by `render`, never required: a typo, or a leftover). Files with problems are left to `checkPromptFiles`.
 */
export function promptFileWarnings(root: string, files: readonly string[]): PromptFileProblem[] {
  const warnings: PromptFileProblem[] = [];
  for (const { file, prompt } of readPromptFiles(root, files).prompts) {
    for (const reason of cachePointWarnings(prompt.content)) warnings.push({ file, reason });
    const declared = Array.isArray(prompt.content.input_variables) ? prompt.content.input_variables : [];
    const { unused } = variableDisagreement(declared, variablesUsed(prompt.content));
    if (unused.length > 0) {
      warnings.push({
        file,
        reason: `\`variables\` declares ${unused.map((n) => `'${n}'`).join(', ')} but the template never uses `
          + `${unused.length > 1 ? 'them' : 'it'} (render accepts ${unused.length > 1 ? 'them' : 'it'} without requiring ${unused.length > 1 ? 'them' : 'it'})`,
      });
    }
  }
  return warnings.sort(byFile);
}

const byFile = (a: PromptFileProblem, b: PromptFileProblem) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0);

/**
 * Every problem of the prompt files `files` (POSIX paths relative to `root`), in file order; an empty list
 * when all of them would sync.
 */
export function checkPromptFiles(root: string, files: readonly string[]): PromptFileProblem[] {
  const read = readPromptFiles(root, files);
  const problems: PromptFileProblem[] = read.problems.map(({ file, reason }) => ({ file, reason }));
  for (const { file, prompt } of read.prompts) {
    const reason = contentProblem(prompt.id, prompt.content) ?? sizeProblem(pointerItem(prompt.id, prompt.content, {
      ...WORST_CASE_METADATA,
      checksum: checksum(prompt.content),
      sourceChecksum: checksum(prompt.content),
      sourceVersion: prompt.sourceVersion,
      sourceRevision: prompt.revision,
    }));
    if (reason !== undefined) problems.push({ file, reason });
  }
  return problems.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/** `file: reason`, the one-line form the CLI prints and the synth error lists. */
export function formatProblem(problem: PromptFileProblem): string {
  return `${problem.file}: ${problem.reason}`;
}
