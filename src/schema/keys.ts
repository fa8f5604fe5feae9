/**
 * Wire contract (table schema v1): keys, reserved ids, attribute names, statuses and version sort keys.
 * Part of the schema module shared by the construct, the handlers and the runtime clients (see ./index.ts).
 */

/** Version of the item layout described here. Written on every pointer as `schema_version`. */
export const SCHEMA_VERSION = 1;

/** Partition key: the prompt's id (S). */
export const PARTITION_KEY = 'prompt_id';
/** Sort key: `CURRENT` for the pointer, `v000001`… for immutable versions (S). */
export const SORT_KEY = 'version';
/** Sort key value of the pointer item: a full copy of the active version. */
export const CURRENT = 'CURRENT';
/** Prompt ids starting with this prefix are reserved for the library's own items. */
export const RESERVED_PREFIX = '#';
/** Partition key of the catalog item (a Bloom filter of every ACTIVE prompt id). */
export const CATALOG_ID = '#catalog';

/** Digits of the zero-padded version number in a version item's sort key. */
export const VERSION_DIGITS = 6;
/** Highest version number the sort key format can hold. */
export const MAX_VERSION_NUMBER = 10 ** VERSION_DIGITS - 1;

/** DynamoDB's maximum item size (names and values, UTF-8). */
export const MAX_ITEM_BYTES = 400 * 1024;

/** Pointer status values. */
export const STATUS_ACTIVE = 'ACTIVE';
export const STATUS_DELETED = 'DELETED';
export type PromptStatus = typeof STATUS_ACTIVE | typeof STATUS_DELETED;

/** Template types. */
export const TEMPLATE_TEXT = 'TEXT';
export const TEMPLATE_CHAT = 'CHAT';
export type TemplateType = typeof TEMPLATE_TEXT | typeof TEMPLATE_CHAT;

/** Attribute names of the contract (snake_case on the wire). */
export const Attr = {
  promptId: PARTITION_KEY,
  version: SORT_KEY,
  versionNumber: 'version_number',
  latestVersionNumber: 'latest_version_number',
  checksum: 'checksum',
  status: 'status',
  source: 'source',
  sourceVersion: 'source_version',
  sourceChecksum: 'source_checksum',
  sourceRevision: 'source_revision',
  sourceUpdatedAt: 'source_updated_at',
  sourceReadAt: 'source_read_at',
  syncedAt: 'synced_at',
  activatedAt: 'activated_at',
  activatedBy: 'activated_by',
  schemaVersion: 'schema_version',
  // content
  templateType: 'template_type',
  text: 'text',
  messages: 'messages',
  system: 'system',
  inputVariables: 'input_variables',
  modelId: 'model_id',
  inferenceConfig: 'inference_config',
  // catalog
  bloom: 'bloom',
  bloomBits: 'bloom_bits',
  bloomHashes: 'bloom_hashes',
  count: 'count',
  /**
   * Write counter of a `CURRENT` row (pointer and catalog alike): every write of the row sets it to the
   * value read + 1 under a condition on the value read, so it orders the row's states. The L2 cache's
   * ordering rule compares it (see ./l2.ts). 0 when absent (a row written before it existed).
   */
  revision: 'revision',
} as const;

/**
 * Attributes that describe an item rather than the prompt. Everything else on a pointer or version item is
 * prompt content, and content alone feeds the checksum.
 */
export const METADATA_ATTRIBUTES: ReadonlySet<string> = new Set([
  Attr.promptId,
  Attr.version,
  Attr.versionNumber,
  Attr.latestVersionNumber,
  Attr.checksum,
  Attr.status,
  Attr.source,
  Attr.sourceVersion,
  Attr.sourceChecksum,
  Attr.sourceRevision,
  Attr.sourceUpdatedAt,
  Attr.sourceReadAt,
  Attr.syncedAt,
  Attr.activatedAt,
  Attr.activatedBy,
  Attr.schemaVersion,
  Attr.revision,
]);

/** Sort key of version `n`: `v` + n zero-padded to 6 digits. */
export function versionKey(versionNumber: number): string {
  if (!Number.isInteger(versionNumber) || versionNumber < 1 || versionNumber > MAX_VERSION_NUMBER) {
    throw new RangeError(`version number must be an integer from 1 to ${MAX_VERSION_NUMBER}, got ${versionNumber}`);
  }
  return 'v' + String(versionNumber).padStart(VERSION_DIGITS, '0');
}

/** Inverse of {@link versionKey}; `undefined` for anything that is not a version sort key. */
export function parseVersionKey(key: string): number | undefined {
  const m = /^v(\d{6})$/.exec(key);
  if (!m) return undefined;
  const n = Number(m[1]);
  return n >= 1 ? n : undefined;
}

/** Whether `id` may be used as a prompt id (non-empty, not reserved). */
export function isValidPromptId(id: unknown): id is string {
  return typeof id === 'string' && id.length > 0 && id.length <= 1024 && !id.startsWith(RESERVED_PREFIX);
}

