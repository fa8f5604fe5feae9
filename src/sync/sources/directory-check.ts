/**
 * Checks prompt files before they ship, by the rules the sync applies when it reads them: the file parses
 * (`parsePromptFile`), its id is not used by another file, its content keeps the wire contract
 * (`contentProblem`) and its pointer item fits in a DynamoDB item (`sizeProblem`).
 *
 * Used at synth time by `PromptSource.fromDirectory` and by `cdk-prompt-serving validate`. Synchronous, so it
 * can run while a CDK app is constructed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { checksum } from '../../schema';
import { contentProblem, pointerItem, sizeProblem } from '../content';
import { parsePromptFile } from './directory';

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
 * Every problem of the prompt files `files` (POSIX paths relative to `root`), in file order; an empty list
 * when all of them would sync.
 */
export function checkPromptFiles(root: string, files: readonly string[]): PromptFileProblem[] {
  const problems: PromptFileProblem[] = [];
  const owners = new Map<string, string>(); // prompt id → first file defining it
  for (const file of files) {
    const fallbackId = file.replace(/\.[^.]+$/, '');
    let reason: string | undefined;
    try {
      const prompt = parsePromptFile(file, fallbackId, fs.readFileSync(path.join(root, ...file.split('/'))));
      const owner = owners.get(prompt.id);
      if (owner) {
        reason = `prompt id ${JSON.stringify(prompt.id)} is already used by ${owner}`;
      } else {
        owners.set(prompt.id, file);
        reason = contentProblem(prompt.id, prompt.content) ?? sizeProblem(pointerItem(prompt.id, prompt.content, {
          ...WORST_CASE_METADATA,
          checksum: checksum(prompt.content),
          sourceChecksum: checksum(prompt.content),
          sourceVersion: prompt.sourceVersion,
          sourceRevision: prompt.revision,
        }));
      }
    } catch (err) {
      reason = (err as Error).message;
    }
    if (reason !== undefined) problems.push({ file, reason });
  }
  return problems;
}

/** `file: reason`, the one-line form the CLI prints and the synth error lists. */
export function formatProblem(problem: PromptFileProblem): string {
  return `${problem.file}: ${problem.reason}`;
}
