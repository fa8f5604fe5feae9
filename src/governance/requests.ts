/**
 * The release function's requests: what the admin API sends (JSON body of a signed POST to the function URL),
 * checked field by field. Anything malformed is a `BadRequest` naming the field; identity fields in the body
 * (an `actor`, a `movedBy`, …) are not part of any request and are ignored: only the URL's verified caller counts.
 *
 * Rollout shares are basis points (`percentBp`, `stepsBp`: whole numbers from 1 to 10,000), the unit readers and the
 * table use. The earlier `percent` / `steps` (in percent, steps of 0.01) are still accepted for one release
 * (deprecated); a request carrying both forms of one share, disagreeing, is refused naming both fields.
 */
import { ReleaseError, ReleaseErrorCode } from './errors';
import { MAX_VERSION_NUMBER, ROLLOUT_SCALE, describePromptId, labelNameProblem, promptIdProblem } from '../schema';
import { CLIENT_TOKEN_PATTERN, RELEASE_ACTIONS } from '../schema/release-api';

/** Most steps a rollout may list. */
export const MAX_ROLLOUT_STEPS = 20;
/** Shortest scheduled step interval: the rollout controller runs once a minute. */
export const MIN_STEP_INTERVAL_SECONDS = 60;
/** Longest scheduled step interval: one week. */
export const MAX_STEP_INTERVAL_SECONDS = 7 * 24 * 3600;
/** Most alarms one rollout may name. */
export const MAX_ROLLOUT_ALARMS = 10;

export interface ActivateRequest { readonly action: 'activate'; readonly promptId: string; readonly version: number; readonly reason?: string; readonly clientToken?: string }
export interface SetLabelRequest { readonly action: 'set-label'; readonly promptId: string; readonly label: string; readonly version: number; readonly reason?: string; readonly clientToken?: string }
export interface StartRolloutRequest {
  readonly action: 'rollout-start';
  readonly promptId: string;
  readonly label: string;
  readonly version: number;
  readonly percentBp: number;
  readonly stepsBp: readonly number[];
  readonly stepIntervalSeconds?: number;
  readonly alarms: readonly string[];
  readonly reason?: string;
  readonly clientToken?: string;
}
export interface StepRolloutRequest { readonly action: 'rollout-step'; readonly promptId: string; readonly label: string; readonly percentBp?: number; readonly reason?: string; readonly clientToken?: string }
export interface PromoteRolloutRequest { readonly action: 'rollout-promote'; readonly promptId: string; readonly label: string; readonly reason?: string; readonly clientToken?: string }
export interface AbortRolloutRequest { readonly action: 'rollout-abort'; readonly promptId: string; readonly label: string; readonly reason?: string; readonly clientToken?: string }

export type ReleaseRequest =
  | ActivateRequest | SetLabelRequest | StartRolloutRequest | StepRolloutRequest | PromoteRolloutRequest | AbortRolloutRequest;

const ACTIONS = RELEASE_ACTIONS;

function bad(message: string, field?: string, value?: unknown, allowed?: string): ReleaseError {
  const detail = field === undefined ? undefined : { field, value: JSON.stringify(value) ?? String(value), allowed };
  return new ReleaseError(ReleaseErrorCode.badRequest, message, detail);
}

/** Lowest share a rollout may give: one basis point, 0.01 %. */
export const MIN_PERCENT = 0.01;

/** The request in a parsed JSON body, checked. */
export function parseReleaseRequest(body: unknown): ReleaseRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('the request body must be a JSON object');
  const b = body as Record<string, unknown>;
  const action = b.action;
  if (typeof action !== 'string' || !(ACTIONS as readonly string[]).includes(action)) {
    throw bad(`\`action\` must be one of ${ACTIONS.join(', ')}, got ${JSON.stringify(action)}`);
  }
  const promptId = parsePromptId(b.promptId);
  const reason = optionalReason(b.reason);
  const clientToken = parseClientToken(b.clientToken);
  return { ...parseAction(action as ReleaseRequest['action'], b, promptId, reason), ...(clientToken !== undefined && { clientToken }) };
}

