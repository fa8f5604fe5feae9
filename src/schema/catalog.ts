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

/** Whether the filter may contain `id` (false means certainly absent). */
export function bloomMightContain(bytes: Uint8Array, bits: number, hashes: number, id: string): boolean {
  for (const j of bloomIndexes(id, bits, hashes)) {
    if (((bytes[j >> 3] ?? 0) & (1 << (j & 7))) === 0) return false;
  }
  return true;
}

