/**
 * The rollout controller: on its schedule (every minute) it checks the alarms of every rollout in progress and
 * aborts the rollouts whose alarm is in ALARM, then advances the rollouts whose next scheduled step is due; on a
 * CloudWatch "Alarm State Change" event to ALARM it aborts, at once, every rollout that names that alarm (the way
 * AWS AppConfig rolls back a deployment). Its moves are audited with its own role as the actor.
 */
import { createHash } from 'node:crypto';
import { CloudWatchClient, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
import { WRITE_RESERVE_MS, currentDeadline } from './deadline';
import { ReleaseError, ReleaseErrorCode } from './errors';
import type { MoveResult, ReleaseEngine } from './release';
import type { RegistryEntry } from '../write/label-item';

/** DescribeAlarms takes at most 100 names per call. */
const DESCRIBE_ALARMS_MAX_NAMES = 100;
/**
 * A `next_step_at` further ahead than the step interval plus this is not believed (a hand edit or a writer's broken
 * clock would otherwise freeze the rollout): the step is due now.
 */
export const MAX_SCHEDULE_SKEW_MS = 60_000;

/** What the controller learnt of the named alarms: those in ALARM now, and those it could not read (with why). */
export interface AlarmReading {
  readonly firing: ReadonlySet<string>;
  readonly unreadable: ReadonlyMap<string, string>;
}

/** Which of the named alarms are in ALARM now, and which could not be read. */
export interface AlarmStates {
  inAlarm(names: readonly string[]): Promise<AlarmReading>;
}

/**
 * Alarm states from CloudWatch `DescribeAlarms` (metric and composite alarms), 100 names per call. A call that fails
 * (an alarm the role may not describe: `AccessDenied` fails the whole call) is made again for each of its names
 * alone, so only the alarms that cannot be read are unknown.
 */
export class CloudWatchAlarmStates implements AlarmStates {
  constructor(private readonly client: CloudWatchClient) {}

  async inAlarm(names: readonly string[]): Promise<AlarmReading> {
    const firing = new Set<string>();
    const unreadable = new Map<string, string>();
    for (let start = 0; start < names.length; start += DESCRIBE_ALARMS_MAX_NAMES) {
      const batch = names.slice(start, start + DESCRIBE_ALARMS_MAX_NAMES);
      try {
        await this.describe(batch, firing);
      } catch (err) {
        if (batch.length === 1) {
          unreadable.set(batch[0], describeError(err));
          continue;
        }
        for (const name of batch) {
          try {
            await this.describe([name], firing);
          } catch (one) {
            unreadable.set(name, describeError(one));
          }
        }
      }
    }
    return { firing, unreadable };
  }

  private async describe(names: readonly string[], firing: Set<string>): Promise<void> {
    const found: string[] = [];
    let nextToken: string | undefined;
    for (let page = 0; page < 100; page++) {
      const out = await this.client.send(new DescribeAlarmsCommand({
        AlarmNames: [...names],
        AlarmTypes: ['MetricAlarm', 'CompositeAlarm'],
        StateValue: 'ALARM',
        NextToken: nextToken,
      }));
      for (const a of [...(out.MetricAlarms ?? []), ...(out.CompositeAlarms ?? [])]) if (a.AlarmName) found.push(a.AlarmName);
      nextToken = out.NextToken;
      if (!nextToken) break;
    }
    for (const name of found) firing.add(name);
  }
}

/**
 * The client token of one scheduled move: the same for every pass that found the same step due (the rollout, its
 * due time and its share as read), so two passes racing it (a duplicated schedule event, a pass outliving the next)
 * commit one move; the loser's retry answers the winner's move instead of taking the following step too.
 */
export function scheduledStepToken(rolloutId: string, nextStepAt: string, percentBp: number): string {
  return `scheduled-${createHash('sha256').update(`${rolloutId}\u0000${nextStepAt}\u0000${percentBp}`, 'utf8').digest('hex').slice(0, 40)}`;
}

/** Whether the invocation's deadline leaves too little time for one more rollout's move (read, gate, write). */
function outOfTime(): boolean {
  const deadline = currentDeadline();
  return deadline !== undefined && deadline.remainingMs() < 2 * WRITE_RESERVE_MS;
}

function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** One thing the controller did or declined to do. */
export interface ControllerAction {
  readonly promptId: string;
  readonly label: string;
  /** `held`: the prompt was deleted at the source; the rollout waits (an alarm still aborts it). */
  /** `alarms-unreadable`: an alarm the rollout names could not be read; it neither steps nor aborts this pass. */
  /** `deferred`: too little of the invocation's time was left to act on it; the next pass does. */
  readonly outcome: 'aborted' | 'stepped' | 'promoted' | 'gate-denied' | 'held' | 'not-due' | 'stale-entry-dropped' | 'alarms-unreadable' | 'deferred' | 'failed';
  readonly detail?: string;
  readonly result?: MoveResult;
}

export class RolloutController {
  constructor(
    private readonly engine: ReleaseEngine,
    private readonly alarms: AlarmStates,
    private readonly actor: string,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The scheduled pass: alarms first (an abort wins over a due step), then due steps. Each rollout fails alone: one
   * whose alarm could not be read waits (logged), the others go on.
   */
  async tick(): Promise<ControllerAction[]> {
    const { entries, dropped } = await this.engine.scanRollouts();
    const watched = [...new Set(entries.flatMap((e) => e.alarms))];
    const none: AlarmReading = { firing: new Set(), unreadable: new Map() };
    const { firing, unreadable } = watched.length > 0 ? await this.alarms.inAlarm(watched) : none;
    const actions: ControllerAction[] = dropped.map((d) => ({ promptId: d.promptId ?? '', label: d.label ?? '', outcome: 'stale-entry-dropped' as const, detail: d.problem }));
    for (const entry of entries) {
      if (outOfTime()) {
        actions.push({ promptId: entry.promptId, label: entry.label, outcome: 'deferred', detail: 'too little time was left in this pass' });
        continue;
      }
      const alarm = entry.alarms.find((a) => firing.has(a));
      const blind = entry.alarms.filter((a) => unreadable.has(a));
      if (alarm === undefined && blind.length > 0) {
        const detail = `the rollout waits: ${blind.map((a) => `alarm '${a}' could not be read (${unreadable.get(a)})`).join('; ')}`;
        console.error(JSON.stringify({ level: 'ERROR', message: 'rollout controller: alarms unreadable', promptId: entry.promptId, label: entry.label, detail }));
        actions.push({ promptId: entry.promptId, label: entry.label, outcome: 'alarms-unreadable', detail });
        continue;
      }
      actions.push(await this.guard(entry, () => (alarm !== undefined ? this.abort(entry, alarm) : this.advance(entry))));
    }
    return actions;
  }

  /** An alarm went to ALARM: abort every rollout naming it. */
  async onAlarm(alarmName: string): Promise<ControllerAction[]> {
    const entries = (await this.engine.listRollouts()).filter((e) => e.alarms.includes(alarmName));
    const actions: ControllerAction[] = [];
    for (const entry of entries) {
      actions.push(outOfTime()
        ? { promptId: entry.promptId, label: entry.label, outcome: 'failed', detail: 'too little time was left to abort it; retried' }
        : await this.guard(entry, () => this.abort(entry, alarmName)));
    }
    return actions;
  }

  private async abort(entry: RegistryEntry, alarm: string): Promise<ControllerAction> {
    const result = await this.engine.abortRollout(
      { action: 'rollout-abort', promptId: entry.promptId, label: entry.label, reason: `alarm '${alarm}' is in ALARM` },
      this.actor, { rolloutId: entry.rolloutId });
    return { promptId: entry.promptId, label: entry.label, outcome: 'aborted', detail: alarm, result };
  }

  private async advance(entry: RegistryEntry): Promise<ControllerAction> {
    const { rollout } = await this.engine.readRollout(entry.promptId, entry.label, entry.rolloutId);
    if (rollout.nextStepAt === undefined || rollout.stepIntervalSeconds === undefined) {
      return { promptId: entry.promptId, label: entry.label, outcome: 'not-due', detail: 'manual steps' };
    }
    const due = Date.parse(rollout.nextStepAt);
    const believable = due <= this.now() + rollout.stepIntervalSeconds * 1000 + MAX_SCHEDULE_SKEW_MS;
    if (believable && due > this.now()) return { promptId: entry.promptId, label: entry.label, outcome: 'not-due', detail: rollout.nextStepAt };
    const options = { rolloutId: entry.rolloutId, scheduled: true };
    const reason = believable ? 'scheduled step' : `scheduled step (next_step_at ${rollout.nextStepAt} was implausibly far ahead; taken as due)`;
    const next = rollout.stepsBp.find((s) => s > rollout.percentBp);
    const clientToken = scheduledStepToken(rollout.rolloutId, rollout.nextStepAt, rollout.percentBp);
    if (next !== undefined) {
      // The share is named, not "the next step": a retry after a move that won meanwhile (a manual step) must not step again.
      const step = { action: 'rollout-step' as const, promptId: entry.promptId, label: entry.label, percentBp: next, reason, clientToken };
      try {
        const result = await this.engine.stepRollout(step, this.actor, options);
        return { promptId: entry.promptId, label: entry.label, outcome: 'stepped', result };
      } catch (err) {
        if (!(err instanceof ReleaseError && err.code === ReleaseErrorCode.badRequest)) throw err;
        return { promptId: entry.promptId, label: entry.label, outcome: 'not-due', detail: `the rollout moved meanwhile: ${err.message}` };
      }
    }
    const result = await this.engine.promoteRollout({ action: 'rollout-promote', promptId: entry.promptId, label: entry.label, reason, clientToken }, this.actor, options);
    return { promptId: entry.promptId, label: entry.label, outcome: 'promoted', result };
  }

  /** Runs one rollout's action; a refusal or failure is reported for that rollout alone. */
  private async guard(entry: RegistryEntry, act: () => Promise<ControllerAction>): Promise<ControllerAction> {
    try {
      return await act();
    } catch (err) {
      if (err instanceof ReleaseError && (err.code === ReleaseErrorCode.rolloutNotFound || err.code === ReleaseErrorCode.labelNotFound)) {
        await this.engine.dropStaleRegistryEntry(entry);
        return { promptId: entry.promptId, label: entry.label, outcome: 'stale-entry-dropped', detail: err.message };
      }
      if (err instanceof ReleaseError && err.code === ReleaseErrorCode.gateDenied) {
        return { promptId: entry.promptId, label: entry.label, outcome: 'gate-denied', detail: err.message };
      }
      if (err instanceof ReleaseError && err.code === ReleaseErrorCode.promptDeleted) {
        return { promptId: entry.promptId, label: entry.label, outcome: 'held', detail: err.message };
      }
      const detail = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      console.error(JSON.stringify({ level: 'ERROR', message: 'rollout controller action failed', promptId: entry.promptId, label: entry.label, error: detail }));
      return { promptId: entry.promptId, label: entry.label, outcome: 'failed', detail };
    }
  }
}