function parseAction(action: ReleaseRequest['action'], b: Record<string, unknown>, promptId: string, reason: string | undefined): ReleaseRequest {
  switch (action) {
    case 'activate':
      return { action: 'activate', promptId, version: parseVersion(b.version, 'version'), reason };
    case 'set-label':
      return { action: 'set-label', promptId, label: parseLabel(b.label), version: parseVersion(b.version, 'version'), reason };
    case 'rollout-start': {
      const share = parseShare(b);
      if (share === undefined) throw bad('`percentBp` is required: the share of readers served the candidate, in basis points (1 to 10000)', 'percentBp', undefined, BP_ALLOWED);
      const percentBp = share.bp;
      const stepsBp = parseSteps(b, share);
      const stepIntervalSeconds = b.stepIntervalSeconds === undefined ? undefined : parseInterval(b.stepIntervalSeconds);
      if (stepIntervalSeconds !== undefined && stepsBp.length === 0) throw bad('`stepIntervalSeconds` needs `steps` to schedule');
      return {
        action: 'rollout-start',
        promptId,
        label: parseLabel(b.label),
        version: parseVersion(b.version, 'version'),
        percentBp,
        stepsBp,
        stepIntervalSeconds,
        alarms: parseAlarmNames(b.alarms),
        reason,
      };
    }
    case 'rollout-step':
      return { action: 'rollout-step', promptId, label: parseLabel(b.label), percentBp: parseShare(b)?.bp, reason };
    case 'rollout-promote':
      return { action: 'rollout-promote', promptId, label: parseLabel(b.label), reason };
    case 'rollout-abort':
      return { action: 'rollout-abort', promptId, label: parseLabel(b.label), reason };
  }
}

function parseClientToken(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !CLIENT_TOKEN_PATTERN.test(value)) {
    throw bad(`\`clientToken\` must be 1 to 64 letters, digits, '-' or '_', got ${JSON.stringify(value) ?? String(value)}`, 'clientToken', value, CLIENT_TOKEN_PATTERN.source);
  }
  return value;
}

function parsePromptId(value: unknown): string {
  const problem = promptIdProblem(value);
  if (problem !== undefined) throw bad(`\`promptId\` ${describePromptId(value)} is not a prompt id: ${problem}`);
  return value as string;
}

function parseLabel(value: unknown): string {
  const problem = labelNameProblem(value);
  if (problem !== undefined) throw bad(`\`label\`: ${problem}`);
  return value as string;
}

function parseVersion(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_VERSION_NUMBER) {
    throw bad(`\`${field}\` must be a whole number from 1 to ${MAX_VERSION_NUMBER}, got ${JSON.stringify(value) ?? String(value)}`, field, value, `1..${MAX_VERSION_NUMBER}`);
  }
  return value;
}

/** What a share in basis points may be. */
const BP_ALLOWED = `1..${ROLLOUT_SCALE} (basis points, whole numbers)`;

/** A rollout share as basis points: a whole number from 1 to 10,000 (0.01 % to 100 %); anything else is refused naming the field. */
export function parseBp(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw bad(`\`${field}\` must be a number, got ${JSON.stringify(value) ?? String(value)}`, field, value, BP_ALLOWED);
  if (!Number.isInteger(value) || value < 1 || value > ROLLOUT_SCALE) {
    throw bad(`\`${field}\` must be a whole number of basis points from 1 to ${ROLLOUT_SCALE} (0.01 % to 100 %), got ${value}`, field, value, BP_ALLOWED);
  }
  return value;
}

/**
 * A percent (from 0.01 to 100, in steps of 0.01) as basis points; anything else is refused naming the field.
 * Reads the deprecated `percent` / `steps` fields only.
 */
export function percentToBp(value: unknown, field: string): number {
  const allowed = `${MIN_PERCENT}..100 in steps of 0.01`;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw bad(`\`${field}\` must be a number, got ${JSON.stringify(value) ?? String(value)}`, field, value, allowed);
  if (!(value >= MIN_PERCENT && value <= 100)) throw bad(`\`${field}\` must be from ${MIN_PERCENT} to 100 (percent), got ${value}`, field, value, allowed);
  const bp = Math.round(value * 100);
  if (Math.abs(bp - value * 100) > 1e-6) throw bad(`\`${field}\` must be a whole number of hundredths of a percent, got ${value}`, field, value, allowed);
  return Math.min(Math.max(bp, 1), ROLLOUT_SCALE);
}

