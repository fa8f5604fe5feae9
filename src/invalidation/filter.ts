/**
 * What the invalidation function's event source mapping lets through: stream records of mutable pointer rows only —
 * `CURRENT` (prompt pointers and `#catalog`) and labels (`LABEL#<name>`, schema v2) — never version items (they never
 * change once written) nor audit records. The construct renders this as the mapping's filter criteria
 * (`FilterCriteria.Filters[].Pattern`, JSON; a `prefix` rule for labels), so Lambda drops the rest at the source and
 * is not invoked for them; the handler skips any that get through anyway ({@link isPointerRow}).
 */
import { CURRENT, SORT_KEY } from '../schema/keys';
import { LABEL_SORT_KEY_PREFIX, parseLabelSortKey } from '../schema/labels';

export const STREAM_FILTER_PATTERN = {
  dynamodb: { Keys: { [SORT_KEY]: { S: [CURRENT, { prefix: LABEL_SORT_KEY_PREFIX }] } } },
} as const;

/** Whether a sort key names a row the invalidation function writes through: `CURRENT` or a valid label. */
export function isPointerRow(sortKey: string): boolean {
  return sortKey === CURRENT || parseLabelSortKey(sortKey) !== undefined;
}
