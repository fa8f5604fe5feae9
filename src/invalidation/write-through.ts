/**
 * The invalidation function's engine: a batch of DynamoDB stream records of `CURRENT` and label rows (the event
 * source mapping filters to them, ./filter.ts; `#catalog` included) → each row written through to the L2 as a stream value ordered by
 * its token (table incarnation from `eventSourceARN`, then the record's sequence number; a `REMOVE` writes a
 * "removed" value, so readers are told without a table read) → the table's freshness epoch moved once per batch
 * (the epoch script heals any garbage), so readers re-validate.
 *
 * Idempotent under redelivery and safe out of order: the script keeps a stored value whose token is equal or
 * newer. A value that cannot land (the cache full under `noeviction`, any error the server answers) is deleted
 * instead — a miss costs one table read, a stale pointer costs correctness — and counted in the
 * `WriteThroughDrops` metric; if even the delete fails, the record fails. An epoch that cannot move is deleted
 * (readers then trust no stream value until the next batch). Every call has a deadline, and a batch stops before
 * the function's own timeout. Partial batch response: the first record that fails and every later one are
 * reported (by sequence number), so Lambda retries from there and bisects.
 */
import { isPointerRow } from './filter';
import { PARTITION_KEY, SORT_KEY } from '../schema/keys';
import {
  DynamoJsonItem, encodeStreamValue, incarnationAt, incarnationOf, isSequenceNumber, L2_VALUE_TTL_SECONDS, l2EpochKey, l2ItemKey,
} from '../schema/l2';
import { InvalidationMetric, READER_METRICS_DIMENSION, READER_METRICS_NAMESPACE } from '../schema/metrics';

/** What the handler needs of the L2 (the runtime's Valkey adapter has all of it). */
export interface L2Writer {
  /** The ordered write-through script: 1 written, 0 kept. */
  writeThroughValue(key: string, inc: string, seq: string, value: string, ttlSeconds: number): Promise<number>;
  delete(key: string): Promise<unknown>;
  /** The epoch script: moves the epoch to `<counter + 1> <incarnation>`, healing garbage. */
  bumpEpoch(key: string, inc: string, latestInc: string): Promise<number>;
}

/** The parts of a Lambda DynamoDB stream record this engine reads. */
export interface StreamRecord {
  readonly eventID?: string;
  readonly eventName?: 'INSERT' | 'MODIFY' | 'REMOVE' | string;
  readonly eventSourceARN?: string;
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
  /** Values kept because the L2 already held the same or a newer token (redelivery, reordering). */
  kept: number;
  /** `REMOVE` records written through as "removed". */
  removed: number;
  /** Values that could not land and were deleted instead. */
  dropped: number;
  /** Records that were neither `CURRENT` nor label rows (the filter should have dropped them). */
  skipped: number;
}

export interface WriteThroughOptions {
  /** The clock (epoch ms). @default Date.now */
  readonly now?: () => number;
  /** Milliseconds left before the function's own timeout; the batch stops `reserveMs` before it. @default - no limit */
  readonly remainingMs?: () => number;
  /** Time kept back for the epoch and the response. @default 3000 */
  readonly reserveMs?: number;
  /** Writes one structured EMF line (a metric). @default - `log` at INFO */
  readonly metric?: (line: Record<string, unknown>) => void;
}

/**
 * Applies `records` in order; stops at the first failure (or when time runs short) and reports it and every later
 * record as failed. The epoch is moved once whenever at least one record was applied (also on a redelivery that
 * wrote nothing, since the first delivery may have failed before its move).
 */
