/**
 * Keeps what the table holds from driving the operator's terminal. Prompt ids, `activated_by`, source versions
 * and any other stored string may contain escape sequences (`\x1b[2J`, OSC 8 links, a C1 `\x9b` CSI) or
 * bidirectional overrides that reorder what is shown; the CLI prints them as visible `\uXXXX` escapes instead.
 */

/** C0 controls and DEL, C1 controls, and the Unicode bidirectional formatting characters. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/** The same, except line feed: what a whole block of CLI output may still contain. */
const CONTROL_EXCEPT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** One stored value, made safe to print on one line: every control character becomes `\uXXXX`. */
export function printable(value: string): string {
  return value.replace(CONTROL, escape);
}

/**
 * A block of output (lines the CLI composed), made safe to print: control characters other than line feeds
 * become `\uXXXX`. JSON stays valid JSON, since that is also its escape for them.
 */
export function printableBlock(text: string): string {
  return text.replace(CONTROL_EXCEPT_NEWLINE, escape);
}

/** Where the CLI writes (`process.stdout` / `process.stderr` fit). */
export interface CliOutput {
  write(text: string): unknown;
}

export interface CliIo {
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
}
