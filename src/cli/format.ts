/** What the CLI prints: one-line results, a version table, JSON. */
import type { PromptListing, ValidationResult } from './commands';
import { printable } from './terminal';
import type { ActivationResult, PromptHistory, ReleaseResult } from '../admin';
import { STATUS_DELETED } from '../schema';
import type { AuditRecord } from '../schema/release-api';
import type { SyncReport } from '../sync/engine';

/** Hex digits of a checksum the version table shows (`--json` prints whole checksums). */
const SHORT_CHECKSUM_HEX_DIGITS = 12;
const CHECKSUM_PREFIX = 'sha256:';
/** Marks the version `CURRENT` copies. */
const CURRENT_MARK = '*';
const COLUMN_GAP = '  ';

export function formatActivation(result: ActivationResult): string {
  const { versionNumber, previousVersionNumber, latestVersionNumber } = result;
  const promptId = printable(result.promptId);
  if (!result.changed) return `Version ${versionNumber} of prompt '${promptId}' is already current; nothing was written.\n`;
  return `Activated version ${versionNumber} of prompt '${promptId}' `
    + `(replacing version ${previousVersionNumber}; the latest version is ${latestVersionNumber}).\n`;
}

export function formatHistory(history: PromptHistory): string {
  const { currentVersionNumber, latestVersionNumber } = history;
  const [promptId, activatedAt, activatedBy] = [history.promptId, history.activatedAt, history.activatedBy].map((v) => v && printable(v));
  const serving = history.status === STATUS_DELETED
    ? `DELETED at the source, served to nobody (CURRENT copies version ${currentVersionNumber})`
    : `serving version ${currentVersionNumber}`;
  const activated = activatedAt ? `, activated ${activatedAt}${activatedBy ? ` by ${activatedBy}` : ''}` : '';
  const rows = [
    ['', 'VERSION', 'CHECKSUM', 'SOURCE VERSION', 'SYNCED AT'],
    ...history.versions.map((v) => [
      v.current ? CURRENT_MARK : '', String(v.versionNumber), shortChecksum(v.checksum), v.sourceVersion, v.syncedAt,
    ].map(printable)),
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

/** JSON with every object's keys in sorted order, so the same item always prints the same way (`get`). */
export function toSortedJson(value: unknown): string {
  return toJson(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]));
}

export function formatListing(rows: readonly PromptListing[]): string {
  if (rows.length === 0) return 'No prompts in this table.\n';
  return alignColumns([
    ['PROMPT', 'VERSION', 'STATUS', 'SYNCED AT'],
    ...rows.map((r) => [r.promptId, String(r.versionNumber), r.status, r.syncedAt].map(printable)),
  ]).join('\n') + '\n';
}

export function formatSyncReport(report: SyncReport): string {
  const lines = [
    `Synced ${report.scanned} prompt(s): ${report.written} written, ${report.unchanged} unchanged, `
      + `${report.deleted} marked deleted, ${report.failed} failed${report.complete ? '' : ' (incomplete: deletions were not checked)'}.`,
    ...report.failures.map((f) => `failed: ${printable(f.id)}: ${printable(f.reason)}`),
  ];
  return lines.join('\n') + '\n';
}

export function formatValidation(directory: string, result: ValidationResult): string {
  const warnings = (result.warnings ?? []).map((line) => `warning: ${printable(line)}\n`).join('');
  if (result.problems.length === 0) return `${warnings}${printable(directory)}: ${result.files} prompt file(s), all valid.\n`;
  return result.problems.map((line) => printable(line) + '\n').join('') + warnings;
}

function shortChecksum(checksum: string): string {
  return checksum.startsWith(CHECKSUM_PREFIX) ? checksum.slice(0, CHECKSUM_PREFIX.length + SHORT_CHECKSUM_HEX_DIGITS) : checksum;
}

function alignColumns(rows: readonly string[][]): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  return rows.map((row) => row.map((cell, c) => cell.padEnd(widths[c])).join(COLUMN_GAP).trimEnd());
}

/** One line saying what a release move did. */
export function formatRelease(result: ReleaseResult): string {
  const notes = [
    result.replayed ? 'A retry: this move had already been made (same client token); nothing moved now.\n' : '',
    result.auditEvent === 'failed' ? 'The move and its audit record are committed; its EventBridge event could not be sent.\n' : '',
  ].join('');
  return formatMove(result) + notes;
}

function formatMove(result: ReleaseResult): string {
  const promptId = printable(result.promptId);
  const target = result.target === 'CURRENT' ? 'CURRENT' : `label '${printable(result.target)}'`;
  if (!result.changed) return `${target} of prompt '${promptId}' already serves version ${result.toVersion}; nothing was written.\n`;
  const from = result.fromVersion === undefined ? '' : ` (was version ${result.fromVersion})`;
  switch (result.action) {
    case 'rollout-start':
    case 'rollout-step':
      return `Rollout of version ${result.toVersion} on ${target} of prompt '${promptId}' at ${shareText(result.percentBp ?? (result.percent === undefined ? undefined : Math.round(result.percent * 100)))}`
        + `${result.nextStepAt ? `; next step due ${result.nextStepAt}` : ''}.\n`;
    case 'rollout-promote':
      return `Promoted: ${target} of prompt '${promptId}' serves version ${result.toVersion}${from}.\n`;
    case 'rollout-abort':
      return `Aborted: ${target} of prompt '${promptId}' serves version ${result.toVersion} to everyone.\n`;
    default:
      return `${target} of prompt '${promptId}' serves version ${result.toVersion}${from}.\n`;
  }
}

/** The audit trail, newest first, one aligned row per record. */
export function formatAudit(promptId: string, records: readonly AuditRecord[]): string {
  if (records.length === 0) return `Prompt '${printable(promptId)}': no audit records.\n`;
  const rows = [
    ['AT', 'ACTION', 'TARGET', 'FROM', 'TO', 'ACTOR', 'REASON'],
    ...records.map((r) => [
      r.at, r.action + (r.percentBp !== undefined && r.action.startsWith('rollout') ? ` ${r.percentBp / 100}%` : ''), r.target,
      r.fromVersion === undefined ? '-' : String(r.fromVersion), r.toVersion === undefined ? '-' : String(r.toVersion), r.actor, r.reason ?? '',
    ].map(printable)),
  ];
  return [`Prompt '${printable(promptId)}': audit trail, newest first.`, '', ...alignColumns(rows)].join('\n') + '\n';
}

/** A share for people: percent, with the basis points the API takes (`10 % (1000 bp)`). */
function shareText(percentBp: number | undefined): string {
  return percentBp === undefined ? 'an unknown share' : `${percentBp / 100} % (${percentBp} bp)`;
}
