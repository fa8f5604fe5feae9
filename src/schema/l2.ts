/**
 * Wire contract: the L2 cache (ElastiCache for Valkey, or any Redis-protocol store) shared by every reader of
 * one serving table, Node and Python alike, and written through by the invalidation function. Format `v3`.
 *
 * Two classes of value, in two key spaces, so a reader can never pass its own copy off as the stream's:
 * - **Stream values** (written only by the invalidation function): `cdk-prompt-serving:v3/<table>/<id>/<sort key>`
 *   (the pointer `…/CURRENT`, the catalog `…/#catalog/CURRENT`), JSON
 *   `{"inc":<stream label>,"seq":<sequence number>,"writtenAt":<epoch ms>,"item":<DynamoDB JSON>|null}`
 *   (`item` null: the row was removed). Ordering token = (`inc`, `seq`): the table incarnation (the label of
 *   the stream ARN, an ISO-8601 time of the stream's creation, so a table deleted and re-created under the same
 *   name has a greater one) and the stream record's sequence number (DynamoDB Streams deliver one item's records
 *   in the order of its modifications, with increasing sequence numbers). A write replaces the stored value only
 *   if its token is greater ({@link L2_WRITE_THROUGH_SCRIPT}); nothing a person or the sync writes into the
 *   table's attributes (`revision`, `version_number`) takes part, so no repair or hand edit can make the cache
 *   keep an older pointer.
 * - **Fill values** (written by readers after a table read): `cdk-prompt-serving:v3/<table>/#fill/<id>/<sort key>`,
 *   JSON `{"inc":<incarnation>|null,"fetchedAt":<epoch ms>,"item":<DynamoDB JSON>}`, stored for at most the reader's
 *   L1 bound (`maxAgeSeconds + staleWhileRevalidateSeconds`) and trusted only within `maxAgeSeconds` of `fetchedAt`
 *   (a `fetchedAt` more than {@link L2_MAX_CLOCK_SKEW_MS} in the future is not a value), and only while `inc` (the
 *   epoch's incarnation when the reader filled it; null when it knew none) is still the epoch's. So a change
 *   reaches every reader within its L1 bound even when the write-through is down, and no fill outlives its table.
 * - **Epoch** `cdk-prompt-serving:v3/<table>/#epoch`: text `<counter> <incarnation>`, moved by the invalidation
 *   function after each batch ({@link L2_EPOCH_BUMP_SCRIPT}, which heals any garbage). Readers poll it; when it
 *   moves they re-validate their memory copies. A stream value is used only if its `inc` is the epoch's
 *   incarnation; without a readable epoch no stream value is used (unknown lineage: fill or table).
 *
 * Readers may read every key of their table and write only `#fill/` keys (ACL `%R~…/<table>/*` plus
 * `~…/<table>/#fill/*`); the invalidation function may write every key of its table.
 */
import { setOwn } from './checksum';
import { CATALOG_ID, CURRENT, PARTITION_KEY, RESERVED_PREFIX, SORT_KEY } from './keys';

/** Prefix of every L2 key; `v3` is the version of the key and value format. */
export const L2_KEY_PREFIX = 'cdk-prompt-serving:v3';

