/**
 * The one parser of rollout and registry items as the release path and the rollout controller read them from the
 * table. On top of the shapes label-item.ts checks, every number read is bounded (a hand-set
 * `step_interval_seconds` of 1e15 would otherwise make a step's next time an invalid date), and a registry item
 * is classified: usable, usable only through its label item (its own copy of the alarms or schedule is broken), or
 * one the controller can never act on (no prompt id or label, or ones that can never exist), which it drops.
 */
import { MAX_STEP_INTERVAL_SECONDS, MIN_STEP_INTERVAL_SECONDS } from './requests';
import { labelNameProblem, promptIdProblem } from '../schema';
import { RegistryAttr, RegistryEntry, Rollout, parseRegistryEntry, parseRollout } from '../write/label-item';

/** Latest time a `next_step_at` may name: far enough for any schedule, well inside what `Date` can hold. */
const MAX_NEXT_STEP_MS = Date.UTC(9999, 0, 1);

/** The rollout of a label item as read (see label-item.ts `parseRollout`), with every number bounded. */
export function parseRolloutItem(value: unknown): Rollout | string | undefined {
  const parsed = parseRollout(value);
  if (parsed === undefined || typeof parsed === 'string') return parsed;
  const interval = parsed.stepIntervalSeconds;
  if (interval !== undefined && (interval < MIN_STEP_INTERVAL_SECONDS || interval > MAX_STEP_INTERVAL_SECONDS)) {
    return `the rollout's step_interval_seconds ${interval} is not from ${MIN_STEP_INTERVAL_SECONDS} to ${MAX_STEP_INTERVAL_SECONDS}`;
  }
  if (parsed.nextStepAt !== undefined && !(Date.parse(parsed.nextStepAt) <= MAX_NEXT_STEP_MS)) {
    return `the rollout's next_step_at ${parsed.nextStepAt} is after the year 9999`;
  }
  return parsed;
}

/** A registry item as read. */
export type RegistryRead =
  /** Usable as it is. */
  | { readonly kind: 'entry'; readonly entry: RegistryEntry }
  /** Names a label, but its own fields are broken: the label item's rollout is the truth. */
  | { readonly kind: 'repair'; readonly promptId: string; readonly label: string; readonly problem: string }
  /** Can never be acted on: dropped. */
  | { readonly kind: 'unusable'; readonly problem: string; readonly promptId?: string; readonly label?: string };

export function readRegistryItem(item: Record<string, unknown>): RegistryRead {
  const promptId = item[RegistryAttr.promptId];
  const label = item[RegistryAttr.label];
  if (typeof promptId !== 'string' || typeof label !== 'string') return { kind: 'unusable', problem: 'the registry item names no prompt id or label' };
  const idProblem = promptIdProblem(promptId);
  if (idProblem !== undefined) return { kind: 'unusable', promptId, label, problem: `its prompt id can never exist: ${idProblem}` };
  const labelProblem = labelNameProblem(label);
  if (labelProblem !== undefined) return { kind: 'unusable', promptId, label, problem: `its label can never exist: ${labelProblem}` };
  const entry = parseRegistryEntry(item);
  if (entry === undefined) return { kind: 'repair', promptId, label, problem: 'the registry item is malformed (rollout_id, alarms or next_step_at)' };
  return { kind: 'entry', entry };
}
