/**
 * Audit records written at most once for what they record: the sort key is derived from the record (its time
 * and a digest of action, target and versions) instead of drawn at random, so the record's conditional put
 * finds it already there on a retry or a later run and writes nothing. For a fact that stays true across runs
 * (the activation gate still denies the same move), where one record per run would bury the trail.
 */
import { createHash } from 'node:crypto';
import { ConditionalCheckFailedException, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { PARTITION_KEY, SORT_KEY } from '../schema';
import { auditItem, auditPut, auditSortKey } from './audit-record';
import { Item } from '../schema/ddb-codec';
import type { AuditRecord } from '../schema/release-api';

/**
 * The sort key of the record of `entry` made once: `AUDIT#<keyAt>#<8 hex>`, the hex digits a SHA-256 of the
 * action, target and versions. `keyAt` (ISO-8601, a time the caller derives from the table, the same on every
 * run) places the record in the trail.
 */
export function onceAuditSortKey(entry: AuditRecord, keyAt: string): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([entry.action, entry.target, entry.fromVersion ?? null, entry.toVersion ?? null]))
    .digest('hex');
  return auditSortKey(keyAt, digest.slice(0, 8));
}

/** The record of `entry` as an item under {@link onceAuditSortKey}; `expires_at` as in `auditItem`. */
export function onceAuditItem(entry: AuditRecord, keyAt: string, retentionSeconds: number | undefined, nowMs = Date.now()): Item {
  return { ...auditItem(entry, retentionSeconds, nowMs), [SORT_KEY]: { S: onceAuditSortKey(entry, keyAt) } };
}

/**
 * Writes the record unless it is there: one strongly consistent GetItem of its key (a later run writes nothing),
 * then the put of `auditPut`, which fails rather than overwrite (a concurrent writer's record wins).
 * `'written'` when this call wrote it, `'exists'` when it was there.
 */
export async function putAuditOnce(client: DynamoDBClient, tableName: string, item: Item): Promise<'written' | 'exists'> {
  const key = { [PARTITION_KEY]: item[PARTITION_KEY], [SORT_KEY]: item[SORT_KEY] };
  const found = await client.send(new GetItemCommand({
    TableName: tableName, Key: key, ConsistentRead: true, ProjectionExpression: '#pk', ExpressionAttributeNames: { '#pk': PARTITION_KEY },
  }));
  if (found.Item) return 'exists';
  try {
    await client.send(new PutItemCommand(auditPut(tableName, item).Put!));
    return 'written';
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException || (err as { name?: string }).name === 'ConditionalCheckFailedException') return 'exists';
    throw err;
  }
}
