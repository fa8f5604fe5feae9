/**
 * A prompt's audit trail: one strongly consistent Query of its `AUDIT#…` rows, newest first. Needs only read
 * access (`grantRead` covers `dynamodb:Query`).
 */
import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { AUDIT_SORT_KEY_PREFIX, AuditAttr, PARTITION_KEY, SORT_KEY } from '../schema';
import { Item, fromItem } from '../schema/ddb-codec';

/** One audited pointer move. */
export interface AuditRecord {
  readonly promptId: string;
  /** `sync`, `activate`, `label`, `rollout-start`, `rollout-step`, `rollout-promote`, `rollout-abort` or `gate-deny`. */
  readonly action: string;
  /** `CURRENT` or the label. */
  readonly target: string;
  readonly fromVersion?: number;
  readonly toVersion?: number;
  /** The caller's IAM principal ARN, or the sync's / rollout controller's role. */
  readonly actor: string;
  readonly reason?: string;
  /** ISO-8601. */
  readonly at: string;
  readonly rolloutId?: string;
  /** A rollout's share after the move, in basis points (0 to 10,000). */
  readonly percentBp?: number;
  /** @deprecated read `percentBp`; the same share in percent, still set for one release. */
  readonly percent?: number;
  /** When DynamoDB may delete the record (ISO-8601), if audit retention is on. */
  readonly expiresAt?: string;
}

/** Most records one listing returns. */
export const MAX_AUDIT_LIMIT = 1_000;

/** Up to `limit` audit records of `promptId`, newest first. */
export async function queryAudit(client: DynamoDBClient, tableName: string, promptId: string, limit: number): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  let startKey: Item | undefined;
  for (let page = 0; page < 100 && records.length < limit; page++) {
    const out = await client.send(new QueryCommand({
      TableName: tableName,
      ConsistentRead: true,
      KeyConditionExpression: '#pk = :id AND begins_with(#sk, :audit)',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
      ExpressionAttributeValues: { ':id': { S: promptId }, ':audit': { S: AUDIT_SORT_KEY_PREFIX } },
      ScanIndexForward: false,
      Limit: limit - records.length,
      ExclusiveStartKey: startKey,
    }));
    for (const raw of out.Items ?? []) records.push(toRecord(promptId, fromItem(raw)));
    startKey = out.LastEvaluatedKey;
    if (!startKey) break;
  }
  return records;
}

function toRecord(promptId: string, r: Record<string, unknown>): AuditRecord {
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const percentBp = num(r.percent_bp);
  const expires = num(r[AuditAttr.expiresAt]);
  const record: AuditRecord = {
    promptId,
    action: String(r[AuditAttr.action] ?? ''),
    target: String(r[AuditAttr.target] ?? ''),
    fromVersion: num(r[AuditAttr.fromVersion]),
    toVersion: num(r[AuditAttr.toVersion]),
    actor: String(r[AuditAttr.actor] ?? ''),
    reason: str(r[AuditAttr.reason]),
    at: String(r[AuditAttr.at] ?? ''),
    rolloutId: str(r[AuditAttr.rolloutId]),
    percentBp,
    percent: percentBp === undefined ? undefined : percentBp / 100,
    expiresAt: expires === undefined ? undefined : new Date(expires * 1000).toISOString(),
  };
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as unknown as AuditRecord;
}
