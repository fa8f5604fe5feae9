/**
 * A prompt's audit trail: one strongly consistent Query of its `AUDIT#…` rows, newest first. Needs only read
 * access (`grantRead` covers `dynamodb:Query`).
 */
import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { AUDIT_SORT_KEY_PREFIX, PARTITION_KEY, SORT_KEY } from '../schema';
import type { Item } from '../schema/ddb-codec';
import type { AuditRecord } from '../schema/release-api';
import { auditRecordOf } from '../write/audit-record';

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
    for (const raw of out.Items ?? []) records.push(auditRecordOf(raw));
    startKey = out.LastEvaluatedKey;
    if (!startKey) break;
  }
  return records;
}
