/**
 * Operator actions on a serving table: inspect a prompt's history and roll it back (or forward) by making an
 * existing version current again. Versions are never rewritten; only `CURRENT` moves, with the same guarded
 * write the sync uses, so neither an activation nor a concurrent sync is ever lost silently.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Attr, CURRENT, MAX_VERSION_NUMBER, STATUS_DELETED, promptIdProblem, versionKey } from '../schema';
import { MAX_AUDIT_LIMIT, queryAudit } from './audit';
import {
  ActivationConflictError,
  PromptAdminError,
  PromptDeletedError,
  AdminPromptNotFoundError,
  PromptTableError,
  PromptVersionNotFoundError,
} from './errors';
import { PromptHistory, queryHistory } from './history';
import { ReleaseClient } from './release-client';
import type { AuditRecord, ReleaseAnswer } from '../schema/release-api';
import { ReplacedPointer, activatedPointerItem } from '../write/activation';
import { backoffDelay, sleep } from '../write/pacer';
import { ServingTableStore } from '../write/store';

/** Guarded pointer writes an activation tries (re-reading the pointer before each retry) before giving up. */
export const MAX_ACTIVATION_ATTEMPTS = 3;

export interface PromptAdminOptions {
  /** Name of the serving table. */
  readonly tableName: string;
  /**
   * The DynamoDB client to use.
   * @default - `new DynamoDBClient({})`: region, credentials and endpoint (`AWS_ENDPOINT_URL_DYNAMODB`) from the standard AWS environment
   */
  readonly dynamoDBClient?: DynamoDBClient;
  /**
   * The release function's URL (`PromptServingTable.releaseFunctionUrl`), for labels, rollouts and `moveCurrent`.
   * Calls are signed with SigV4 with the DynamoDB client's credentials and region.
   * @default - the `PROMPT_SERVING_RELEASE_URL` environment variable; without either, those methods throw
   */
  readonly releaseUrl?: string;
}

/** The environment variable naming the release function's URL when `releaseUrl` is not given. */
export const RELEASE_URL_ENV = 'PROMPT_SERVING_RELEASE_URL';

/** Why a move through the release path was asked for, recorded in its audit record. */
export interface ReleaseOptions {
  /**
   * Free text, recorded as the audit record's `reason` (at most 1,000 characters kept).
   * @default - no reason recorded
   */
  readonly reason?: string;
  /**
   * The move's client token: one per intent, reused on every retry of it. A retry whose move had already committed
   * (same caller, same request, within 24 hours) answers that move (`replayed: true`) and moves nothing. The admin API
   * retries a call that got no answer with the same token by itself; pass one to retry across processes.
   * @default - a new random token per call
   */
  readonly clientToken?: string;
}

/** A rollout to start on a label. */
export interface StartRolloutOptions extends ReleaseOptions {
  /**
   * The share of readers (by stickiness key) served the candidate at first, in basis points: a whole number from 1
   * to 10,000 (1000 = 10 %), the unit of label items and readers. Required unless the deprecated `percent` is given.
   */
  readonly percentBp?: number;
  /**
   * Shares to step to, rising, in basis points (e.g. `[5000, 10000]`).
   * @default - none: step with an explicit share
   */
  readonly stepsBp?: number[];
  /** @deprecated use `percentBp` (basis points: `percent * 100`); accepted for one release. */
  readonly percent?: number;
  /** @deprecated use `stepsBp` (basis points); accepted for one release. */
  readonly steps?: number[];
  /**
   * Seconds between scheduled steps (60 to 604,800): the rollout controller takes each step when due, and
   * promotes one interval after reaching 100 %.
   * @default - steps are manual (`stepRollout`)
   */
  readonly stepIntervalSeconds?: number;
  /**
   * CloudWatch alarms (among the construct's `rolloutAlarms`) whose ALARM state aborts the rollout.
   * @default - none
   */
  readonly alarms?: string[];
}

/** One step of a rollout. */
export interface StepRolloutOptions extends ReleaseOptions {
  /**
   * The share to step to (above the current one), in basis points: a whole number from 1 to 10,000.
   * @default - the rollout's next step
   */
  readonly percentBp?: number;
  /** @deprecated use `percentBp` (basis points: `percent * 100`); accepted for one release. */
  readonly percent?: number;
}

