/**
 * Wire contract: the `#catalog` Bloom filter of every ACTIVE prompt id (bit layout and hashing).
 */
import { createHash } from 'node:crypto';

/* eslint-disable no-bitwise -- the Bloom filter's bit layout is part of the wire contract */
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

/** A copy of the filter bytes with `ids` added (same bits and hashes): membership grows in place. */
export function bloomAdd(bytes: Uint8Array, ids: Iterable<string>, bits: number, hashes: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  for (const id of ids) {
    for (const j of bloomIndexes(id, bits, hashes)) out[j >> 3] |= 1 << (j & 7);
  }
  return out;
}

/** Whether the filter may contain `id` (false means certainly absent). */
export function bloomMightContain(bytes: Uint8Array, bits: number, hashes: number, id: string): boolean {
  for (const j of bloomIndexes(id, bits, hashes)) {
    if (((bytes[j >> 3] ?? 0) & (1 << (j & 7))) === 0) return false;
  }
  return true;
}


/** Largest filter a catalog item can hold: DynamoDB's item limit, in bits. */
export const BLOOM_MAX_BITS = 400 * 1024 * 8;

/** A catalog item's fields as read (types unchecked: the table can be edited by hand). */
export interface CatalogFields {
  readonly bloom?: unknown;
  readonly bits?: unknown;
  readonly hashes?: unknown;
  readonly count?: unknown;
  readonly revision?: unknown;
}

/** Which rule of {@link catalogProblem} a catalog item breaks (a reader only asks whether one is broken). */
export type CatalogFault = 'bloom' | 'bits' | 'size' | 'hashes' | 'count' | 'revision' | 'tail' | 'zero' | 'empty' | 'dense';

/** Set bits of a filter. */
function setBits(bloom: Uint8Array): number {
  let set = 0;
  for (let b of bloom) for (; b; b &= b - 1) set++;
  return set;
}

/**
 * The rule of {@link catalogProblem} a catalog item breaks, or `undefined` when it is consistent: the check alone,
 * without the messages, so a reader that only asks whether bundles no message.
 */
export function catalogFault(c: CatalogFields): CatalogFault | undefined {
  const { bloom, bits, hashes, count, revision } = c;
  if (!(bloom instanceof Uint8Array)) return 'bloom';
  if (!Number.isInteger(bits) || (bits as number) < 8 || (bits as number) > BLOOM_MAX_BITS) return 'bits';
  if (bloom.length !== Math.ceil((bits as number) / 8)) return 'size';
  if (!Number.isInteger(hashes) || (hashes as number) < 1 || (hashes as number) > BLOOM_MAX_HASHES) return 'hashes';
  if (!Number.isSafeInteger(count) || (count as number) < 0) return 'count';
  if (revision !== undefined && (!Number.isSafeInteger(revision) || (revision as number) < 0)) return 'revision';
  if ((bits as number) % 8 !== 0 && (bloom[bloom.length - 1] >> ((bits as number) % 8)) !== 0) return 'tail';
  const set = setBits(bloom);
  if (count === 0 && set > 0) return 'zero';
  if ((count as number) > 0 && set === 0) return 'empty';
  if (set > (count as number) * (hashes as number)) return 'dense';
  return undefined;
}

/**
 * Why a catalog item cannot be trusted, or `undefined` when it is consistent. An untrusted catalog must be
 * ignored by readers (it rules nothing out) and rebuilt by the next sync. The rules, which every client
 * applies the same way:
 * 1. `bloom` is binary; `bloom_bits` a whole number from 8 to {@link BLOOM_MAX_BITS} with exactly
 *    `ceil(bloom_bits / 8)` bytes of `bloom`; `bloom_hashes` a whole number from 1 to {@link BLOOM_MAX_HASHES};
 *    `count` a whole number ≥ 0; `revision`, when present, a whole number ≥ 0.
 * 2. The set bits agree with `count`: none when `count` is 0; at least one, and at most
 *    `count × bloom_hashes`, when it is positive; none at or beyond `bloom_bits`.
 */
export function catalogProblem(c: CatalogFields): string | undefined {
  const fault = catalogFault(c);
  const bits = c.bits as number;
  const count = c.count as number;
  switch (fault) {
    case undefined: return undefined;
    case 'bloom': return '`bloom` must be binary';
    case 'bits': return `\`bloom_bits\` must be a whole number from 8 to ${BLOOM_MAX_BITS}`;
    case 'size': return `\`bloom\` must hold ceil(bloom_bits / 8) = ${Math.ceil(bits / 8)} bytes, got ${(c.bloom as Uint8Array).length}`;
    case 'hashes': return `\`bloom_hashes\` must be a whole number from 1 to ${BLOOM_MAX_HASHES}`;
    case 'count': return '`count` must be a whole number, at least 0';
    case 'revision': return '`revision` must be a whole number, at least 0';
    case 'tail': return 'bits at or beyond `bloom_bits` are set';
    case 'zero': return '`count` is 0 but the filter has set bits';
    case 'empty': return `\`count\` is ${count} but the filter is empty`;
    case 'dense': return `the filter has ${setBits(c.bloom as Uint8Array)} set bits, more than count × bloom_hashes = ${count * (c.hashes as number)}`;
  }
}