/** A share read from the request, with the field it came from (for messages). */
interface Share { readonly bp: number; readonly field: 'percentBp' | 'percent' }

/** The request's share: `percentBp`, or the deprecated `percent`; both given must agree. */
function parseShare(b: Record<string, unknown>): Share | undefined {
  const fromBp = b.percentBp === undefined ? undefined : parseBp(b.percentBp, 'percentBp');
  const fromPercent = b.percent === undefined ? undefined : percentToBp(b.percent, 'percent');
  if (fromBp !== undefined && fromPercent !== undefined && fromBp !== fromPercent) {
    throw bad(`\`percentBp\` (${fromBp} bp) and the deprecated \`percent\` (${b.percent} %, ${fromPercent} bp) disagree: send \`percentBp\` alone`,
      'percentBp', { percentBp: b.percentBp, percent: b.percent }, 'one share: `percentBp` alone, or both fields naming the same share');
  }
  if (fromBp !== undefined) return { bp: fromBp, field: 'percentBp' };
  return fromPercent === undefined ? undefined : { bp: fromPercent, field: 'percent' };
}

/** The scheduled steps: `stepsBp`, or the deprecated `steps` (percents); both given must agree. */
function parseSteps(b: Record<string, unknown>, initial: Share): number[] {
  const fromBp = stepList(b.stepsBp, 'stepsBp', parseBp);
  const fromPercent = stepList(b.steps, 'steps', percentToBp);
  if (fromBp !== undefined && fromPercent !== undefined && fromBp.join() !== fromPercent.join()) {
    throw bad(`\`stepsBp\` (${fromBp.join(', ')} bp) and the deprecated \`steps\` (${fromPercent.map((s) => s / 100).join(', ')} %) disagree: send \`stepsBp\` alone`,
      'stepsBp', { stepsBp: b.stepsBp, steps: b.steps }, 'one list: `stepsBp` alone, or both fields naming the same steps');
  }
  const field = fromBp !== undefined ? 'stepsBp' : 'steps';
  const steps = fromBp ?? fromPercent ?? [];
  let previous = initial.bp;
  steps.forEach((s, i) => {
    if (s <= previous) throw bad(`\`${field}\` must rise above \`${initial.field}\` and each other: ${field}[${i}] is ${s} bp (${s / 100} %) after ${previous} bp (${previous / 100} %)`);
    previous = s;
  });
  return steps;
}

function stepList(value: unknown, field: string, parse: (v: unknown, f: string) => number): number[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw bad(`\`${field}\` must be a list of ${field === 'stepsBp' ? 'basis points' : 'percents'}`);
  if (value.length > MAX_ROLLOUT_STEPS) throw bad(`\`${field}\` may list at most ${MAX_ROLLOUT_STEPS} steps, got ${value.length}`);
  return value.map((v, i) => parse(v, `${field}[${i}]`));
}

function parseInterval(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < MIN_STEP_INTERVAL_SECONDS || value > MAX_STEP_INTERVAL_SECONDS) {
    throw bad(`\`stepIntervalSeconds\` must be a whole number from ${MIN_STEP_INTERVAL_SECONDS} to ${MAX_STEP_INTERVAL_SECONDS}, got ${JSON.stringify(value) ?? String(value)}`,
      'stepIntervalSeconds', value, `${MIN_STEP_INTERVAL_SECONDS}..${MAX_STEP_INTERVAL_SECONDS}`);
  }
  return value;
}

function parseAlarmNames(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.length === 0 || v.length > 255)) {
    throw bad('`alarms` must be a list of CloudWatch alarm names');
  }
  if (value.length > MAX_ROLLOUT_ALARMS) throw bad(`\`alarms\` may name at most ${MAX_ROLLOUT_ALARMS} alarms, got ${value.length}`);
  return [...new Set(value as string[])];
}

function optionalReason(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw bad('`reason` must be a string');
  return value;
}
