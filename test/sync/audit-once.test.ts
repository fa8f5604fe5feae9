import { QueryCommand } from '@aws-sdk/client-dynamodb';
import type { AuditRecord } from '../../src/schema/release-api';
import { onceAuditItem, onceAuditSortKey, putAuditOnce } from '../../src/write/audit-once';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const DENIAL: AuditRecord = {
  promptId: 'greeting', action: 'gate-deny', target: 'CURRENT', fromVersion: 1, toVersion: 3, actor: 'sync-role', reason: 'sync denied: eval failed', at: '2026-12-02T10:00:00.000Z',
};

test('the key of a record made once depends on the move and the time given, never on chance', () => {
  const key = onceAuditSortKey(DENIAL, '2026-12-01T18:00:00.000Z');
  expect(key).toMatch(/^AUDIT#2026-12-01T18:00:00\.000Z#[0-9a-f]{8}$/);
  expect(onceAuditSortKey({ ...DENIAL, reason: 'another reason', at: '2026-12-03T00:00:00.000Z' }, '2026-12-01T18:00:00.000Z')).toBe(key);
  expect(onceAuditSortKey({ ...DENIAL, fromVersion: 2 }, '2026-12-01T18:00:00.000Z')).not.toBe(key);
  expect(onceAuditSortKey({ ...DENIAL, target: 'production' }, '2026-12-01T18:00:00.000Z')).not.toBe(key);
});

test('a record made once is written by one of two racing writers and by no later one; a later run only reads', async () => {
  // GIVEN
  const counter = new CallCounter();
  const client = counter.attach(localDynamoDBClient());
  const tableName = await createServingTable(client, 'audit-once');
  try {
    const item = onceAuditItem(DENIAL, '2026-12-01T18:00:00.000Z', undefined);
    // WHEN: two writers at once (both may miss in their read; the conditional put lets one through), then a third
    const racing = await Promise.all([putAuditOnce(client, tableName, item), putAuditOnce(client, tableName, item)]);
    counter.reset();
    const later = await putAuditOnce(client, tableName, onceAuditItem({ ...DENIAL, at: '2026-12-02T11:00:00.000Z' }, '2026-12-01T18:00:00.000Z', undefined));
    // THEN
    expect(racing.sort()).toEqual(['exists', 'written']);
    expect(later).toBe('exists');
    expect(counter.writes()).toBe(0);
    const rows = await client.send(new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'prompt_id = :id AND begins_with(version, :a)',
      ExpressionAttributeValues: { ':id': { S: 'greeting' }, ':a': { S: 'AUDIT#' } },
      ConsistentRead: true,
    }));
    expect(rows.Items?.map((r) => [r.action.S, r.from_version.N, r.to_version.N, r.at.S])).toEqual([['gate-deny', '1', '3', '2026-12-02T10:00:00.000Z']]);
  } finally {
    await deleteTable(client, tableName);
    client.destroy();
  }
});
