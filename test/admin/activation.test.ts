import { fromItem } from '../../src/schema/ddb-codec';
import { activatedPointerItem } from '../../src/write/activation';
import { PointerState } from '../../src/write/store';

const VERSION_1 = {
  prompt_id: 'greeting',
  version: 'v000001',
  version_number: 1,
  checksum: 'sha256:' + '1'.repeat(64),
  source: 'bedrock',
  source_version: '1',
  source_updated_at: '2026-01-01T00:00:00.000Z',
  synced_at: '2026-01-01T00:01:00.000Z',
  schema_version: 1,
  template_type: 'TEXT',
  text: 'Hello {{name}}',
  input_variables: ['name'],
  guardrail: { id: 'g-1' },
};

const POINTER_AT_3: PointerState = {
  id: 'greeting',
  status: 'ACTIVE',
  versionNumber: 3,
  latestVersionNumber: 3,
  checksum: 'sha256:' + '3'.repeat(64),
  sourceChecksum: 'sha256:' + '3'.repeat(64),
  sourceRevision: 'rev-3',
  sourceReadAt: '2026-01-03T00:00:00.000123Z',
  sourceVersion: '3',
  revision: 7,
  problems: [],
  guard: {},
};

describe('the pointer an activation writes', () => {
  test("copies the version's content and identity and keeps the replaced pointer's sync bookkeeping", () => {
    // GIVEN
    const replaced = { state: POINTER_AT_3, item: { source: 'bedrock' } };
    // WHEN
    const item = fromItem(activatedPointerItem('greeting', VERSION_1, replaced, { at: '2026-02-01T00:00:00.000Z', by: 'alice' }));
    // THEN
    expect(item).toEqual({
      prompt_id: 'greeting',
      version: 'CURRENT',
      status: 'ACTIVE',
      schema_version: 2,
      // content, all of it (fields the contract does not name included)
      template_type: 'TEXT',
      text: 'Hello {{name}}',
      input_variables: ['name'],
      guardrail: { id: 'g-1' },
      // the activated version
      version_number: 1,
      checksum: VERSION_1.checksum,
      source_version: '1',
      source_updated_at: '2026-01-01T00:00:00.000Z',
      // the replaced pointer's view of the source
      source: 'bedrock',
      latest_version_number: 3,
      source_checksum: POINTER_AT_3.sourceChecksum,
      source_revision: 'rev-3',
      source_read_at: POINTER_AT_3.sourceReadAt,
      // the activation
      synced_at: '2026-02-01T00:00:00.000Z',
      activated_at: '2026-02-01T00:00:00.000Z',
      activated_by: 'alice',
    });
  });

  test('a pointer that never recorded the source it copied is taken to serve what the source holds', () => {
    // GIVEN
    const { sourceChecksum: _checksum, sourceRevision: _revision, sourceReadAt: _readAt, ...bare } = POINTER_AT_3;
    // WHEN
    const item = fromItem(activatedPointerItem('greeting', VERSION_1, { state: bare, item: { source: 'bedrock' } }, { at: '2026-02-01T00:00:00.000Z' }));
    // THEN
    expect(item).toMatchObject({ version_number: 1, source_checksum: POINTER_AT_3.checksum, source_revision: '' });
    expect(item).not.toHaveProperty('source_read_at');
    expect(item).not.toHaveProperty('activated_by');
  });
});
