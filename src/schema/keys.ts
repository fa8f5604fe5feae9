/**
 * Wire contract (table schema v2; v2 added labels and rollouts, ./labels.ts): keys, reserved ids, attribute names, statuses and version sort keys.
 * Part of the schema module shared by the construct, the handlers and the runtime clients (see ./index.ts).
 */

/**
 * Version of the item layout described here. Written on every pointer as `schema_version`. 2: label items
 * (`LABEL#<name>`) with their `rollout` map, and audit records (`AUDIT#…`), beside the v1 items (unchanged).
 */
export const SCHEMA_VERSION = 2;

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

/**
 * The sync's shared Bedrock request budget (one token bucket for every concurrent sync): partition key and
 * sort key of its item. Not a `CURRENT` row, so DynamoDB Streams filters and readers never see it.
 */
export const BUDGET_ID = '#bedrock-budget';
export const BUDGET_SORT_KEY = 'BUCKET';
/**
 * Per-prompt sync claims (coalescing of concurrent syncs of one prompt): partition key; the sort key is the
 * prompt id (at most {@link MAX_PROMPT_ID_BYTES} bytes, DynamoDB's sort key limit).
 */
export const CLAIMS_ID = '#sync-claims';

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

/**
 * The attribute names a reader reads, each a constant of its own: a bundler keeps only the ones a reader names, where
 * it keeps every name of {@link Attr} (the sync's and the write path's too) as soon as one is read from it.
 */
export const ATTR_VERSION_NUMBER = 'version_number';
export const ATTR_CHECKSUM = 'checksum';
export const ATTR_STATUS = 'status';
export const ATTR_SCHEMA_VERSION = 'schema_version';
export const ATTR_TEMPLATE_TYPE = 'template_type';
export const ATTR_BLOOM = 'bloom';
export const ATTR_BLOOM_BITS = 'bloom_bits';
export const ATTR_BLOOM_HASHES = 'bloom_hashes';
export const ATTR_COUNT = 'count';
export const ATTR_REVISION = 'revision';

/** Attribute names of the contract (snake_case on the wire). */
export const Attr = {
  promptId: PARTITION_KEY,
  version: SORT_KEY,
  versionNumber: ATTR_VERSION_NUMBER,
  latestVersionNumber: 'latest_version_number',
  checksum: ATTR_CHECKSUM,
  status: ATTR_STATUS,
  source: 'source',
  sourceVersion: 'source_version',
  sourceChecksum: 'source_checksum',
  sourceRevision: 'source_revision',
  sourceUpdatedAt: 'source_updated_at',
  sourceReadAt: 'source_read_at',
  syncedAt: 'synced_at',
  activatedAt: 'activated_at',
  activatedBy: 'activated_by',
  schemaVersion: ATTR_SCHEMA_VERSION,
  // content
  templateType: ATTR_TEMPLATE_TYPE,
  text: 'text',
  messages: 'messages',
  system: 'system',
  inputVariables: 'input_variables',
  modelId: 'model_id',
  inferenceConfig: 'inference_config',
  // catalog
  bloom: ATTR_BLOOM,
  bloomBits: ATTR_BLOOM_BITS,
  bloomHashes: ATTR_BLOOM_HASHES,
  count: ATTR_COUNT,
  /**
   * Write counter of a `CURRENT` row (pointer and catalog alike): every write of the row sets it to the
   * value read + 1 under a condition on the value read, so it orders the row's states. The L2 cache's
   * ordering rule compares it (see ./l2.ts). 0 when absent (a row written before it existed).
   */
  revision: ATTR_REVISION,
  // sync coordination items (not prompt rows)
  /** Budget item: epoch milliseconds of the next free Bedrock call slot (N). */
  nextSlotAt: 'next_slot_at',
  /** Claim item: when the claiming sync started (epoch ms, N), and when the claim lapses (epoch s, N; TTL-friendly). */
  claimedAt: 'claimed_at',
  claimExpiresAt: 'expires_at',
  /** Claim item: a random token naming the claiming sync (S). */
  claimToken: 'claim_token',
  /** Claim item: how its sync ended (`done` | `failed`, S); absent while it runs. */
  claimOutcome: 'claim_outcome',
} as const;

/**
 * Attributes that describe an item rather than the prompt. Everything else on a pointer or version item is
 * prompt content, and content alone feeds the checksum.
 */
export const METADATA_ATTRIBUTES: ReadonlySet<string> = new Set<string>([
  PARTITION_KEY, SORT_KEY, ATTR_VERSION_NUMBER, 'latest_version_number', ATTR_CHECKSUM, ATTR_STATUS, 'source', 'source_version',
  'source_checksum', 'source_revision', 'source_updated_at', 'source_read_at', 'synced_at', 'activated_at', 'activated_by',
  ATTR_SCHEMA_VERSION, ATTR_REVISION,
] satisfies readonly (typeof Attr)[keyof typeof Attr][]);

