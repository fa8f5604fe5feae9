/**
 * The invalidation function's engine: a batch of DynamoDB stream records of `CURRENT` rows (the event source
 * mapping filters to them; `#catalog` included) → each `NewImage` written through to the L2 by the ordering
 * rule's script (never a delete for a change, so readers never stampede the table; a `REMOVE` deletes the
 * key) → the table's freshness epoch `INCR`ed once per batch, so readers re-validate.
 *
 * Idempotent under redelivery and safe out of order: the script keeps a stored value whose `revision` is equal
 * or higher. Partial batch response: the first record that fails and every later one are reported (by
 * sequence number), so Lambda retries from there and bisects.
 */
import { CURRENT, PARTITION_KEY, SORT_KEY } from '../schema/keys';
import { DynamoJsonItem, encodeL2Value, itemRevision, L2_VALUE_TTL_SECONDS, l2EpochKey, l2ItemKey } from '../schema/l2';

/** What the handler needs of the L2 (the runtime's Valkey adapter has all of it). */
export interface L2Writer {
  putIfNewer(key: string, revision: number, value: string, ttlSeconds: number): Promise<number>;
  delete(key: string): Promise<unknown>;
  incr(key: string): Promise<number>;
}

/** The parts of a Lambda DynamoDB stream record this engine reads. */
export interface StreamRecord {
  readonly eventID?: string;
  readonly eventName?: 'INSERT' | 'MODIFY' | 'REMOVE' | string;
  readonly dynamodb?: {
    readonly Keys?: Record<string, unknown>;
    readonly NewImage?: Record<string, unknown>;
    readonly SequenceNumber?: string;
  };
}

export interface BatchResult {
  readonly batchItemFailures: { itemIdentifier: string }[];
}

/** One structured log line. */
export type Log = (level: 'INFO' | 'WARN' | 'ERROR', message: string, fields?: Record<string, unknown>) => void;

/** Thrown for a record that can never be applied (it breaks the stream contract): it fails alone. */
export class PoisonRecordError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PoisonRecordError';
  }
}

export interface Outcome {
  /** Values written (the script replaced an older one or filled an empty key). */
  written: number;
  /** Values kept because the L2 already held the same or a newer revision (redelivery, reordering). */
  kept: number;
  deleted: number;
  /** Records that were not `CURRENT` rows (the filter should have dropped them). */
  skipped: number;
}

/**
 * Applies `records` in order; stops at the first failure and reports it and every later record as failed.
 * The epoch is bumped once whenever at least one record was applied (also on a redelivery that wrote nothing,
 * since the first delivery may have failed before its bump).
 */
export async function writeThrough(
  records: readonly StreamRecord[], tableName: string, l2: L2Writer, log: Log, now: () => number = Date.now,
): Promise<BatchResult & { outcome: Outcome }> {
  const outcome: Outcome = { written: 0, kept: 0, deleted: 0, skipped: 0 };
  let failedAt: number | undefined;
  let applied = 0;
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    try {
      const result = await apply(record, tableName, l2, now);
      outcome[result]++;
      if (result !== 'skipped') applied++;
    } catch (err) {
      failedAt = i;
      const poison = err instanceof PoisonRecordError;
      log(poison ? 'ERROR' : 'WARN', poison ? 'stream record breaks the contract' : 'L2 write failed; the batch is retried from this record', {
        eventID: record.eventID, sequenceNumber: record.dynamodb?.SequenceNumber, error: errorText(err),
      });
      break;
    }
  }
  const failures = failedAt === undefined ? [] : records.slice(failedAt).map(sequenceNumberOf);
  if (applied > 0) {
    try {
      await l2.incr(l2EpochKey(tableName));
    } catch (err) {
      // Without the bump readers would not re-validate: retry the whole batch (idempotent).
      log('WARN', 'epoch bump failed; the batch is retried', { error: errorText(err) });
      return { batchItemFailures: records.map(sequenceNumberOf), outcome };
    }
  }
  log('INFO', 'batch written through', { records: records.length, ...outcome, failed: failures.length });
  return { batchItemFailures: failures, outcome };
}

async function apply(record: StreamRecord, tableName: string, l2: L2Writer, now: () => number): Promise<keyof Outcome> {
  const image = record.dynamodb?.NewImage;
  const keys = record.dynamodb?.Keys ?? image;
  const promptId = attrS(keys, PARTITION_KEY);
  const sortKey = attrS(keys, SORT_KEY);
  if (promptId === undefined || sortKey === undefined) {
    throw new PoisonRecordError(`no ${PARTITION_KEY}/${SORT_KEY} string keys in the record`);
  }
  if (sortKey !== CURRENT) return 'skipped';
  const key = l2ItemKey(tableName, promptId, sortKey);
  if (record.eventName === 'REMOVE') {
    await l2.delete(key);
    return 'deleted';
  }
  if (image === undefined || attrS(image, PARTITION_KEY) !== promptId || attrS(image, SORT_KEY) !== sortKey) {
    throw new PoisonRecordError(`${record.eventName} record of ${promptId}/${sortKey} without a matching NewImage (stream view type must be NEW_IMAGE)`);
  }
  const item = image as DynamoJsonItem;
  const revision = itemRevision(item);
  const value = encodeL2Value({ revision, fetchedAt: now(), item });
  return (await l2.putIfNewer(key, revision, value, L2_VALUE_TTL_SECONDS)) === 1 ? 'written' : 'kept';
}

function attrS(item: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = (item?.[name] as { S?: unknown } | undefined)?.S;
  return typeof value === 'string' ? value : undefined;
}

function sequenceNumberOf(record: StreamRecord): { itemIdentifier: string } {
  return { itemIdentifier: record.dynamodb?.SequenceNumber ?? record.eventID ?? '' };
}

function errorText(err: unknown): string {
  return `${(err as Error)?.name ?? 'Error'}: ${(err as Error)?.message ?? String(err)}`;
}
