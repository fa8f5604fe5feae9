/**
 * Validation and item building for prompt content (schema v1). Pure: no I/O.
 */
import {
  Attr,
  CURRENT,
  MAX_ITEM_BYTES,
  PromptContent,
  SCHEMA_VERSION,
  STATUS_ACTIVE,
  TEMPLATE_CHAT,
  TEMPLATE_TEXT,
  canonicalJson,
  contentAttributes,
  reservedAttributeIn,
  reservedAttributeReason,
  describePromptId,
  promptIdProblem,
  templateVariables,
  valueVariables,
  versionKey,
} from '../schema';
import { Item, itemSize, toItem } from '../schema/ddb-codec';

/** Why `content` cannot be served, or `undefined` when it is well formed. */
export function contentProblem(id: string, content: PromptContent): string | undefined {
  const idProblem = promptIdProblem(id);
  if (idProblem !== undefined) return `invalid prompt id ${describePromptId(id)}: ${idProblem}`;
  if (content === null || typeof content !== 'object' || Array.isArray(content)) return 'content must be an object';
  // At any depth: what DynamoDB cannot store, or what would act on the readers' objects instead of being data.
  const stored = storableProblem(content, '', 0);
  if (stored !== undefined) return stored;
  // Content keys share the item with the table's own attributes: one named like them would act as one (a
  // `rollout` a label inherits, the TTL attribute, `status: DELETED` on an immutable version). Every source
  // refuses them first; this is the last line, for every source alike.
  const reserved = reservedAttributeIn(content);
  if (reserved !== undefined) return reservedAttributeReason(reserved);
  const type = content.template_type;
  if (type === TEMPLATE_TEXT) {
    if (typeof content.text !== 'string' || content.text.length === 0) return 'a TEXT prompt needs a non-empty `text`';
  } else if (type === TEMPLATE_CHAT) {
    if (!Array.isArray(content.messages) || content.messages.length === 0) return 'a CHAT prompt needs a non-empty `messages` list';
    if (content.system !== undefined && !Array.isArray(content.system)) return '`system` must be a list';
  } else {
    return `\`template_type\` must be ${TEMPLATE_TEXT} or ${TEMPLATE_CHAT}, got ${JSON.stringify(type)}`;
  }
  const vars = content.input_variables;
  if (vars !== undefined && (!Array.isArray(vars) || vars.some((v) => typeof v !== 'string'))) {
    return '`input_variables` must be a list of names';
  }
  if (content.model_id !== undefined && typeof content.model_id !== 'string') return '`model_id` must be a string';
  const config = content.inference_config;
  if (config !== undefined && (config === null || typeof config !== 'object' || Array.isArray(config))) {
    return '`inference_config` must be a map';
  }
  try {
    canonicalJson(content);
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

/** A key that replaces an object's prototype when assigned in JavaScript: refused at any depth. */
export const PROTOTYPE_KEY = '__proto__';
/**
 * Deepest nesting of maps and lists below an attribute: DynamoDB stores 32 levels, the item itself counted.
 */
export const MAX_NESTING_DEPTH = 31;
/** Largest magnitude of a DynamoDB number. */
const MAX_DYNAMODB_NUMBER = 9.9999999999999999999999999999999999999e125;
/** Smallest non-zero magnitude of a DynamoDB number. */
const MIN_DYNAMODB_NUMBER = 1e-130;

/**
 * Why `value` (content, at `path`) cannot be stored as is and read back as the same data, or `undefined`: a
 * `__proto__` key, an empty key (DynamoDB has no empty attribute names), a number that is not finite or is
 * outside DynamoDB's range, or nesting deeper than {@link MAX_NESTING_DEPTH}. Otherwise the write would fail
 * with an SDK error, or (`__proto__`) silently lose the key.
 */
function storableProblem(value: unknown, path: string, depth: number): string | undefined {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return `\`${path}\` is ${value}: numbers must be finite`;
    const magnitude = Math.abs(value);
    if (magnitude > MAX_DYNAMODB_NUMBER || (magnitude !== 0 && magnitude < MIN_DYNAMODB_NUMBER)) {
      return `\`${path}\` is ${value}, outside the numbers DynamoDB stores (magnitude 1e-130 to 9.99…e+125)`;
    }
    return undefined;
  }
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return undefined;
  if (depth > MAX_NESTING_DEPTH) return `\`${path}\` is nested more than ${MAX_NESTING_DEPTH} levels deep (DynamoDB stores 32, the item included)`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = storableProblem(value[i], `${path}[${i}]`, depth + 1);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const at = path === '' ? key : `${path}.${key}`;
    if (key === PROTOTYPE_KEY) {
      return `the key \`${at}\` is not allowed: \`${PROTOTYPE_KEY}\` would replace the prototype of objects read from the table`;
    }
    if (key === '') return `${path === '' ? 'the content' : `\`${path}\``} holds an empty key (DynamoDB has no empty attribute names)`;
    const problem = storableProblem((value as Record<string, unknown>)[key], at, depth + 1);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * Every `{{name}}` used by a TEXT or CHAT template, in order of first use: the placeholders of the text, or of every
 * string of `system`, then of `messages` — the strings `render` fills, in the order it scans them (keys are never
 * templates, and a placeholder with a tab or a line break inside its braces counts, as it does for `render`).
 */
export function variablesUsed(content: PromptContent): string[] {
  const seen = new Set<string>();
  if (typeof content.text === 'string') for (const name of templateVariables(content.text)) seen.add(name);
  for (const list of [content.system, content.messages]) {
    if (Array.isArray(list)) valueVariables(list, seen);
  }
  return [...seen];
}

/** Metadata common to a version item and the pointer that copies it. */
export interface VersionMetadata {
  readonly versionNumber: number;
  readonly checksum: string;
  readonly source: string;
  readonly sourceVersion: string;
  readonly sourceUpdatedAt?: string;
  readonly syncedAt: string;
}

/** Pointer-only metadata. */
export interface PointerMetadata extends VersionMetadata {
  readonly latestVersionNumber: number;
  readonly sourceChecksum: string;
  readonly sourceRevision: string;
  /** When the sync read the source (µs ISO-8601): orders racing syncs. */
  readonly sourceReadAt?: string;
  readonly activatedAt?: string;
  readonly activatedBy?: string;
}

/** The attributes a version item and the pointer that copies it share: the content and its provenance. */
function versionAttributes(id: string, content: PromptContent, meta: VersionMetadata): Record<string, unknown> {
  return {
    // Content only: a reserved name is never copied from it (the sources and `contentProblem` refuse one first).
    ...contentAttributes(content),
    [Attr.promptId]: id,
    [Attr.versionNumber]: meta.versionNumber,
    [Attr.checksum]: meta.checksum,
    [Attr.source]: meta.source,
    [Attr.sourceVersion]: meta.sourceVersion,
    [Attr.sourceUpdatedAt]: meta.sourceUpdatedAt,
    [Attr.syncedAt]: meta.syncedAt,
    [Attr.schemaVersion]: SCHEMA_VERSION,
  };
}

/** The immutable version item `v000001…`. */
export function versionItem(id: string, content: PromptContent, meta: VersionMetadata): Item {
  return toItem({ ...versionAttributes(id, content, meta), [Attr.version]: versionKey(meta.versionNumber) });
}

/** The `CURRENT` pointer: a full copy of the active version plus bookkeeping. */
export function pointerItem(id: string, content: PromptContent, meta: PointerMetadata): Item {
  return toItem({
    ...versionAttributes(id, content, meta),
    [Attr.version]: CURRENT,
    [Attr.latestVersionNumber]: meta.latestVersionNumber,
    [Attr.status]: STATUS_ACTIVE,
    [Attr.sourceChecksum]: meta.sourceChecksum,
    [Attr.sourceRevision]: meta.sourceRevision,
    [Attr.sourceReadAt]: meta.sourceReadAt,
    [Attr.activatedAt]: meta.activatedAt,
    [Attr.activatedBy]: meta.activatedBy,
  });
}

/** Why an item cannot be stored (over DynamoDB's 400 KB), or `undefined`. */
export function sizeProblem(item: Item): string | undefined {
  const size = itemSize(item);
  return size > MAX_ITEM_BYTES
    ? `item is ${size} bytes, over DynamoDB's ${MAX_ITEM_BYTES}-byte (400 KB) item limit; shorten the prompt or move large data out of it`
    : undefined;
}
