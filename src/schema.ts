/**
 * Table schema v1 — the wire contract shared by the construct, the sync handler and the runtime clients.
 *
 * This module is the only code those three share. It has no dependency on aws-cdk-lib, constructs or the
 * AWS SDK so the runtime client can import it without growing a Lambda bundle. See README "Wire contract".
 * It is deliberately not exported from the jsii entry point (`src/index.ts`).
 */
import { createHash } from 'node:crypto';

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
]);

/** Environment variables set by the construct and read by the handler and the runtime client. */
export const Env = {
  /** Name of the serving table: set on the sync function and by `PromptServingTable.addReader(fn)`. */
  tableName: 'PROMPT_SERVING_TABLE_NAME',
  /** Sync handler: `bedrock` or `directory`. */
  sourceType: 'PROMPT_SERVING_SOURCE',
  /** Sync handler: JSON options of the source (see sync/sources). */
  sourceOptions: 'PROMPT_SERVING_SOURCE_OPTIONS',
  /** Sync handler: CloudWatch namespace of the Embedded Metric Format metrics. */
  metricsNamespace: 'PROMPT_SERVING_METRICS_NAMESPACE',
} as const;

/** Default CloudWatch namespace of the sync metrics. */
export const DEFAULT_METRICS_NAMESPACE = 'CdkPromptServing';

/** The metric names the sync handler emits (Embedded Metric Format) and the construct alarms on. */
export const SyncMetric = {
  scanned: 'PromptsScanned',
  unchanged: 'PromptsUnchanged',
  written: 'PromptsWritten',
  deleted: 'PromptsDeleted',
  failed: 'PromptsFailed',
  sourceThrottles: 'SourceThrottles',
  duration: 'SyncDuration',
  fullSyncSucceeded: 'FullSyncSucceeded',
} as const;

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

/** A JSON value as stored in the table. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Prompt content: the part of an item the checksum covers. */
export interface PromptContent {
  template_type: TemplateType;
  text?: string;
  messages?: JsonValue[];
  system?: JsonValue[];
  input_variables?: string[];
  model_id?: string;
  inference_config?: { [key: string]: JsonValue };
  [key: string]: JsonValue | undefined;
}

/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, `undefined` members dropped.
 * Numbers use JavaScript's shortest round-trip form (what `JSON.stringify` prints).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new TypeError(`cannot canonicalise non-finite number ${value}`);
    }
    if (value === undefined) return 'null';
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return '[' + value.map((v) => canonicalJson(v === undefined ? null : v)).join(',') + ']';
  }
  if (value instanceof Uint8Array) {
    throw new TypeError('binary values are not allowed in prompt content');
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(obj[k])).join(',') + '}';
}

/** The content part of an item (everything but {@link METADATA_ATTRIBUTES}). */
export function contentOf(item: Record<string, unknown>): PromptContent {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) {
    if (!METADATA_ATTRIBUTES.has(k) && v !== undefined) out[k] = v;
  }
  return out as PromptContent;
}

/** `sha256:` + 64 lowercase hex digits of the canonical JSON of the prompt content. */
export function checksum(content: Record<string, unknown>): string {
  return 'sha256:' + createHash('sha256').update(canonicalJson(contentOf(content)), 'utf8').digest('hex');
}

/** Names of the `{{variable}}` placeholders in a template, in order of first use. */
export function templateVariables(template: string): string[] {
  const seen = new Set<string>();
  for (const m of template.matchAll(TEMPLATE_VARIABLE)) seen.add(m[1]);
  return [...seen];
}

/** `{{ name }}`: letters, digits, `_`, `-` and `.`; spaces inside the braces are allowed. */
export const TEMPLATE_VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

// ---------------------------------------------------------------------------------------------------------
// Sources: facts the construct (IAM, event rule, validation) and the sync handler must agree on
// ---------------------------------------------------------------------------------------------------------

