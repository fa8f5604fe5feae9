/**
 * Label items and their rollouts as the release path writes them (shape in schema/labels.ts), and the rollout
 * registry: one small item per rollout in progress under the reserved partition {@link ROLLOUTS_ID}, written in
 * the same transaction as the label, so the rollout controller finds every active rollout with one Query, never
 * a table scan. Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  Attr,
  LabelAttr,
  PARTITION_KEY,
  ROLLOUT_SCALE,
  RolloutAttr,
  SCHEMA_VERSION,
  SORT_KEY,
  STATUS_ACTIVE,
  contentAttributes,
  isReservedAttribute,
  labelSortKey,
  parseRollout as parseReaderRollout,
} from '../schema';
import { Item, toAttr, toItem } from '../schema/ddb-codec';

/** Partition of the rollout registry (reserved: starts with `#`; not a `CURRENT` row, so streams and readers skip it). */
export const ROLLOUTS_ID = '#rollouts';

/** Attributes of a registry item. */
export const RegistryAttr = {
  promptId: 'target_prompt_id',
  label: 'label',
  rolloutId: RolloutAttr.rolloutId,
  nextStepAt: RolloutAttr.nextStepAt,
  alarms: RolloutAttr.alarms,
} as const;

/** A rollout in progress, as the `rollout` map of a label item holds it. */
export interface Rollout {
  readonly rolloutId: string;
  readonly candidateVersion: number;
  readonly candidateChecksum: string;
  readonly percentBp: number;
  /** Shares still to step to, ascending. */
  readonly stepsBp: readonly number[];
  readonly stepIntervalSeconds?: number;
  readonly nextStepAt?: string;
  readonly alarms: readonly string[];
  readonly startedAt: string;
  readonly startedBy: string;
}

/** A registry entry: which label of which prompt has a rollout. */
export interface RegistryEntry {
  readonly promptId: string;
  readonly label: string;
  readonly rolloutId: string;
  readonly nextStepAt?: string;
  readonly alarms: readonly string[];
}

/** Who moved the label and when. */
export interface MoveStamp {
  readonly at: string;
  readonly by: string;
}

/** The registry item's sort key: a digest of (prompt id, label), because a prompt id alone may fill the 1,024-byte sort key. */
export function registrySortKey(promptId: string, label: string): string {
  return createHash('sha256').update(`${promptId}\u0000${label}`, 'utf8').digest('hex');
}

export function registryKey(promptId: string, label: string): Item {
  return { [PARTITION_KEY]: { S: ROLLOUTS_ID }, [SORT_KEY]: { S: registrySortKey(promptId, label) } };
}

export function registryItem(promptId: string, label: string, rollout: Rollout): Item {
  return {
    ...registryKey(promptId, label),
    ...toItem({
      [RegistryAttr.promptId]: promptId,
      [RegistryAttr.label]: label,
      [RegistryAttr.rolloutId]: rollout.rolloutId,
      [RegistryAttr.nextStepAt]: rollout.nextStepAt,
      [RegistryAttr.alarms]: [...rollout.alarms],
    }),
  };
}

/** A registry entry from its item as read, or `undefined` when it is not one (hand-edited). */
export function parseRegistryEntry(item: Record<string, unknown>): RegistryEntry | undefined {
  const promptId = item[RegistryAttr.promptId];
  const label = item[RegistryAttr.label];
  const rolloutId = item[RegistryAttr.rolloutId];
  const alarms = item[RegistryAttr.alarms] ?? [];
  const next = item[RegistryAttr.nextStepAt];
  if (typeof promptId !== 'string' || typeof label !== 'string' || typeof rolloutId !== 'string') return undefined;
  if (!Array.isArray(alarms) || alarms.some((a) => typeof a !== 'string')) return undefined;
  return { promptId, label, rolloutId, alarms: alarms as string[], nextStepAt: typeof next === 'string' ? next : undefined };
}

