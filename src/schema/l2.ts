/**
 * Wire contract: the L2 cache (ElastiCache for Valkey, or any Redis-protocol store) shared by every reader of
 * one serving table, Node and Python alike, and written through by the invalidation function.
 *
 * - Item key: `cdk-prompt-serving:v2/<table>/<prompt id>/<sort key>` — the pointer `…/CURRENT`, a pinned
 *   version `…/v000003`, the catalog `…/#catalog/CURRENT`. Unambiguous: table names and sort keys hold no `/`.
 * - Epoch key: `cdk-prompt-serving:v2/<table>/#epoch`, an integer (as text) the invalidation function `INCR`s
 *   after each batch it wrote; readers poll it and re-validate their in-process copies when it moves.
 * - Value: JSON text `{"revision":<int>,"fetchedAt":<epoch ms>,"item":<the item in DynamoDB JSON>}`, the item
 *   exactly as DynamoDB's JSON wire format has it (and a Lambda stream record's `NewImage`): `{"S":…}`,
 *   `{"N":"3"}`, binary as base64 `{"B":"…"}`. Lossless in both languages.
 * - Ordering rule: a write replaces the stored value only if its `revision` is greater (equal keeps it; a
 *   stored value that is not this format is replaced). Every write of a `CURRENT` row increments the row's
 *   `revision` attribute, so the L2 never goes back to an older pointer, whatever order reader fills and
 *   (redelivered, reordered) stream records arrive in. One key per script call: cluster-safe.
 *
 * `v2` is the version of this key and value format (v1 held decoded items without a revision).
 */
import { CATALOG_ID, CURRENT, PARTITION_KEY, RESERVED_PREFIX } from './keys';

/** Prefix of every L2 key; the `v2` is the version of the key and value format. */
export const L2_KEY_PREFIX = 'cdk-prompt-serving:v2';

/** The L2 key of one item (`sortKey` `CURRENT` or a version key `v000001`). */
export function l2ItemKey(tableName: string, promptId: string, sortKey: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/${promptId}/${sortKey}`;
}

/** The L2 key of the catalog item. */
export function l2CatalogKey(tableName: string): string {
  return l2ItemKey(tableName, CATALOG_ID, CURRENT);
}

/** The per-table freshness epoch. `#` ids are reserved, so no prompt's key can collide with it. */
export function l2EpochKey(tableName: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/${RESERVED_PREFIX}epoch`;
}

/** The key pattern (ACL `~pattern`) covering every key of one table, or of every table with `*`. */
export function l2KeyPattern(tableName: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/*`;
}

/** Lifetime of every L2 value. Freshness comes from the write-through, not from expiry: the TTL only bounds growth. */
export const L2_VALUE_TTL_SECONDS = 24 * 60 * 60;

/** A DynamoDB attribute value in DynamoDB JSON (binary as base64 text). */
export type DynamoJsonValue =
  | { S: string } | { N: string } | { B: string } | { BOOL: boolean } | { NULL: true }
  | { SS: string[] } | { NS: string[] } | { BS: string[] }
  | { L: DynamoJsonValue[] } | { M: DynamoJsonItem };
/** An item in DynamoDB JSON. */
export type DynamoJsonItem = { [attribute: string]: DynamoJsonValue };

/** What an L2 item key holds. */
export interface L2Value {
  /** The item's `revision` attribute (0 when absent): the ordering rule compares it. */
  readonly revision: number;
  /** When the writer read the item (epoch ms). Informational: a reader never trusts one in the future. */
  readonly fetchedAt: number;
  /** The item in DynamoDB JSON. */
  readonly item: DynamoJsonItem;
}

export function encodeL2Value(value: L2Value): string {
  return JSON.stringify({ revision: value.revision, fetchedAt: value.fetchedAt, item: value.item });
}

/**
 * Parses an L2 value stored for `promptId`; `undefined` when it is not one (another format, another item, a
 * negative or fractional revision, corrupt). `fetchedAt` is clamped to `now` so a clock in the future cannot
 * make a copy look fresher than it is.
 */
export function decodeL2Value(raw: string, promptId: string, now: number = Date.now()): L2Value | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { revision, fetchedAt, item } = value as Record<string, unknown>;
  if (!Number.isSafeInteger(revision) || (revision as number) < 0) return undefined;
  if (typeof fetchedAt !== 'number' || !Number.isFinite(fetchedAt)) return undefined;
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return undefined;
  const pk = (item as Record<string, unknown>)[PARTITION_KEY] as { S?: unknown } | undefined;
  if (pk?.S !== promptId) return undefined;
  return { revision: revision as number, fetchedAt: Math.min(fetchedAt, now), item: item as DynamoJsonItem };
}

