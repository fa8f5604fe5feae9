/**
 * What the invalidation function's event source mapping lets through: stream records of `CURRENT` rows only
 * (prompt pointers and `#catalog`; version items never change once written). The construct renders this as
 * the mapping's filter criteria (`FilterCriteria.Filters[].Pattern`, JSON), so Lambda drops the rest at the
 * source and is not invoked for them; the handler skips any that get through anyway.
 */
import { CURRENT, SORT_KEY } from '../schema/keys';

export const STREAM_FILTER_PATTERN = { dynamodb: { Keys: { [SORT_KEY]: { S: [CURRENT] } } } } as const;