/** The `rollout` map of a label item. */
export function rolloutMap(r: Rollout): AttributeValue {
  return toAttr(Object.fromEntries(Object.entries({
    [RolloutAttr.rolloutId]: r.rolloutId,
    [RolloutAttr.candidateVersion]: r.candidateVersion,
    [RolloutAttr.candidateChecksum]: r.candidateChecksum,
    [RolloutAttr.percentBp]: r.percentBp,
    [RolloutAttr.stepsBp]: [...r.stepsBp],
    [RolloutAttr.stepIntervalSeconds]: r.stepIntervalSeconds,
    [RolloutAttr.nextStepAt]: r.nextStepAt,
    [RolloutAttr.alarms]: [...r.alarms],
    [RolloutAttr.startedAt]: r.startedAt,
    [RolloutAttr.startedBy]: r.startedBy,
  }).filter(([, v]) => v !== undefined)));
}

/**
 * The rollout of a label item as read: `undefined` when there is none, or a string saying what is broken about a
 * hand-edited one (an abort still removes it; nothing else acts on it). The keys readers use are held to the
 * readers' rules (the schema's `parseRollout`: a `candidate_checksum` of the contract's form, a version number
 * within range, …), so the release path never acts on a rollout that readers would refuse.
 */
export function parseRollout(value: unknown): Rollout | string | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'the rollout attribute is not a map';
  const readers = parseReaderRollout(value);
  if (readers.problem !== undefined) return `the rollout is broken: ${readers.problem}`;
  const r = value as Record<string, unknown>;
  const bp = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= ROLLOUT_SCALE;
  const str = (v: unknown) => typeof v === 'string' && v.length > 0;
  const steps = r[RolloutAttr.stepsBp] ?? [];
  const alarms = r[RolloutAttr.alarms] ?? [];
  const interval = r[RolloutAttr.stepIntervalSeconds];
  const next = r[RolloutAttr.nextStepAt];
  if (!str(r[RolloutAttr.rolloutId])) return 'the rollout has no rollout_id';
  const candidate = r[RolloutAttr.candidateVersion];
  if (typeof candidate !== 'number' || !Number.isInteger(candidate) || candidate < 1) return 'the rollout\'s candidate_version is not a version number';
  if (!str(r[RolloutAttr.candidateChecksum])) return 'the rollout has no candidate_checksum';
  if (!bp(r[RolloutAttr.percentBp])) return `the rollout's percent_bp is not a whole number from 0 to ${ROLLOUT_SCALE}`;
  if (!Array.isArray(steps) || !steps.every(bp)) return 'the rollout\'s steps_bp is not a list of basis points';
  if (!Array.isArray(alarms) || alarms.some((a) => typeof a !== 'string')) return 'the rollout\'s alarms is not a list of names';
  if (interval !== undefined && !(typeof interval === 'number' && Number.isInteger(interval) && interval > 0)) return 'the rollout\'s step_interval_seconds is not a positive whole number';
  if (next !== undefined && !(typeof next === 'string' && Number.isFinite(Date.parse(next)))) return 'the rollout\'s next_step_at is not an ISO-8601 time';
  return {
    rolloutId: r[RolloutAttr.rolloutId] as string,
    candidateVersion: candidate,
    candidateChecksum: r[RolloutAttr.candidateChecksum] as string,
    percentBp: r[RolloutAttr.percentBp] as number,
    stepsBp: steps as number[],
    stepIntervalSeconds: interval as number | undefined,
    nextStepAt: next as string | undefined,
    alarms: alarms as string[],
    startedAt: String(r[RolloutAttr.startedAt] ?? ''),
    startedBy: String(r[RolloutAttr.startedBy] ?? ''),
  };
}

/**
 * The reserved attributes a label item owns (schema/reserved-attributes.ts): its identity and the provenance it
 * copies from its version, set by {@link labelItemFromVersion}, and the label's own, set by the release path and the
 * sync. A label write carries these and the content (every name that is not reserved), nothing else: a `rollout`,
 * an `expires_at` or a `source_deleted_at` that came with a version's content is never a label's.
 */
