/**
 * Labels on the read side: the cache keys of a label's entry, the prompt a label item is served as, and the
 * reasons a labeled read is not found. The label item (`LABEL#<name>`, src/schema/labels.ts) has the shape of
 * `CURRENT`, so it goes through the same tiers (memory, L2, table), freshness rules and epoch.
 */
import { isDeleted, Prompt, promptFromItem, servedForLabel } from './prompt';
import type { Provenance } from './provenance';
import { setOwn } from '../schema/checksum';
import { LABEL_ITEM_ATTRIBUTES, LABEL_SORT_KEY_PREFIX, LabelAttr, labelNameProblem } from '../schema/labels';

/**
 * The key of a label's entry (and of its not-found answer) in memory: `#<label>#<id>`. No prompt id starts with
 * `#`, and an exact version's key (`#<digits>#<id>`) never starts with a lowercase letter as a label does.
 */
export function labelCacheKey(label: string, promptId: string): string {
  return `#${label}#${promptId}`;
}

/** The label item's sort key, for a name already checked. */
export function labelItemKey(label: string): string {
  return LABEL_SORT_KEY_PREFIX + label;
}

/** Why `label` cannot be asked for, as the not-found reason both clients give; `undefined` when it can. */
export function invalidLabelReason(label: unknown): string | undefined {
  const problem = labelNameProblem(label);
  return problem === undefined ? undefined : `not a valid label (${problem})`;
}

/** The not-found reason of a label the table does not hold. */
export function missingLabelReason(label: string): string {
  return `no label '${label}'`;
}

/**
 * The prompt a label item serves (arm A): its content without the label's own attributes, flagged with the label
 * and `sourceDeleted`, with the provenance of the read that loaded it (`served`; default: a table read now).
 * `undefined` for a tombstone (a label is removed by deleting its item; `status = DELETED`
 * is treated as `CURRENT` treats it). Throws `PromptStoreError` for an item that breaks the contract.
 */
export function promptFromLabelItem(
  item: Record<string, unknown>, label: string, served?: Provenance,
): { prompt: Prompt; sourceDeleted: boolean } | undefined {
  if (isDeleted(item)) return undefined;
  const content: Record<string, unknown> = {};
  for (const key of Object.keys(item)) {
    if (!LABEL_ITEM_ATTRIBUTES.has(key)) setOwn(content, key, item[key]);
  }
  const deletedAt = item[LabelAttr.sourceDeletedAt];
  const sourceDeleted = typeof deletedAt === 'string' && deletedAt.length > 0;
  return { prompt: servedForLabel(promptFromItem(content, 1, served), label, undefined, sourceDeleted), sourceDeleted };
}