/** Sort key of version `n`: `v` + n zero-padded to 6 digits. */
export function versionKey(versionNumber: number): string {
  if (!Number.isInteger(versionNumber) || versionNumber < 1 || versionNumber > MAX_VERSION_NUMBER) {
    throw new RangeError(`version number must be an integer from 1 to ${MAX_VERSION_NUMBER}, got ${versionNumber}`);
  }
  return versionSortKey(versionNumber);
}

/** {@link versionKey} of a version number already checked (the reader's targets check theirs with their own reason). */
export function versionSortKey(versionNumber: number): string {
  return 'v' + String(versionNumber).padStart(VERSION_DIGITS, '0');
}

/** Inverse of {@link versionKey}; `undefined` for anything that is not a version sort key. */
export function parseVersionKey(key: string): number | undefined {
  const m = /^v(\d{6})$/.exec(key);
  if (!m) return undefined;
  const n = Number(m[1]);
  return n >= 1 ? n : undefined;
}

/**
 * Longest prompt id, in bytes of UTF-8 (not characters: one CJK character is 3 bytes, an emoji 4).
 * DynamoDB allows 2,048 bytes in a partition key; half of that leaves room for the L2 cache key prefix and
 * for composite keys, and is far above any real prompt name (Bedrock's ids are 10 characters).
 */
export const MAX_PROMPT_ID_BYTES = 1024;

/**
 * The prompt id rule in one phrase, for the messages of every part that rejects an id without saying which rule
 * it broke (the grant's `promptIds`, the runtime client's not-found reason). {@link promptIdProblem} says which.
 */
// A literal, {@link MAX_PROMPT_ID_BYTES} with its thousands separator written out: not `toLocaleString('en-US')`, which
// loads ICU's number formatting when the module is evaluated (~7 ms of every reader's cold start, a CPU profile of the
// bundled reader, bench/reader-cost.bench.ts), nor formatting code every reader bundles. The surface fixture
// (`invalidIdReason`) pins it.
export const PROMPT_ID_RULE = "1 to 1,024 bytes of UTF-8, not starting with '#'";

/**
 * Bytes of `id` in UTF-8, or `undefined` if it is not well-formed Unicode (a lone surrogate: encoders
 * would replace it, so two different ids would become one key).
 */
export function utf8ByteLength(id: string): number | undefined {
  let bytes = 0;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c < 0x80) {bytes += 1;} else if (c < 0x800) {bytes += 2;} else if (c >= 0xd800 && c <= 0xdbff) {
      const next = id.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return undefined;
      bytes += 4;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {return undefined;} else {bytes += 3;}
  }
  return bytes;
}

/**
 * Why `id` cannot be a prompt id, or `undefined` when it can. The rules (mirrored by the Python client):
 * a string of 1 to {@link MAX_PROMPT_ID_BYTES} bytes of UTF-8, well-formed Unicode, not starting with
 * {@link RESERVED_PREFIX}.
 */
export function promptIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return `a prompt id must be a string, got ${id === null ? 'null' : typeof id}`;
  if (id.length === 0) return 'a prompt id must not be empty';
  if (id.startsWith(RESERVED_PREFIX)) return `prompt ids starting with '${RESERVED_PREFIX}' are reserved`;
  const bytes = utf8ByteLength(id);
  if (bytes === undefined) return 'a prompt id must be well-formed Unicode (it holds a lone surrogate)';
  if (bytes > MAX_PROMPT_ID_BYTES) return `a prompt id must be at most ${MAX_PROMPT_ID_BYTES} bytes of UTF-8, got ${bytes}`;
  return undefined;
}

/**
 * Whether `id` may be used as a prompt id: the rules of {@link promptIdProblem}, without its messages (a reader only
 * asks whether, and bundles this alone).
 */
export function isValidPromptId(id: unknown): id is string {
  // `\p{Cs}` in a `u` pattern matches a lone surrogate only (a pair is one code point): then the length is UTF-8's,
  // as {@link utf8ByteLength} counts it.
  return typeof id === 'string' && id.length > 0 && !id.startsWith(RESERVED_PREFIX) && !/\p{Cs}/u.test(id)
    && Buffer.byteLength(id, 'utf8') <= MAX_PROMPT_ID_BYTES;
}

/** `JSON.stringify(id)` cut to a readable length, for error messages about hostile ids. */
export function describePromptId(id: unknown): string {
  const text = typeof id === 'string' ? JSON.stringify(id) : String(id);
  return text.length > 80 ? `${text.slice(0, 60)}…" (${text.length} characters)` : text;
}
