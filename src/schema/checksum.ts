/**
 * Wire contract: prompt content, its canonical JSON and the `sha256:` checksum that decides whether a sync writes.
 */
import { createHash } from 'node:crypto';
import { METADATA_ATTRIBUTES, TemplateType } from './keys';

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
    // Array.from visits holes (map skips them, and join would print `[1,,2]`): a hole is `null`, as JSON.stringify writes it
    return '[' + Array.from(value as unknown[], (v) => canonicalJson(v === undefined ? null : v)).join(',') + ']';
  }
  if (value instanceof Uint8Array) {
    throw new TypeError('binary values are not allowed in prompt content');
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(obj[k])).join(',') + '}';
}

/** The content part of an item (everything but {@link METADATA_ATTRIBUTES}). */
/** `obj[key] = value` that keeps a `__proto__` key an ordinary own property (never the object's prototype). */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

export function contentOf(item: Record<string, unknown>): PromptContent {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) {
    if (!METADATA_ATTRIBUTES.has(k) && v !== undefined) setOwn(out, k, v);
  }
  return out as PromptContent;
}

/** `sha256:` + 64 lowercase hex digits of the canonical JSON of the prompt content. */
export function checksum(content: Record<string, unknown>): string {
  return 'sha256:' + createHash('sha256').update(canonicalJson(contentOf(content)), 'utf8').digest('hex');
}
