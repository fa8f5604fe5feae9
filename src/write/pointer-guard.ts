/**
 * The condition every write of a `CURRENT` pointer carries: the pointer is still what the writer read (its
 * numbers, status and revision, as raw values), or still absent, and for a sync not written since by a sync that
 * read the source later. A stale writer's write fails (a conflict: re-read and decide again); nothing newer is ever
 * overwritten. Each write bumps the pointer's `revision`.
 */
import { PointerState } from './pointer-state';
import { Attr, PARTITION_KEY } from '../schema';
import { Item } from '../schema/ddb-codec';

/**
 * Condition: the pointer is absent (`expected` undefined) or still holds the numbers and status read; with
 * `readAt`, also not written since by a sync that read the source later (`source_read_at` ≤ `readAt`).
 */
export function pointerGuard(expected: PointerState | undefined, readAt?: string) {
  const names: Record<string, string> = { '#pk': PARTITION_KEY };
  const values: Item = {};
  let condition = 'attribute_not_exists(#pk)';
  if (expected) {
    delete names['#pk'];
    // The raw values read, whatever their type: a hand-broken attribute must not look like a lost race.
    const g = expected.guard;
    const parts = ([
      ['vn', Attr.versionNumber, g.versionNumber],
      ['lvn', Attr.latestVersionNumber, g.latestVersionNumber],
      ['status', Attr.status, g.status],
      ['rev', Attr.revision, g.revision],
    ] as const).map(([key, attr, value]) => {
      names[`#${key}`] = attr;
      if (value === undefined) return `attribute_not_exists(#${key})`;
      values[`:${key}`] = value;
      return `#${key} = :${key}`;
    });
    condition = parts.join(' AND ');
    if (readAt !== undefined && expected.sourceReadAt === undefined && g.sourceReadAt !== undefined) {
      // A broken `source_read_at` (wrong type, in the future) is replaced, not compared with.
      condition += ' AND #readAt = :oldReadAt';
      names['#readAt'] = Attr.sourceReadAt;
      values[':oldReadAt'] = g.sourceReadAt;
      readAt = undefined;
    }
  }
  if (readAt !== undefined) {
    condition = `(${condition}) AND (attribute_not_exists(#readAt) OR #readAt <= :readAt)`;
    names['#readAt'] = Attr.sourceReadAt;
    values[':readAt'] = { S: readAt };
  }
  return {
    ConditionExpression: condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: Object.keys(values).length > 0 ? values : undefined,
  };
}

/** The `revision` a write replacing `expected` carries: its + 1 (1 for a new pointer). The guard checks `expected`'s. */
export function nextRevision(expected: PointerState | undefined): { N: string } {
  return { N: String((expected?.revision ?? 0) + 1) };
}

/** The pointer item as written over `expected`: with the next {@link nextRevision}. */
export function withNextRevision(pointerItem: Item, expected: PointerState | undefined): Item {
  return { ...pointerItem, [Attr.revision]: nextRevision(expected) };
}
