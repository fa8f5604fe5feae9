/**
 * The release engine: every move of a label, of a rollout, and every activation of `CURRENT` made through the
 * release path. Each move reads what it replaces (strongly consistent; ./release-reads.ts), asks the activation
 * gate, and writes in one transaction the guarded pointer (conditioned on the pointer still being what was read),
 * the rollout registry entry when a rollout starts or ends, and the audit record (never overwritten). A lost race
 * re-reads and decides again, up to {@link MAX_RELEASE_ATTEMPTS} times; nothing is ever overwritten. After the
 * write, one EventBridge event per audit record. This file holds the moves: what each reads and decides; how a
 * decision is gated, written, retried, audited and answered is ./move-runner.ts.
 *
 * Who may ask is decided before (principal.ts, by the release function): the engine takes the actor as given.
 */
import { randomBytes } from 'node:crypto';
import type { DynamoDBClient, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import {
  ReleaseError,
  ReleaseErrorCode,
  labelNotFound,
  promptDeleted,
  promptNotFound,
  rolloutInProgress,
  rolloutNotFound,
  versionNotFound,
} from './errors';
import { MoveRunner } from './move-runner';
import { ReleaseReads } from './release-reads';
import type {
  AbortRolloutRequest,
  ActivateRequest,
  PromoteRolloutRequest,
  SetLabelRequest,
  StartRolloutRequest,
  StepRolloutRequest,
} from './requests';
import { parseRolloutItem } from './rollout-items';
import { RegistryScan, scanRegistry } from './rollout-registry';
import {
  Attr,
  CURRENT,
  LabelAttr,
  ROLLOUT_SCALE,
  STATUS_DELETED,
} from '../schema';
import { Item, fromItem } from '../schema/ddb-codec';
import type { ReleaseAnswer } from '../schema/release-api';
import { activatedPointerItem } from '../write/activation';
import type { AuditEvents } from '../write/audit';
import type { ActivationGate } from '../write/gate';
import {
  Rollout,
  RegistryEntry,
  labelItemFromVersion,
  labelItemWithRollout,
  nextRevisionOf,
  registryItem,
} from '../write/label-item';
import { LabelWrites } from '../write/label-writes';
import { ServingTableStore } from '../write/store';

export { MAX_RELEASE_ATTEMPTS } from './move-runner';

export interface ReleaseEngineOptions {
  readonly dynamoDBClient: DynamoDBClient;
  readonly tableName: string;
  readonly gate: ActivationGate;
  /** Where audit events go; `undefined`: no events (the records are still written). */
  readonly events?: AuditEvents;
  /** Seconds audit records are kept; `undefined`: forever. */
  readonly auditRetentionSeconds?: number;
  /** Alarm names a rollout may name (the construct's `rolloutAlarms`). */
  readonly allowedAlarms: readonly string[];
  /** The clock (epoch ms). */
  readonly now?: () => number;
}

/** What a move did: the release API's one answer type. */
export type MoveResult = ReleaseAnswer;

/** Options of the moves the rollout controller makes. */
export interface ControllerMoveOptions {
  /** Act only if the label's rollout is still this one. */
  readonly rolloutId?: string;
  /** A scheduled step: a gate denial postpones the step by the interval instead of failing. */
  readonly scheduled?: boolean;
}

export class ReleaseEngine {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly store: ServingTableStore;
  private readonly writes: LabelWrites;
  private readonly runner: MoveRunner;
  private readonly reads: ReleaseReads;
  private readonly now: () => number;

  constructor(private readonly options: ReleaseEngineOptions) {
    this.client = options.dynamoDBClient;
    this.tableName = options.tableName;
    this.store = new ServingTableStore(this.client, this.tableName);
    this.writes = new LabelWrites(this.client, this.tableName);
    this.now = options.now ?? Date.now;
    this.reads = new ReleaseReads(this.store, this.writes);
    this.runner = new MoveRunner({
      dynamoDBClient: this.client,
      tableName: this.tableName,
      writes: this.writes,
      gate: options.gate,
      events: options.events,
      auditRetentionSeconds: options.auditRetentionSeconds,
      now: this.now,
    });
  }

  /** Makes version `version` what `CURRENT` serves (a rollback or roll forward), gated and audited. */
  activate(req: ActivateRequest, actor: string): Promise<MoveResult> {
    return this.runner.run(req, actor, async () => {
      const [pointer, version] = await Promise.all([this.store.getPointerItem(req.promptId), this.reads.version(req.promptId, req.version)]);
      if (!pointer) throw promptNotFound(req.promptId);
      if (pointer.state.status === STATUS_DELETED) throw promptDeleted(req.promptId);
      if (!version) throw versionNotFound(req.promptId, req.version);
      const at = this.isoNow();
      const base = { promptId: req.promptId, target: CURRENT, action: 'activate' as const, fromVersion: pointer.state.versionNumber, toVersion: req.version, at };
      if (pointer.state.versionNumber === req.version) return { ...base, changed: false };
      await this.runner.gateOrDeny({ ...base, actor, reason: req.reason }, version);
      const item = activatedPointerItem(req.promptId, version, pointer, { at, by: actor });
      return {
        writes: [this.store.pointerPut(item, pointer.state)],
        audit: { ...base, actor, reason: req.reason },
        result: { ...base, changed: true },
      };
    });
  }

  /** Points `label` at version `version` (creating the label), gated and audited. Refused while a rollout runs. */
  setLabel(req: SetLabelRequest, actor: string): Promise<MoveResult> {
    return this.runner.run(req, actor, async () => {
      const [pointer, version, labelRead] = await Promise.all([
        this.store.getPointerItem(req.promptId), this.reads.version(req.promptId, req.version), this.writes.getLabel(req.promptId, req.label),
      ]);
      if (!pointer) throw promptNotFound(req.promptId);
      if (pointer.state.status === STATUS_DELETED) throw promptDeleted(req.promptId);
      if (!version) throw versionNotFound(req.promptId, req.version);
      const label = labelRead && fromItem(labelRead);
      if (label?.[LabelAttr.rollout] !== undefined) throw rolloutInProgress(req.promptId, req.label);
      const at = this.isoNow();
      const fromVersion = label ? label[Attr.versionNumber] as number : undefined;
      const base = { promptId: req.promptId, target: req.label, action: 'label' as const, fromVersion, toVersion: req.version, at };
      if (label && fromVersion === req.version && label[Attr.checksum] === version[Attr.checksum] && label[LabelAttr.sourceDeletedAt] === undefined) {
        return { ...base, changed: false };
      }
      await this.runner.gateOrDeny({ ...base, actor, reason: req.reason }, version);
      const item = labelItemFromVersion(req.promptId, req.label, version, { at, by: actor }, nextRevisionOf(labelRead));
      return {
        writes: [this.writes.guardedLabelPut(item, labelRead), this.writes.servedCheck(req.promptId)],
        audit: { ...base, actor, reason: req.reason },
        result: { ...base, changed: true },
      };
    });
  }

  /** Starts a rollout of version `version` on `label` at `percentBp`, with optional steps, schedule and alarms. */
  async startRollout(req: StartRolloutRequest, actor: string): Promise<MoveResult> {
    const unknown = req.alarms.filter((a) => !this.options.allowedAlarms.includes(a));
    if (unknown.length > 0) {
      const known = this.options.allowedAlarms.length > 0 ? this.options.allowedAlarms.join(', ') : 'none: the construct was given no `rolloutAlarms`';
      throw new ReleaseError(ReleaseErrorCode.badRequest, `unknown alarm${unknown.length > 1 ? 's' : ''} ${unknown.map((a) => `'${a}'`).join(', ')}: a rollout may name only the alarms the construct watches (${known})`);
    }
    return this.runner.run(req, actor, async () => {
      const [pointer, version, labelRead] = await Promise.all([
        this.store.getPointerItem(req.promptId), this.reads.version(req.promptId, req.version), this.writes.getLabel(req.promptId, req.label),
      ]);
      if (!pointer) throw promptNotFound(req.promptId);
      if (pointer.state.status === STATUS_DELETED) throw promptDeleted(req.promptId);
      if (!version) throw versionNotFound(req.promptId, req.version);
      if (!labelRead) throw labelNotFound(req.promptId, req.label);
      const label = fromItem(labelRead);
      if (label[LabelAttr.rollout] !== undefined) throw rolloutInProgress(req.promptId, req.label);
      const fromVersion = label[Attr.versionNumber] as number;
      if (fromVersion === req.version) {
        throw new ReleaseError(ReleaseErrorCode.badRequest, `label '${req.label}' of prompt '${req.promptId}' already serves version ${req.version}: nothing to roll out`);
      }
      const at = this.isoNow();
      const rollout: Rollout = {
        rolloutId: randomBytes(8).toString('hex'),
        candidateVersion: req.version,
        candidateChecksum: version[Attr.checksum] as string,
        percentBp: req.percentBp,
        stepsBp: req.stepsBp,
        stepIntervalSeconds: req.stepIntervalSeconds,
        nextStepAt: req.stepIntervalSeconds === undefined ? undefined : this.isoIn(req.stepIntervalSeconds),
        alarms: req.alarms,
        startedAt: at,
        startedBy: actor,
      };
      const base = {
        promptId: req.promptId,
        target: req.label,
        action: 'rollout-start' as const,
        fromVersion,
        toVersion: req.version,
        at,
        rolloutId: rollout.rolloutId,
        percentBp: rollout.percentBp,
      };
      await this.runner.gateOrDeny({ ...base, actor, reason: req.reason }, version);
      return {
        writes: this.rolloutWrites(req, labelRead, rollout, { at, by: actor }),
        audit: { ...base, actor, reason: req.reason },
        result: { ...base, changed: true, percent: rollout.percentBp / 100, nextStepAt: rollout.nextStepAt },
      };
    });
  }

  /**
   * Raises the rollout's share: to `percentBp` when given (above the current share), else to its next step.
   * At 100 % with a schedule, the next due step promotes (the interval is the bake time).
   */
  stepRollout(req: StepRolloutRequest, actor: string, options: ControllerMoveOptions = {}): Promise<MoveResult> {
    // "The next step" is resolved once, on the first read: a retry after losing a race to another move never plans
    // a second step from where the winner left the rollout.
    let intended: number | undefined;
    return this.runner.run(req, actor, async () => {
      const { labelRead, rollout } = await this.reads.readRollout(req.promptId, req.label, options.rolloutId);
      await this.reads.requireServed(req.promptId);
      let percentBp: number;
      let stepsBp: readonly number[];
      if (req.percentBp !== undefined) {
        if (req.percentBp <= rollout.percentBp) {
          throw new ReleaseError(ReleaseErrorCode.badRequest, `a step must raise the share: the rollout of '${req.label}' is at ${rollout.percentBp / 100} %, asked for ${req.percentBp / 100} % (abort to go back)`);
        }
        percentBp = req.percentBp;
        stepsBp = rollout.stepsBp.filter((s) => s > percentBp);
      } else {
        if (intended !== undefined && rollout.percentBp >= intended) {
          throw new ReleaseError(ReleaseErrorCode.conflict, `the rollout of '${req.label}' moved meanwhile: it is at ${rollout.percentBp / 100} %, the step asked for was to ${intended / 100} %`);
        }
        const next = intended ?? rollout.stepsBp.find((s) => s > rollout.percentBp);
        intended = next;
        if (next === undefined) {
          throw new ReleaseError(ReleaseErrorCode.badRequest, `the rollout of '${req.label}' has no steps left (at ${rollout.percentBp / 100} %): pass a percent, or promote`);
        }
        percentBp = next;
        stepsBp = rollout.stepsBp.filter((s) => s > next);
      }
      const version = await this.reads.candidateOf(req.promptId, req.label, rollout);
      const { at, base, postpone } = this.rolloutMove(req, labelRead, rollout, 'rollout-step', percentBp, options);
      const scheduled = rollout.stepIntervalSeconds !== undefined && (stepsBp.length > 0 || percentBp === ROLLOUT_SCALE);
      const nextStepAt = scheduled ? this.isoIn(rollout.stepIntervalSeconds!) : undefined;
      await this.runner.gateOrDeny({ ...base, actor, reason: req.reason }, version, postpone && { labelRead, rollout: postpone, label: req.label });
      const next: Rollout = { ...rollout, percentBp, stepsBp, nextStepAt };
      return {
        writes: this.rolloutWrites(req, labelRead, next, { at, by: actor }),
        audit: { ...base, actor, reason: req.reason },
        result: { ...base, changed: true, percent: percentBp / 100, nextStepAt },
      };
    });
  }

  /** Makes the candidate what the label serves (content and identity) and ends the rollout. */
  promoteRollout(req: PromoteRolloutRequest, actor: string, options: ControllerMoveOptions = {}): Promise<MoveResult> {
    return this.runner.run(req, actor, async () => {
      const { labelRead, rollout } = await this.reads.readRollout(req.promptId, req.label, options.rolloutId);
      await this.reads.requireServed(req.promptId);
      const version = await this.reads.candidateOf(req.promptId, req.label, rollout);
      const { at, base, postpone } = this.rolloutMove(req, labelRead, rollout, 'rollout-promote', ROLLOUT_SCALE, options);
      await this.runner.gateOrDeny({ ...base, actor, reason: req.reason }, version, postpone && { labelRead, rollout: postpone, label: req.label });
      const item = labelItemFromVersion(req.promptId, req.label, version, { at, by: actor }, nextRevisionOf(labelRead));
      return {
        writes: [
          this.writes.guardedLabelPut(item, labelRead),
          this.writes.registryDelete(req.promptId, req.label),
          this.writes.servedCheck(req.promptId),
        ],
        audit: { ...base, actor, reason: req.reason },
        result: { ...base, changed: true, percent: 100 },
      };
    });
  }

  /** The writes of a move that leaves the label with `rollout`: the label (guarded), its registry entry, the served check. */
  private rolloutWrites(
    req: { readonly promptId: string; readonly label: string }, labelRead: Item, rollout: Rollout, stamp: { at: string; by: string },
  ): TransactWriteItem[] {
    const item = labelItemWithRollout(labelRead, rollout, stamp, nextRevisionOf(labelRead));
    return [
      this.writes.guardedLabelPut(item, labelRead),
      this.writes.put(registryItem(req.promptId, req.label, rollout)),
      this.writes.servedCheck(req.promptId),
    ];
  }

  /**
   * What a step and a promotion share: the audit fields of the move (from the label's version to the candidate), its
   * time, and for a scheduled move the rollout with its next step postponed by one interval (written if the gate denies).
   */
  private rolloutMove(
    req: { readonly promptId: string; readonly label: string }, labelRead: Item, rollout: Rollout,
    action: 'rollout-step' | 'rollout-promote', percentBp: number, options: ControllerMoveOptions,
  ) {
    const at = this.isoNow();
    const base = {
      promptId: req.promptId,
      target: req.label,
      action,
      fromVersion: fromItem(labelRead)[Attr.versionNumber] as number,
      toVersion: rollout.candidateVersion,
      at,
      rolloutId: rollout.rolloutId,
      percentBp,
    };
    const postpone: Rollout | undefined = options.scheduled && rollout.stepIntervalSeconds !== undefined
      ? { ...rollout, nextStepAt: this.isoIn(rollout.stepIntervalSeconds) }
      : undefined;
    return { at, base, postpone };
  }

  /**
   * Ends the rollout: every reader is back on the label's own content (arm A). Not gated: it only ever returns to
   * what the label served before. Also removes a hand-broken rollout attribute.
   */
  abortRollout(req: AbortRolloutRequest, actor: string, options: ControllerMoveOptions = {}): Promise<MoveResult> {
    return this.runner.run(req, actor, async () => {
      const labelRead = await this.writes.getLabel(req.promptId, req.label);
      if (!labelRead) throw labelNotFound(req.promptId, req.label);
      const label = fromItem(labelRead);
      const parsed = parseRolloutItem(label[LabelAttr.rollout]);
      if (parsed === undefined || (options.rolloutId !== undefined && typeof parsed !== 'string' && parsed.rolloutId !== options.rolloutId)) {
        throw rolloutNotFound(req.promptId, req.label);
      }
      const rollout = typeof parsed === 'string' ? undefined : parsed;
      const at = this.isoNow();
      const aVersion = label[Attr.versionNumber] as number;
      const base = {
        promptId: req.promptId,
        target: req.label,
        action: 'rollout-abort' as const,
        fromVersion: rollout?.candidateVersion ?? aVersion,
        toVersion: aVersion,
        at,
        rolloutId: rollout?.rolloutId,
        percentBp: 0,
      };
      const item = labelItemWithRollout(labelRead, undefined, { at, by: actor }, nextRevisionOf(labelRead));
      const reason = typeof parsed === 'string' ? [req.reason, `removed a broken rollout: ${parsed}`].filter(Boolean).join('; ') : req.reason;
      return {
        writes: [this.writes.guardedLabelPut(item, labelRead), this.writes.registryDelete(req.promptId, req.label)],
        audit: { ...base, actor, reason },
        result: { ...base, changed: true, percent: 0 },
      };
    });
  }

  /** Every rollout in progress, from the registry (see ./rollout-registry.ts). */
  async listRollouts(): Promise<RegistryEntry[]> {
    return (await this.scanRollouts()).entries;
  }

  /** Every rollout in progress, and the registry items dropped because nothing can ever act on them. */
  scanRollouts(): Promise<RegistryScan> {
    return scanRegistry(this.client, this.tableName, this.writes, async (promptId, label) => {
      const read = await this.writes.getLabel(promptId, label);
      return read && parseRolloutItem(fromItem(read)[LabelAttr.rollout]);
    });
  }

  /** Drops a registry entry whose label no longer carries that rollout, conditioned on the entry still naming it. */
  dropStaleRegistryEntry(entry: RegistryEntry): Promise<void> {
    return this.writes.dropStaleRegistryEntry(entry);
  }

  /** The label's item and its rollout as read (or why there is none). */
  readRollout(promptId: string, labelName: string, rolloutId?: string): Promise<{ labelRead: Item; rollout: Rollout }> {
    return this.reads.readRollout(promptId, labelName, rolloutId);
  }

  private isoNow(): string {
    return new Date(this.now()).toISOString();
  }

  private isoIn(seconds: number): string {
    return new Date(this.now() + seconds * 1000).toISOString();
  }
}