/**
 * What a move through the release path did (the release function's answer): the release API's one answer type.
 * `replayed: true` when a retry found the move already committed; `auditEvent` says whether its EventBridge event went out.
 */
export type ReleaseResult = ReleaseAnswer;

export interface ListAuditOptions {
  /**
   * Most records to return (1 to 1,000), newest first.
   * @default 50
   */
  readonly limit?: number;
}

export interface GetOptions {
  /**
   * An exact version number.
   * @default - the `CURRENT` pointer
   */
  readonly version?: number;
}

export interface ActivateOptions {
  /**
   * Who asked for the activation, recorded as `activated_by` on the pointer.
   * @default - not recorded
   */
  readonly activatedBy?: string;
}

/** What `activate` did. */
export interface ActivationResult {
  readonly promptId: string;
  /** The version `CURRENT` now copies. */
  readonly versionNumber: number;
  /** Its checksum. */
  readonly checksum: string;
  /** The version `CURRENT` copied before (equal to `versionNumber` when nothing changed). */
  readonly previousVersionNumber: number;
  /** The highest version ever written (an activation keeps it; the next source change gets this + 1). */
  readonly latestVersionNumber: number;
  /** `false` when the version was already current: nothing was written. */
  readonly changed: boolean;
  /** When `CURRENT` was written (only when `changed`). */
  readonly activatedAt?: string;
}

export class PromptAdmin {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly store: ServingTableStore;

  private readonly releaseUrl?: string;

  constructor(options: PromptAdminOptions) {
    this.client = options.dynamoDBClient ?? new DynamoDBClient({});
    this.tableName = options.tableName;
    this.store = new ServingTableStore(this.client, this.tableName);
    this.releaseUrl = options.releaseUrl ?? (process.env[RELEASE_URL_ENV] || undefined);
  }

  /**
   * Points a label at an existing version (creating the label, or moving it), through the release function:
   * gated, audited with the caller's IAM principal, conditioned on the label being what was read.
   *
   * @example
   * await admin.setLabel('greeting', 'production', 3, { reason: 'ticket 42' });
   * @throws AdminPromptNotFoundError, PromptVersionNotFoundError, PromptDeletedError, GateDeniedError,
   *   ReleaseForbiddenError, ReleaseConflictError, ReleaseRefusedError (e.g. `RolloutInProgress`), ReleaseCallError
   */
  async setLabel(promptId: string, label: string, versionNumber: number, options: ReleaseOptions = {}): Promise<ReleaseResult> {
    return this.release({ action: 'set-label', promptId, label, version: versionNumber, reason: options.reason, clientToken: options.clientToken }, versionNumber);
  }

  /**
   * Makes an existing version `CURRENT` through the release function (gated, audited): the governed counterpart
   * of {@link activate}, which writes the table directly.
   *
   * @example
   * await admin.moveCurrent('greeting', 2, { reason: 'v3 breaks checkout' });
   */
  async moveCurrent(promptId: string, versionNumber: number, options: ReleaseOptions = {}): Promise<ReleaseResult> {
    return this.release({ action: 'activate', promptId, version: versionNumber, reason: options.reason, clientToken: options.clientToken }, versionNumber);
  }

  /**
   * Starts a sticky gradual rollout of `versionNumber` on `label` (the label keeps serving its own version to the
   * rest). Refused when the label has a rollout already, or an alarm is not one the construct watches.
   *
   * @example
   * await admin.startRollout('greeting', 'production', 4, { percentBp: 1000, stepsBp: [5000, 10000], stepIntervalSeconds: 900, alarms: ['checkout-errors'] });
   */
  async startRollout(promptId: string, label: string, versionNumber: number, options: StartRolloutOptions): Promise<ReleaseResult> {
    return this.release({
      action: 'rollout-start',
      promptId,
      label,
      version: versionNumber,
      percentBp: options.percentBp,
      stepsBp: options.stepsBp,
      percent: options.percent,
      steps: options.steps,
      stepIntervalSeconds: options.stepIntervalSeconds,
      alarms: options.alarms,
      reason: options.reason,
      clientToken: options.clientToken,
    }, versionNumber);
  }

