/** What the CLI prints: one-line results, a version table, JSON. */
import type { ActivationResult, PromptHistory } from '../admin';
import { STATUS_DELETED } from '../schema';

/** Hex digits of a checksum the version table shows (`--json` prints whole checksums). */
const SHORT_CHECKSUM_HEX_DIGITS = 12;
const CHECKSUM_PREFIX = 'sha256:';
/** Marks the version `CURRENT` copies. */
const CURRENT_MARK = '*';
const COLUMN_GAP = '  ';

export function formatActivation(result: ActivationResult): string {
  const { promptId, versionNumber, previousVersionNumber, latestVersionNumber } = result;
  if (!result.changed) return `Version ${versionNumber} of prompt '${promptId}' is already current; nothing was written.\n`;
  return `Activated version ${versionNumber} of prompt '${promptId}' `
    + `(replacing version ${previousVersionNumber}; the latest version is ${latestVersionNumber}).\n`;
}

export function formatHistory(history: PromptHistory): string {
  const { promptId, currentVersionNumber, latestVersionNumber, activatedAt, activatedBy } = history;
  const serving = history.status === STATUS_DELETED
    ? `DELETED at the source, served to nobody (CURRENT copies version ${currentVersionNumber})`
    : `serving version ${currentVersionNumber}`;
  const activated = activatedAt ? `, activated ${activatedAt}${activatedBy ? ` by ${activatedBy}` : ''}` : '';
  const rows = [
    ['', 'VERSION', 'CHECKSUM', 'SOURCE VERSION', 'SYNCED AT'],
    ...history.versions.map((v) => [
      v.current ? CURRENT_MARK : '', String(v.versionNumber), shortChecksum(v.checksum), v.sourceVersion, v.syncedAt,
    ]),
  ];
  return [
    `Prompt '${promptId}': ${serving}${activated}; latest version ${latestVersionNumber}.`,
    '',
    ...alignColumns(rows),
  ].join('\n') + '\n';
}

export function toJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

function shortChecksum(checksum: string): string {
  return checksum.startsWith(CHECKSUM_PREFIX) ? checksum.slice(0, CHECKSUM_PREFIX.length + SHORT_CHECKSUM_HEX_DIGITS) : checksum;
}

function alignColumns(rows: readonly string[][]): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  return rows.map((row) => row.map((cell, c) => cell.padEnd(widths[c])).join(COLUMN_GAP).trimEnd());
}