/** The `revision` of an item in DynamoDB JSON (0 when absent or not a whole number ≥ 0). */
export function itemRevision(item: DynamoJsonItem): number {
  const raw = (item.revision as { N?: string } | undefined)?.N;
  const n = raw === undefined ? 0 : Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/**
 * The write of the ordering rule, one key: `EVALSHA` (falling back to `EVAL`) with
 * KEYS[1] = item key, ARGV[1] = revision, ARGV[2] = value, ARGV[3] = TTL seconds. Returns 1 written, 0 kept.
 * The text is part of the contract (both clients send this exact script, so they share its SHA-1).
 */
export const L2_PUT_IF_NEWER_SCRIPT = [
  "local cur = redis.call('GET', KEYS[1])",
  'if cur then',
  '  local ok, doc = pcall(cjson.decode, cur)',
  "  if ok and type(doc) == 'table' then",
  "    local rev = tonumber(doc['revision'])",
  '    if rev and rev >= tonumber(ARGV[1]) then return 0 end',
  '  end',
  'end',
  "redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))",
  'return 1',
].join('\n');

/**
 * Commands each role may run: the ACL / ElastiCache access string allows these and nothing else, on
 * {@link l2KeyPattern} keys only. Connection-level commands a client library sends on its own (HELLO, AUTH,
 * PING, CLUSTER SLOTS/SHARDS, CLIENT SETNAME) are listed too. Not CLIENT SETINFO: both clients turn it off
 * (node-redis `disableClientInfo`), so no user may run it, and Redis 7.0 (the test stand-in) rejects the rule.
 */
export const L2_CONNECTION_COMMANDS: readonly string[] = ['hello', 'auth', 'ping', 'cluster|slots', 'cluster|shards', 'client|setname', 'readonly'];
/**
 * Readers: read, fill (the script) and poll the epoch. `set` is listed because an ACL also checks the commands
 * a script runs (the script's own `SET`); clients send it only through the script.
 */
export const L2_READER_COMMANDS: readonly string[] = ['get', 'set', 'evalsha', 'eval', ...L2_CONNECTION_COMMANDS];
/** The invalidation function: write through (the script, hence `set`), bump the epoch, drop a removed item. */
export const L2_WRITER_COMMANDS: readonly string[] = ['get', 'set', 'evalsha', 'eval', 'incr', 'del', ...L2_CONNECTION_COMMANDS];

/** A Redis ACL rule string for `commands` on `pattern`: `~pattern -@all +cmd …` (without user, `on` or password). */
export function l2AccessRules(pattern: string, commands: readonly string[]): string {
  return [`~${pattern}`, '-@all', ...commands.map((c) => `+${c}`)].join(' ');
}

/** Converts an SDK attribute value map (binary as `Uint8Array`) to DynamoDB JSON (binary as base64). */
export function toDynamoJson(item: Record<string, unknown>): DynamoJsonItem {
  const out: DynamoJsonItem = {};
  for (const [k, v] of Object.entries(item)) out[k] = toJsonValue(v as Record<string, unknown>);
  return out;
}

function toJsonValue(av: Record<string, unknown>): DynamoJsonValue {
  if (av.B !== undefined) return { B: base64(av.B) };
  if (av.BS !== undefined) return { BS: (av.BS as unknown[]).map(base64) };
  if (av.L !== undefined) return { L: (av.L as Record<string, unknown>[]).map(toJsonValue) };
  if (av.M !== undefined) return { M: toDynamoJson(av.M as Record<string, unknown>) };
  const [type] = Object.keys(av).filter((t) => av[t] !== undefined && t !== '$unknown');
  return { [type]: av[type] } as DynamoJsonValue;
}

/** Converts DynamoDB JSON back to an SDK attribute value map (binary as `Uint8Array`). */
export function fromDynamoJson(item: DynamoJsonItem): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) out[k] = fromJsonValue(v);
  return out;
}

function fromJsonValue(av: DynamoJsonValue): Record<string, unknown> {
  if ('B' in av) return { B: fromBase64(av.B) };
  if ('BS' in av) return { BS: av.BS.map(fromBase64) };
  if ('L' in av) return { L: av.L.map(fromJsonValue) };
  if ('M' in av) return { M: fromDynamoJson(av.M) };
  return { ...av };
}

function base64(bytes: unknown): string {
  if (typeof bytes === 'string') return bytes; // already base64 (a Lambda stream event)
  const b = bytes as Uint8Array;
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
}

function fromBase64(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'base64'));
}