export async function writeThrough(
  records: readonly StreamRecord[], tableName: string, l2: L2Writer, log: Log, options: WriteThroughOptions = {},
): Promise<BatchResult & { outcome: Outcome }> {
  const now = options.now ?? Date.now;
  const outcome: Outcome = { written: 0, kept: 0, removed: 0, dropped: 0, skipped: 0 };
  let failedAt: number | undefined;
  let applied = 0;
  let incarnation: string | undefined;
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    if (options.remainingMs !== undefined && options.remainingMs() < (options.reserveMs ?? 3000)) {
      failedAt = i;
      log('WARN', 'the function is close to its timeout; the rest of the batch is retried', { remaining: records.length - i });
      break;
    }
    try {
      const result = await apply(record, tableName, l2, log, now);
      outcome[result.outcome]++;
      if (result.outcome !== 'skipped') {
        applied++;
        if (incarnation === undefined || result.inc > incarnation) incarnation = result.inc;
      }
    } catch (err) {
      failedAt = i;
      const poison = err instanceof PoisonRecordError;
      log(poison ? 'ERROR' : 'WARN', poison ? 'stream record breaks the contract' : 'L2 write failed; the batch is retried from this record', {
        eventID: record.eventID, sequenceNumber: record.dynamodb?.SequenceNumber, error: errorText(err),
      });
      break;
    }
  }
  let failures = failedAt === undefined ? [] : records.slice(failedAt).map(sequenceNumberOf);
  if (applied > 0 && incarnation !== undefined) {
    const epochKey = l2EpochKey(tableName);
    try {
      await l2.bumpEpoch(epochKey, incarnation, incarnationAt(now() + 60_000));
    } catch (err) {
      // Readers must not keep trusting their copies: without an epoch they use no stream value at all.
      try {
        await l2.delete(epochKey);
        outcome.dropped++;
        log('WARN', 'the epoch could not move and was deleted; readers use fills and the table until the next batch', { error: errorText(err) });
      } catch {
        log('WARN', 'epoch move failed; the batch is retried', { error: errorText(err) });
        failures = records.map(sequenceNumberOf);
      }
    }
  }
  log('INFO', 'batch written through', { records: records.length, ...outcome, failed: failures.length });
  if (outcome.dropped > 0 || failures.length > 0) {
    const line = {
      _aws: {
        Timestamp: now(),
        CloudWatchMetrics: [{
          Namespace: READER_METRICS_NAMESPACE,
          Dimensions: [[READER_METRICS_DIMENSION]],
          Metrics: [{ Name: InvalidationMetric.writeThroughDrops, Unit: 'Count' }, { Name: InvalidationMetric.writeThroughFailures, Unit: 'Count' }],
        }],
      },
      [READER_METRICS_DIMENSION]: tableName,
      [InvalidationMetric.writeThroughDrops]: outcome.dropped,
      [InvalidationMetric.writeThroughFailures]: failures.length,
    };
    if (options.metric !== undefined) options.metric(line);
    else log('INFO', 'write-through metrics', line);
  }
  return { batchItemFailures: failures, outcome };
}

async function apply(
  record: StreamRecord, tableName: string, l2: L2Writer, log: Log, now: () => number,
): Promise<{ outcome: keyof Outcome; inc: string }> {
  const image = record.dynamodb?.NewImage;
  const keys = record.dynamodb?.Keys ?? image;
  const promptId = attrS(keys, PARTITION_KEY);
  const sortKey = attrS(keys, SORT_KEY);
  if (promptId === undefined || sortKey === undefined) {
    throw new PoisonRecordError(`no ${PARTITION_KEY}/${SORT_KEY} string keys in the record`);
  }
  if (!isPointerRow(sortKey)) return { outcome: 'skipped', inc: '' };
  const inc = incarnationOf(record.eventSourceARN);
  if (inc === undefined) {
    throw new PoisonRecordError(`eventSourceARN ${JSON.stringify(record.eventSourceARN)} is not a DynamoDB stream ARN ending in its label`);
  }
  const seq = record.dynamodb?.SequenceNumber;
  if (!isSequenceNumber(seq)) throw new PoisonRecordError(`SequenceNumber ${JSON.stringify(seq)} is not a decimal number`);
  const key = l2ItemKey(tableName, promptId, sortKey);
  let item: DynamoJsonItem | null = null;
  if (record.eventName !== 'REMOVE') {
    if (image === undefined || attrS(image, PARTITION_KEY) !== promptId || attrS(image, SORT_KEY) !== sortKey) {
      throw new PoisonRecordError(`${record.eventName} record of ${promptId}/${sortKey} without a matching NewImage (stream view type must be NEW_IMAGE)`);
    }
    item = image as DynamoJsonItem;
  }
  const value = encodeStreamValue({ inc, seq, writtenAt: now(), item });
  try {
    const written = await l2.writeThroughValue(key, inc, seq, value, L2_VALUE_TTL_SECONDS);
    return { outcome: written !== 1 ? 'kept' : item === null ? 'removed' : 'written', inc };
  } catch (err) {
    // The value cannot land (cache full, …): the old one must not stay. If the delete fails too, the record fails.
    await l2.delete(key);
    log('WARN', 'the value could not be written through and was deleted instead (readers read the table)', {
      key, sequenceNumber: seq, error: errorText(err),
    });
    return { outcome: 'dropped', inc };
  }
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