/** Bedrock Prompt Management's `GetPrompt` quota, and separately `ListPrompts`': requests/second per account and Region. */
export const BEDROCK_PROMPT_QUOTA_PER_SECOND = 10;
/** Default pace of one sync's Bedrock calls: half the quota, leaving the rest to every other caller. */
export const DEFAULT_SOURCE_REQUESTS_PER_SECOND = BEDROCK_PROMPT_QUOTA_PER_SECOND / 2;
/** A Bedrock prompt id: 10 letters or digits. */
export const BEDROCK_PROMPT_ID = /^[0-9a-zA-Z]{10}$/;
/** Bedrock calls whose successful CloudTrail records trigger a one-prompt sync. */
export const PROMPT_CHANGE_EVENT_NAMES: readonly string[] = ['CreatePrompt', 'UpdatePrompt', 'CreatePromptVersion', 'DeletePrompt'];

/** File types a prompts-as-code directory is read for. */
export const PROMPT_FILE_EXTENSIONS: readonly string[] = ['.md', '.yaml', '.yml', '.json'];

/** Directory entries a prompts-as-code directory skips: names starting with `.` or `_`. */
export function isSkippedEntry(name: string): boolean {
  return name.startsWith('.') || name.startsWith('_');
}

/** Whether a file (by name) is a prompt file: a prompt extension, and not `README.md`. */
export function isPromptFile(name: string): boolean {
  const lower = name.toLowerCase();
  const dot = lower.lastIndexOf('.');
  return lower !== 'readme.md' && dot > 0 && PROMPT_FILE_EXTENSIONS.includes(lower.slice(dot));
}

/* eslint-disable no-bitwise -- the Bloom filter's bit layout is part of the wire contract */
// ---------------------------------------------------------------------------------------------------------
// Bloom filter catalog
// ---------------------------------------------------------------------------------------------------------

/** Target false-positive rate the sync sizes the catalog for. */
export const BLOOM_FALSE_POSITIVE_RATE = 0.01;
/** Smallest filter the sync writes (bits), so a handful of new prompts don't force a resize. */
export const BLOOM_MIN_BITS = 1024;
/** Most hash functions the sync uses. */
export const BLOOM_MAX_HASHES = 16;

/** Filter size for `count` ids at {@link BLOOM_FALSE_POSITIVE_RATE}: bits (a multiple of 8) and hash count. */
export function bloomParameters(count: number): { bits: number; hashes: number } {
  const n = Math.max(1, count);
  const ideal = Math.ceil((-n * Math.log(BLOOM_FALSE_POSITIVE_RATE)) / (Math.LN2 * Math.LN2));
  const bits = Math.max(BLOOM_MIN_BITS, Math.ceil(ideal / 8) * 8);
  const hashes = Math.min(BLOOM_MAX_HASHES, Math.max(1, Math.round((bits / n) * Math.LN2)));
  return { bits, hashes };
}

/** Bit indexes of `id`: `(h1 + i*h2) mod bits`, h1/h2 the first two big-endian uint32 of SHA-256(id). */
export function bloomIndexes(id: string, bits: number, hashes: number): number[] {
  const digest = createHash('sha256').update(id, 'utf8').digest();
  const h1 = digest.readUInt32BE(0);
  const h2 = digest.readUInt32BE(4);
  const out: number[] = [];
  for (let i = 0; i < hashes; i++) {
    // BigInt-free exact arithmetic: h1 + i*h2 stays below 2^53 for i < 2^21.
    out.push((h1 + i * h2) % bits);
  }
  return out;
}

/** Builds the filter bytes for `ids` (bit j = bit j%8, least significant first, of byte floor(j/8)). */
export function bloomBuild(ids: Iterable<string>, bits: number, hashes: number): Uint8Array {
  const bytes = new Uint8Array(Math.ceil(bits / 8));
  for (const id of ids) {
    for (const j of bloomIndexes(id, bits, hashes)) bytes[j >> 3] |= 1 << (j & 7);
  }
  return bytes;
}

/** Whether the filter may contain `id` (false means certainly absent). */
export function bloomMightContain(bytes: Uint8Array, bits: number, hashes: number, id: string): boolean {
  for (const j of bloomIndexes(id, bits, hashes)) {
    if (((bytes[j >> 3] ?? 0) & (1 << (j & 7))) === 0) return false;
  }
  return true;
}
