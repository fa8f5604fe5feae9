/**
 * Sources: facts the construct (IAM, event rule, validation) and the sync handler must agree on.
 */

/** Bedrock Prompt Management's `GetPrompt` quota, and separately `ListPrompts`': requests/second per account and Region. */
export const BEDROCK_PROMPT_QUOTA_PER_SECOND = 10;
/** Default pace of one sync's Bedrock calls: half the quota, leaving the rest to every other caller. */
export const DEFAULT_SOURCE_REQUESTS_PER_SECOND = BEDROCK_PROMPT_QUOTA_PER_SECOND / 2;
/** A Bedrock prompt id: 10 letters or digits. */
export const BEDROCK_PROMPT_ID = /^[0-9a-zA-Z]{10}$/;
/** Bedrock calls whose successful CloudTrail records trigger a one-prompt sync. */
export const PROMPT_CHANGE_EVENT_NAMES: readonly string[] = ['CreatePrompt', 'UpdatePrompt', 'CreatePromptVersion', 'DeletePrompt'];

/** File types a prompts-as-code directory is read for. */
export const PROMPT_FILE_EXTENSIONS: readonly string[] = ['.md', '.yaml', '.yml', '.json'];

/** Directory entries a prompts-as-code directory skips: names starting with `.` or `_`. */
export function isSkippedEntry(name: string): boolean {
  return name.startsWith('.') || name.startsWith('_');
}

/** Whether a file (by name) is a prompt file: a prompt extension, and not `README.md`. */
export function isPromptFile(name: string): boolean {
  const lower = name.toLowerCase();
  const dot = lower.lastIndexOf('.');
  return lower !== 'readme.md' && dot > 0 && PROMPT_FILE_EXTENSIONS.includes(lower.slice(dot));
}
