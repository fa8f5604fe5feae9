import { scanPromptDirectory } from '../sync/sources/directory';
import { checkPromptDirectory, formatProblem, promptFileWarnings } from '../sync/sources/directory-check';

/** The prop that lets a directory with broken prompt files deploy anyway. */
export const ALLOW_INVALID_PROP = 'allowInvalidPromptFiles';

/**
 * Checks, at synth, the directory and every prompt file the layer will ship by the sync's own rules (the
 * functions `validate` and the sync run: sync/sources/directory-check.ts).
 * Throws one error listing each bad file and its reason, unless `allowInvalid`; then returns the problems as
 * lines for warnings (those files are reported as failed prompts by each sync, the others deploy).
 */
export function checkPromptDirectoryAtSynth(dir: string, allowInvalid: boolean): string[] {
  const lines = checkPromptDirectory(dir).problems.map(formatProblem);
  if (lines.length > 0 && !allowInvalid) {
    throw new Error(`PromptSource.fromDirectory('${dir}'): ${lines.length} prompt file(s) cannot be synced:\n`
      + lines.map((line) => `  ${line}\n`).join('')
      + `Fix them (\`npx cdk-prompt-serving validate ${dir}\` checks the same rules), or set \`${ALLOW_INVALID_PROP}: true\` `
      + 'to deploy the others (each sync then reports these as failed prompts and keeps serving their last good version)');
  }
  return lines;
}

/**
 * The warnings of the directory's prompt files (a variable before a cache point, declared variables never used), as
 * `file: reason` lines for `Annotations.addWarningV2` at synth: they deploy, and `validate` prints the same lines.
 */
export function promptDirectoryWarningsAtSynth(dir: string): string[] {
  return promptFileWarnings(dir, scanPromptDirectory(dir).files).map(formatProblem);
}