/** The stream-value key of one item (`sortKey` `CURRENT` or a version key `v000001`). */
export function l2ItemKey(tableName: string, promptId: string, sortKey: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/${promptId}/${sortKey}`;
}

/** The stream-value key of the catalog item. */
export function l2CatalogKey(tableName: string): string {
  return l2ItemKey(tableName, CATALOG_ID, CURRENT);
}

/** The reader-fill key of one item. `#` ids are reserved, so no prompt's key can collide with it. */
export function l2FillKey(tableName: string, promptId: string, sortKey: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/${RESERVED_PREFIX}fill/${promptId}/${sortKey}`;
}

/** The per-table freshness epoch. */
export function l2EpochKey(tableName: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/${RESERVED_PREFIX}epoch`;
}

/** The key pattern (ACL `~pattern`) covering every key of one table, or of every table with `*`. */
export function l2KeyPattern(tableName: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/*`;
}

/** The key pattern of one table's reader fills: the only keys a reader may write. */
export function l2FillPattern(tableName: string): string {
  return `${L2_KEY_PREFIX}/${tableName}/${RESERVED_PREFIX}fill/*`;
}

/**
 * Lifetime of a stream value. Freshness comes from the write-through, not from expiry: the TTL bounds the
 * memory of prompts no longer written (deleted, or a table gone) and how long a value outlives a write-through
 * that stopped altogether (one that fails for a record deletes the key instead).
 */
export const L2_VALUE_TTL_SECONDS = 86_400; // a day

/** A fill value stamped further than this in the future is not a value (a clock cannot be trusted that far). */
export const L2_MAX_CLOCK_SKEW_MS = 5_000;

/** The lifetime of a reader's fill: its L1 bound, `maxAgeSeconds + staleWhileRevalidateSeconds`, in whole seconds (0: no fill). */
export function l2FillTtlSeconds(maxAgeMs: number, staleWhileRevalidateMs: number): number {
  if (maxAgeMs < 1000) return 0;
  return Math.max(1, Math.floor((maxAgeMs + staleWhileRevalidateMs) / 1000));
}

/** A DynamoDB attribute value in DynamoDB JSON (binary as base64 text). */
export type DynamoJsonValue =
  | { S: string } | { N: string } | { B: string } | { BOOL: boolean } | { NULL: true }
  | { SS: string[] } | { NS: string[] } | { BS: string[] }
  | { L: DynamoJsonValue[] } | { M: DynamoJsonItem };
/** An item in DynamoDB JSON. */
export type DynamoJsonItem = { [attribute: string]: DynamoJsonValue };

/** A stream value: what the invalidation function wrote for one row. */
export interface L2StreamValue {
  /** The table incarnation: the label of the stream ARN the record came from. */
  readonly inc: string;
  /** The stream record's sequence number (decimal digits). */
  readonly seq: string;
  /** When the invalidation function wrote it (epoch ms). Informational. */
  readonly writtenAt: number;
  /** The row in DynamoDB JSON; `null` when the row was removed. */
  readonly item: DynamoJsonItem | null;
}

/** A fill value: what a reader read from the table. */
export interface L2FillValue {
  /** The epoch's incarnation when the reader filled it (`null`: none known); used only while it still is. */
  readonly inc: string | null;
  /** When the reader read the table (epoch ms, never later than now + `L2_MAX_CLOCK_SKEW_MS`; clamped to now). */
  readonly fetchedAt: number;
  readonly item: DynamoJsonItem;
}

/** A stream label: the ISO-8601 time at the end of a DynamoDB stream ARN (`…/stream/2026-01-02T03:04:05.678`). */
const INCARNATION = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$/;
const SEQUENCE = /^\d{1,64}$/;

/** The table incarnation of a stream record: the label of its `eventSourceARN`; `undefined` if it has none. */
export function incarnationOf(eventSourceArn: unknown): string | undefined {
  if (typeof eventSourceArn !== 'string') return undefined;
  const label = eventSourceArn.slice(eventSourceArn.lastIndexOf('/stream/') + '/stream/'.length);
  return eventSourceArn.includes('/stream/') && isIncarnation(label) ? label : undefined;
}

export function isIncarnation(value: unknown): value is string {
  return typeof value === 'string' && INCARNATION.test(value);
}

export function isSequenceNumber(value: unknown): value is string {
  return typeof value === 'string' && SEQUENCE.test(value);
}

/** Compares two ordering tokens: negative when `a` is older, 0 equal, positive newer. Sequence numbers as big decimals. */
export function compareTokens(a: { inc: string; seq: string }, b: { inc: string; seq: string }): number {
  if (a.inc !== b.inc) return a.inc < b.inc ? -1 : 1;
  const x = a.seq.replace(/^0+/, '');
  const y = b.seq.replace(/^0+/, '');
  if (x.length !== y.length) return x.length - y.length;
  return x === y ? 0 : x < y ? -1 : 1;
}

export function encodeStreamValue(value: L2StreamValue): string {
  return JSON.stringify({ inc: value.inc, seq: value.seq, writtenAt: value.writtenAt, item: value.item });
}

export function encodeFillValue(value: L2FillValue): string {
  return JSON.stringify({ inc: value.inc, fetchedAt: value.fetchedAt, item: value.item });
}

function parseObject(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : undefined;
}

/** An item of `promptId`/`sortKey` in DynamoDB JSON (its keys say so), else `undefined`. */
function itemOf(item: unknown, promptId: string, sortKey: string): DynamoJsonItem | undefined {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return undefined;
  const keys = item as Record<string, { S?: unknown } | undefined>;
  const pk = keys[PARTITION_KEY];
  const sk = keys[SORT_KEY];
  if (pk === null || typeof pk !== 'object' || pk.S !== promptId) return undefined;
  if (sk === null || typeof sk !== 'object' || sk.S !== sortKey) return undefined;
  return item as DynamoJsonItem;
}

/**
 * Parses a stream value stored for `promptId`/`sortKey`; `undefined` when it is not one (another format, another
 * item or sort key, a malformed token, corrupt).
 */
export function decodeStreamValue(raw: unknown, promptId: string, sortKey: string): L2StreamValue | undefined {
  const value = parseObject(raw);
  if (value === undefined) return undefined;
  const { inc, seq, writtenAt, item } = value;
  if (!isIncarnation(inc) || !isSequenceNumber(seq)) return undefined;
  if (typeof writtenAt !== 'number' || !Number.isFinite(writtenAt)) return undefined;
  if (item === null) return { inc, seq, writtenAt, item: null };
  const parsed = itemOf(item, promptId, sortKey);
  return parsed === undefined ? undefined : { inc, seq, writtenAt, item: parsed };
}

/**
 * Parses a fill value stored for `promptId`/`sortKey`; `undefined` when it is not one, or when `fetchedAt` is
 * more than `L2_MAX_CLOCK_SKEW_MS` after `now` (within it, clamped to `now`).
 */
export function decodeFillValue(raw: unknown, promptId: string, sortKey: string, now: number = Date.now()): L2FillValue | undefined {
  const value = parseObject(raw);
  if (value === undefined) return undefined;
  const { inc, fetchedAt, item } = value;
  if (inc !== null && !isIncarnation(inc)) return undefined;
  if (typeof fetchedAt !== 'number' || !Number.isFinite(fetchedAt) || fetchedAt > now + L2_MAX_CLOCK_SKEW_MS) return undefined;
  const parsed = itemOf(item, promptId, sortKey);
  return parsed === undefined ? undefined : { inc, fetchedAt: Math.min(fetchedAt, now), item: parsed };
}

/** An epoch (`<counter> <incarnation>`): its counter and incarnation, `undefined` when the text is not an epoch. */
export function parseEpoch(raw: unknown): { readonly counter: number; readonly incarnation: string } | undefined {
  if (typeof raw !== 'string') return undefined;
  const match = /^(\d{1,15}) (\S+)$/.exec(raw);
  return match !== null && isIncarnation(match[2]) ? { counter: Number(match[1]), incarnation: match[2] } : undefined;
}

/** The epoch's incarnation (`<counter> <incarnation>`), `undefined` when the text is not an epoch. */
export function epochIncarnation(raw: unknown): string | undefined {
  return parseEpoch(raw)?.incarnation;
}

/**
 * The write-through of one stream value, ordered by its token: KEYS[1] = item key, ARGV[1] = incarnation,
 * ARGV[2] = sequence number, ARGV[3] = value, ARGV[4] = TTL seconds. Returns 1 written, 0 kept (the stored value's
 * token is equal or greater). A stored value of another type or format (garbage, a v2 value) is replaced.
 */
export const L2_WRITE_THROUGH_SCRIPT = `local cur = redis.pcall('GET', KEYS[1])
if type(cur) == 'string' then
  local ok, doc = pcall(cjson.decode, cur)
  if ok and type(doc) == 'table' and type(doc.inc) == 'string' and type(doc.seq) == 'string'
    and string.match(doc.seq, '^%d+$') then
    local newer
    if doc.inc ~= ARGV[1] then
      newer = ARGV[1] > doc.inc
    else
      local a = string.gsub(ARGV[2], '^0+', '')
      local b = string.gsub(doc.seq, '^0+', '')
      if #a ~= #b then newer = #a > #b else newer = a > b end
    end
    if not newer then return 0 end
  end
end
redis.call('SET', KEYS[1], ARGV[3], 'EX', tonumber(ARGV[4]))
return 1`;

/**
 * Moves the epoch: KEYS[1] = epoch key, ARGV[1] = the batch's incarnation, ARGV[2] = the latest incarnation
 * that can be real (the writer's now as a stream label), ARGV[3] (optional) = where a new counter starts: a random
 * number of at most 14 digits the writer draws per call ({@link epochStart}). Stores `<counter + 1> <incarnation>`,
 * the incarnation being the greater of ARGV[1] and the stored one if that is well-formed and not after ARGV[2].
 * Heals any garbage: another type, a non-integer, a counter of 15 digits or more. An epoch that is absent (evicted,
 * lost in a failover) or garbage starts again at ARGV[3] + 1 (at 1 without it), so a re-created epoch does not take a
 * value a reader has already seen: readers compare the text, and a repeated one would hide the next change from them
 * until `maxAgeSeconds`. Returns the counter.
 */
export const L2_EPOCH_BUMP_SCRIPT = `local cur = redis.pcall('GET', KEYS[1])
local n, inc = 0, ARGV[1]
if ARGV[3] and string.match(ARGV[3], '^%d+$') and #ARGV[3] < 15 then n = tonumber(ARGV[3]) end
if type(cur) == 'string' then
  local c, i = string.match(cur, '^(%d+) (%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%d)$')
  if c and #c < 15 then n = tonumber(c) end
  if i and i > inc and i <= ARGV[2] then inc = i end
end
n = n + 1
redis.call('SET', KEYS[1], string.format('%d %s', n, inc))
return n`;

/**
 * Where a re-created epoch's counter starts ({@link L2_EPOCH_BUMP_SCRIPT} ARGV[3]): a uniformly random whole number
 * below 2^46 (at most 14 digits, so the counter keeps within the 15 digits every reader parses for ~2^46 moves).
 * Two creations pick the same start with probability 2^-46. `random` returns a number in [0, 1).
 */
export function epochStart(random: () => number = Math.random): string {
  return String(Math.floor(random() * 2 ** 46));
}

/** The writer's now as a stream label (ISO-8601 without zone, milliseconds). */
export function incarnationAt(ms: number): string {
  return new Date(ms).toISOString().slice(0, 23);
}

/**
 * Commands each role may run, on its table's keys only. Connection-level commands a client library sends on its
 * own (HELLO, AUTH, PING, CLUSTER SLOTS/SHARDS, CLIENT SETNAME) are listed too. Not CLIENT SETINFO: both clients
 * turn it off (node-redis `disableClientInfo`), so no user may run it, and Redis 7.0 (the test stand-in) rejects
 * the rule.
 */
export const L2_CONNECTION_COMMANDS: readonly string[] = ['hello', 'auth', 'ping', 'cluster|slots', 'cluster|shards', 'client|setname', 'readonly'];
/** Readers: `GET` (stream values, fills, the epoch) and `SET` (fills only: the key permissions allow no other write). */
export const L2_READER_COMMANDS: readonly string[] = [
  'get', 'set', 'hello', 'auth', 'ping', 'cluster|slots', 'cluster|shards', 'client|setname', 'readonly',
]; // written out (no spread), so bundles that do not use the lists drop them
/** The invalidation function: the ordering and epoch scripts (hence `get`/`set`), `del` when a write cannot land. */
export const L2_WRITER_COMMANDS: readonly string[] = [
  'get', 'set', 'evalsha', 'eval', 'del', 'hello', 'auth', 'ping', 'cluster|slots', 'cluster|shards', 'client|setname', 'readonly',
];

/** A Redis ACL rule string for `commands` on `pattern`: `~pattern -@all +cmd …` (without user, `on` or password). */
export function l2AccessRules(pattern: string, commands: readonly string[]): string {
  return [`~${pattern}`, '-@all', ...commands.map((c) => `+${c}`)].join(' ');
}

/**
 * The reader's ACL rules on `tableName`: read every key of the table (`%R~`), write only the fill keys (`~` of
 * `#fill/*`). So a reader can neither move the epoch nor replace a stream value.
 */
export function l2ReaderAccessRules(tableName: string): string {
  return [`%R~${l2KeyPattern(tableName)}`, `~${l2FillPattern(tableName)}`, '-@all', ...L2_READER_COMMANDS.map((c) => `+${c}`)].join(' ');
}

/** The invalidation function's ACL rules on `tableName`: every key of the table, the writer's commands. */
export function l2WriterAccessRules(tableName: string): string {
  return l2AccessRules(l2KeyPattern(tableName), L2_WRITER_COMMANDS);
}

/** Converts an SDK attribute value map (binary as `Uint8Array`) to DynamoDB JSON (binary as base64). */
export function toDynamoJson(item: Record<string, unknown>): DynamoJsonItem {
  const out: DynamoJsonItem = {};
  for (const [k, v] of Object.entries(item)) setOwn(out, k, toJsonValue(v as Record<string, unknown>));
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
  for (const [k, v] of Object.entries(item)) setOwn(out, k, fromJsonValue(v));
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