  /**
   * Raises a rollout's share: to `percentBp`, or to its next step.
   *
   * @example
   * await admin.stepRollout('greeting', 'production', { percentBp: 5000 });
   */
  async stepRollout(promptId: string, label: string, options: StepRolloutOptions = {}): Promise<ReleaseResult> {
    return this.release({ action: 'rollout-step', promptId, label, percentBp: options.percentBp, percent: options.percent, reason: options.reason, clientToken: options.clientToken });
  }

  /**
   * Ends a rollout by making the candidate what the label serves.
   *
   * @example
   * await admin.promoteRollout('greeting', 'production');
   */
  async promoteRollout(promptId: string, label: string, options: ReleaseOptions = {}): Promise<ReleaseResult> {
    return this.release({ action: 'rollout-promote', promptId, label, reason: options.reason, clientToken: options.clientToken });
  }

  /**
   * Ends a rollout: every reader is back on the label's own version.
   *
   * @example
   * await admin.abortRollout('greeting', 'production', { reason: 'error rate' });
   */
  async abortRollout(promptId: string, label: string, options: ReleaseOptions = {}): Promise<ReleaseResult> {
    return this.release({ action: 'rollout-abort', promptId, label, reason: options.reason, clientToken: options.clientToken });
  }

  /**
   * The prompt's audit trail, newest first: every pointer move (sync, activation, label, rollout, gate denial)
   * with who, when, from → to and why. One strongly consistent Query; read access is enough.
   *
   * @example
   * const records = await admin.listAudit('greeting', { limit: 20 });
   * // [{ action: 'rollout-abort', target: 'production', fromVersion: 4, toVersion: 3, actor: 'arn:aws:iam::…', … }, …]
   */
  async listAudit(promptId: string, options: ListAuditOptions = {}): Promise<AuditRecord[]> {
    checkPromptId(promptId);
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_LIMIT) {
      throw new RangeError(`limit must be a whole number from 1 to ${MAX_AUDIT_LIMIT}, got ${limit}`);
    }
    return this.tableCall(`listing the audit trail of prompt '${promptId}'`, () => queryAudit(this.client, this.tableName, promptId, limit));
  }

  private async release(body: Record<string, unknown>, versionNumber?: number): Promise<ReleaseResult> {
    const promptId = String(body.promptId);
    checkPromptId(promptId);
    if (!this.releaseUrl) {
      throw new PromptAdminError(`moving labels, rollouts and CURRENT through the release path needs the release function's URL: pass \`releaseUrl\` (PromptServingTable.releaseFunctionUrl) or set ${RELEASE_URL_ENV}`);
    }
    const client = new ReleaseClient(this.releaseUrl, this.client);
    return client.call({ ...body, clientToken: body.clientToken ?? randomUUID() }, { promptId, version: versionNumber });
  }

  /**
   * The pointer's state and every version of a prompt, oldest first (one strongly consistent Query).
   *
   * @example
   * const history = await admin.listVersions('greeting');
   * // { status: 'ACTIVE', currentVersionNumber: 2, latestVersionNumber: 3,
   * //   versions: [{ versionNumber: 1, current: false, … }, { versionNumber: 2, current: true, … }, …] }
   * @throws AdminPromptNotFoundError, PromptTableError
   */
  async listVersions(promptId: string): Promise<PromptHistory> {
    checkPromptId(promptId);
    const history = await this.tableCall(`listing versions of prompt '${promptId}'`,
      () => queryHistory(this.client, this.tableName, promptId));
    if (!history) throw new AdminPromptNotFoundError(promptId);
    return history;
  }

  /**
   * The `CURRENT` pointer (also when `DELETED`), or one immutable version item, as stored: a plain object with
   * the wire contract's snake_case attribute names. Strongly consistent.
   *
   * @example
   * const current = await admin.get('greeting');                 // { version: 'CURRENT', version_number: 3, text: …, … }
   * const first = await admin.get('greeting', { version: 1 });  // { version: 'v000001', version_number: 1, … }
   * @throws AdminPromptNotFoundError, PromptVersionNotFoundError, PromptTableError
   */
  async get(promptId: string, options: GetOptions = {}): Promise<Record<string, unknown>> {
    const { version } = options;
    checkPromptId(promptId);
    if (version !== undefined) checkVersionNumber(promptId, version);
    const sortKey = version === undefined ? CURRENT : versionKey(version);
    const item = await this.tableCall(`reading prompt '${promptId}'`, () => this.store.getItem(promptId, sortKey));
    if (item) return item;
    throw version === undefined ? new AdminPromptNotFoundError(promptId) : new PromptVersionNotFoundError(promptId, version);
  }

  /**
   * Makes an existing version current again (a rollback, or a roll forward): copies the immutable version item
   * into `CURRENT`, conditioned on the pointer still being what was read. A lost race re-reads the pointer and
   * tries again, up to {@link MAX_ACTIVATION_ATTEMPTS} writes in all. History is never rewritten.
   *
   * The activated version stays current through syncs that find the source unchanged; the next real change at
   * the source is written as a new version (`latestVersionNumber + 1`) and replaces it.
   *
   * Activating the version that is already current writes nothing and returns `changed: false`.
   *
   * @example
   * const result = await admin.activate('greeting', 2, { activatedBy: 'alice' });
   * // { versionNumber: 2, previousVersionNumber: 3, latestVersionNumber: 3, changed: true, … }
   * @throws AdminPromptNotFoundError, PromptVersionNotFoundError, PromptDeletedError, ActivationConflictError, PromptTableError
   */
  async activate(promptId: string, versionNumber: number, options: ActivateOptions = {}): Promise<ActivationResult> {
    checkPromptId(promptId);
    checkVersionNumber(promptId, versionNumber);
    return this.tableCall(`activating version ${versionNumber} of prompt '${promptId}'`, async () => {
      const [read, version] = await Promise.all([
        this.store.getPointerItem(promptId),
        this.store.getItem(promptId, versionKey(versionNumber)),
      ]);
      let pointer = read;
      for (let attempt = 1; ; attempt++) {
        const outcome = await this.activateOver(pointer, promptId, versionNumber, version, options.activatedBy);
        if (outcome !== 'conflict') return outcome;
        if (attempt === MAX_ACTIVATION_ATTEMPTS) throw new ActivationConflictError(promptId, versionNumber, attempt);
        await sleep(backoffDelay(attempt, { baseDelayMs: 50, maxDelayMs: 2_000 }));
        pointer = await this.store.getPointerItem(promptId);
      }
    });
  }

  /** One guarded attempt: decides from `pointer` as read, and writes only if it is still what `CURRENT` holds. */
  private async activateOver(
    pointer: ReplacedPointer | undefined,
    promptId: string,
    versionNumber: number,
    version: Record<string, unknown> | undefined,
    activatedBy: string | undefined,
  ): Promise<ActivationResult | 'conflict'> {
    if (!pointer) throw new AdminPromptNotFoundError(promptId);
    if (pointer.state.status === STATUS_DELETED) throw new PromptDeletedError(promptId);
    if (!version) throw new PromptVersionNotFoundError(promptId, versionNumber);
    const result = {
      promptId,
      versionNumber,
      checksum: version[Attr.checksum] as string,
      previousVersionNumber: pointer.state.versionNumber,
      latestVersionNumber: pointer.state.latestVersionNumber,
    };
    if (pointer.state.versionNumber === versionNumber) return { ...result, changed: false };
    const activatedAt = new Date().toISOString();
    const item = activatedPointerItem(promptId, version, pointer, { at: activatedAt, by: activatedBy });
    const outcome = await this.store.putPointer(item, pointer.state);
    return outcome === 'written' ? { ...result, changed: true, activatedAt } : 'conflict';
  }

  /** Runs table calls, turning AWS SDK failures into a `PromptTableError` (the SDK error is its `cause`). */
  private async tableCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof PromptAdminError) throw err;
      const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      throw new PromptTableError(this.tableName, `${what} in table '${this.tableName}' failed: ${reason}`, { cause: err });
    }
  }
}

/** Ids that can never exist (empty, too long, reserved `#…` like the catalog) are simply not found. */
function checkPromptId(promptId: string): void {
  const problem = promptIdProblem(promptId);
  if (problem !== undefined) throw new AdminPromptNotFoundError(promptId, problem);
}

function checkVersionNumber(promptId: string, versionNumber: number): void {
  if (!Number.isInteger(versionNumber) || versionNumber < 1 || versionNumber > MAX_VERSION_NUMBER) {
    throw new PromptVersionNotFoundError(promptId, versionNumber);
  }
}