export const LABEL_ITEM_OWNED_ATTRIBUTES: ReadonlySet<string> = new Set([
  Attr.promptId, Attr.version, Attr.versionNumber, Attr.checksum, Attr.status, Attr.source, Attr.sourceVersion,
  Attr.sourceUpdatedAt, Attr.syncedAt, Attr.schemaVersion, Attr.revision,
  LabelAttr.label, LabelAttr.movedAt, LabelAttr.movedBy, LabelAttr.sourceDeletedAt, LabelAttr.rollout,
]);

/**
 * A label item serving `version` (an immutable version item, as read): a copy of its content (the names that are
 * not reserved) and of the provenance a label owns, plus the label's own attributes. Nothing else of the version
 * item is copied. `revision` is the next of the label item it replaces (1 for a new label).
 */
export function labelItemFromVersion(promptId: string, label: string, version: Record<string, unknown>, stamp: MoveStamp, revision: number): Item {
  return toItem({
    ...contentAttributes(version),
    [Attr.promptId]: promptId,
    [Attr.version]: labelSortKey(label),
    [Attr.versionNumber]: version[Attr.versionNumber],
    [Attr.checksum]: version[Attr.checksum],
    [Attr.status]: STATUS_ACTIVE,
    [Attr.source]: version[Attr.source],
    [Attr.sourceVersion]: version[Attr.sourceVersion],
    [Attr.sourceUpdatedAt]: version[Attr.sourceUpdatedAt],
    [Attr.syncedAt]: version[Attr.syncedAt],
    [Attr.schemaVersion]: SCHEMA_VERSION,
    [Attr.revision]: revision,
    [LabelAttr.label]: label,
    [LabelAttr.movedAt]: stamp.at,
    [LabelAttr.movedBy]: stamp.by,
  });
}

/**
 * The label item as read, re-stamped, with `rollout` replaced (or removed when `undefined`). Content unchanged; of
 * the reserved attributes only those a label owns ({@link LABEL_ITEM_OWNED_ATTRIBUTES}) are kept (a label written
 * before sources refused reserved keys may hold others in its content).
 */
export function labelItemWithRollout(item: Item, rollout: Rollout | undefined, stamp: MoveStamp, revision: number): Item {
  const next: Item = {};
  for (const [name, value] of Object.entries(item)) {
    if (LABEL_ITEM_OWNED_ATTRIBUTES.has(name) || !isReservedAttribute(name)) next[name] = value;
  }
  delete next[LabelAttr.rollout];
  if (rollout) next[LabelAttr.rollout] = rolloutMap(rollout);
  next[LabelAttr.movedAt] = { S: stamp.at };
  next[LabelAttr.movedBy] = { S: stamp.by };
  next[Attr.revision] = { N: String(revision) };
  return next;
}

/** The `revision` a write replacing `item` carries: its own + 1 (1 for a new item or one without a usable revision). */
export function nextRevisionOf(item: Item | undefined): number {
  const raw = item?.[Attr.revision]?.N;
  const n = raw === undefined ? 0 : Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n + 1 : 1;
}

/**
 * Condition of a label write: the label item is still exactly what was read (same `revision`, raw), or still
 * absent. A concurrent move makes the write fail instead of being overwritten.
 */
export interface LabelGuard {
  readonly ConditionExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues?: Item;
}

export function labelGuard(read: Item | undefined): LabelGuard {
  if (!read) return { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': PARTITION_KEY } };
  const rev = read[Attr.revision];
  if (rev === undefined) {
    return { ConditionExpression: 'attribute_exists(#pk) AND attribute_not_exists(#rev)', ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#rev': Attr.revision } };
  }
  return { ConditionExpression: '#rev = :rev', ExpressionAttributeNames: { '#rev': Attr.revision }, ExpressionAttributeValues: { ':rev': rev } };
}
