/**
 * Conditional writes of the sync's store and catalog: a write whose condition fails, or a transaction that loses
 * to a concurrent one, is a `'conflict'` (the caller re-reads and decides again), never an overwrite.
 */
import type { DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CURRENT, PARTITION_KEY, SORT_KEY } from '../schema';
import type { Item } from '../schema/ddb-codec';

export type WriteOutcome = 'written' | 'conflict';

/** Backoff between re-reads of a contended key: short, the other writer is usually done. */
export const CONFLICT_BACKOFF = { baseDelayMs: 50, maxDelayMs: 2_000 };

/** The key of a prompt's pointer item (the catalog's too: `#catalog`). */
export function pointerKey(id: string): Item {
  return { [PARTITION_KEY]: { S: id }, [SORT_KEY]: { S: CURRENT } };
}

/** Sends a conditional `PutItem` or `UpdateItem`: `'conflict'` when its condition failed. */
export async function sendGuarded(client: DynamoDBClient, command: PutItemCommand | UpdateItemCommand): Promise<WriteOutcome> {
  try {
    await client.send(command as any);
    return 'written';
  } catch (err) {
    if (isConflict(err)) return 'conflict';
    throw err;
  }
}

/** A failed condition or a transaction that lost to a concurrent one: re-read and decide again. */
export function isConflict(err: unknown): boolean {
  const name = (err as { name?: string })?.name;
  if (name === 'ConditionalCheckFailedException' || name === 'TransactionConflictException') return true;
  if (name === 'TransactionCanceledException') {
    const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
    return reasons.some((r) => r.Code === 'ConditionalCheckFailed' || r.Code === 'TransactionConflict');
  }
  return false;
}
