import type { AuditRecord } from '../../src/schema/release-api';
import { auditItem, auditRecordOf } from '../../src/write/audit-record';

const move: AuditRecord = {
  promptId: 'greeting',
  action: 'rollout-step',
  target: 'production',
  fromVersion: 1,
  toVersion: 2,
  actor: 'arn:aws:iam::123456789012:role/pipeline',
  reason: 'ticket 42',
  at: '2026-12-01T18:00:00.000Z',
  rolloutId: 'r1',
  percentBp: 250,
};

test('the record a writer puts reads back as the same record, with the share in percent and its expiry derived', () => {
  // GIVEN: written at 2026-12-01T18:00:05Z with one day of retention
  const item = auditItem(move, 86_400, Date.parse('2026-12-01T18:00:05.000Z'));

  // WHEN
  const read = auditRecordOf(item);

  // THEN
  expect(read).toEqual({ ...move, percent: 2.5, expiresAt: '2026-12-02T18:00:05.000Z' });
});

test('a record without the optional fields reads back without them (no undefined keys)', () => {
  const item = auditItem({ promptId: 'greeting', action: 'sync', target: 'CURRENT', toVersion: 1, actor: 'sync', at: move.at }, undefined);
  expect(Object.keys(auditRecordOf(item)).sort()).toEqual(['action', 'actor', 'at', 'promptId', 'target', 'toVersion']);
});

test('the read-side fields of a writer\'s record are never stored', () => {
  const item = auditItem({ ...move, percent: 99, expiresAt: '2000-01-01T00:00:00.000Z' }, undefined);
  expect(Object.keys(item).sort()).toEqual(['action', 'actor', 'at', 'from_version', 'percent_bp', 'prompt_id', 'reason', 'rollout_id', 'target', 'to_version', 'version']);
});
