/**
 * Minimal DynamoDB attribute-value codec for JSON-shaped prompt items (S, N, BOOL, NULL, L, M, B), shared by
 * the sync engine, the admin API and the runtime client.
 *
 * Not `@aws-sdk/util-dynamodb`: it would cost bundles nothing (`@aws-sdk/*` is external, the Lambda runtime
 * ships it), but its `marshall`/`unmarshall` differ where prompt content needs JSON semantics (each pinned by
 * test/ddb-codec.test.ts against the real package): `marshall` rejects every number above 2^53, floats such as
 * `1e300` included, so such a prompt could not sync; `unmarshall` returns a `BigInt` for such integers, which
 * `JSON.stringify` (checksum, render, CLI) cannot serialize; string, number and binary sets come back as `Set`s,
 * not lists; `undefined` list members are dropped, shifting positions. Here numbers are JavaScript numbers both
 * ways (as `JSON.parse` gives them), sets become lists and `undefined` list members become NULL.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { setOwn } from './checksum';

export type Item = Record<string, AttributeValue>;

/** Converts a JSON-like value to an attribute value. `undefined` members of maps are dropped. */
export function toAttr(value: unknown): AttributeValue {
  if (value === null) return { NULL: true };
  switch (typeof value) {
    case 'string': return { S: value };
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot store non-finite number ${value}`);
      return { N: String(value) };
    case 'boolean': return { BOOL: value };
    case 'object':
      if (value instanceof Uint8Array) return { B: value };
      if (Array.isArray(value)) return { L: value.map((v) => toAttr(v === undefined ? null : v)) };
      return { M: toItem(value as Record<string, unknown>) };
    default:
      throw new TypeError(`cannot store a value of type ${typeof value}`);
  }
}

/** Converts a plain object to an item. */
export function toItem(obj: Record<string, unknown>): Item {
  const out: Item = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) setOwn(out, k, toAttr(v));
  return out;
}


/** Converts an attribute value back to a JSON-like value (numbers as JS numbers, binary as Uint8Array). */
export function fromAttr(attr: AttributeValue): unknown {
  if (attr.S !== undefined) return attr.S;
  if (attr.N !== undefined) return Number(attr.N);
  if (attr.BOOL !== undefined) return attr.BOOL;
  if (attr.NULL !== undefined) return null;
  if (attr.L !== undefined) return attr.L.map(fromAttr);
  if (attr.M !== undefined) return fromItem(attr.M);
  if (attr.B !== undefined) return attr.B;
  if (attr.SS !== undefined) return [...attr.SS];
  if (attr.NS !== undefined) return attr.NS.map(Number);
  if (attr.BS !== undefined) return [...attr.BS];
  throw new TypeError(`unsupported attribute value ${JSON.stringify(Object.keys(attr))}`);
}

/** Converts an item back to a plain object. */
export function fromItem(item: Item): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // (an attribute the SDK left without a value, e.g. a top-level `__proto__`, is skipped)
  for (const [k, v] of Object.entries(item)) if (v !== undefined) setOwn(out, k, fromAttr(v));
  return out;
}

/**
 * DynamoDB's size of an item: UTF-8 bytes of attribute names plus values (numbers approximated at
 * their digit count / 2 + 1, lists and maps at 3 bytes plus 1 per element, as documented).
 */
export function itemSize(item: Item): number {
  let size = 0;
  for (const [k, v] of Object.entries(item)) size += Buffer.byteLength(k, 'utf8') + attrSize(v);
  return size;
}

function attrSize(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S, 'utf8');
  if (v.N !== undefined) return Math.ceil(v.N.replace(/[-.]/g, '').length / 2) + 1;
  if (v.B !== undefined) return v.B.byteLength;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.L !== undefined) return 3 + v.L.reduce((s, e) => s + 1 + attrSize(e), 0);
  if (v.M !== undefined) {
    return 3 + Object.entries(v.M).reduce((s, [k, e]) => s + 1 + Buffer.byteLength(k, 'utf8') + attrSize(e), 0);
  }
  if (v.SS !== undefined) return v.SS.reduce((s, e) => s + Buffer.byteLength(e, 'utf8'), 0);
  if (v.NS !== undefined) return v.NS.reduce((s, e) => s + Math.ceil(e.length / 2) + 1, 0);
  if (v.BS !== undefined) return v.BS.reduce((s, e) => s + e.byteLength, 0);
  return 0;
}
