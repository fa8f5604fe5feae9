/**
 * Reserved attributes: the attribute names the table, the release path or the clients give meaning to. Content
 * from a source (a prompt file's front matter, a Bedrock field, a hand-written item) can never set one.
 *
 * A prompt's content shares its item with the table's own attributes: every top-level content key becomes an
 * attribute of the version item, of `CURRENT` and of every label that serves it. A content key named like a
 * control field would act as one (`rollout` on a label would choose what readers serve, `expires_at` is the
 * table's TTL attribute, `source_deleted_at` makes readers report the prompt deleted). So:
 *
 * - every source refuses a prompt that sets a reserved name, with a reason naming the file (or the Bedrock prompt)
 *   and the key: `cdk-prompt-serving validate`, the synth-time check of `PromptSource.fromDirectory`, and the sync
 *   (whose content check is the last line for every source: the prompt fails alone, nothing served changes);
 * - whatever copies an item (a version into `CURRENT` or into `LABEL#<name>`) takes the content (names that are not
 *   reserved) and, of the reserved names, only those the writer owns and sets itself: never the rest;
 * - readers read control fields only from the item kinds that own them (`rollout`, `source_deleted_at`: label items).
 *
 * A name is reserved when it is in {@link RESERVED_ATTRIBUTES}, when it starts with one of
 * {@link RESERVED_ATTRIBUTE_PREFIXES}, or when it is another spelling of a reserved name ({@link foldAttributeName}:
 * `expiresAt`, `Expires-At`), so no client that maps camelCase, and no reader of the table, can mistake it for one.
 *
 * **Names reserved before they gain meaning.** A feature that gives meaning to a new attribute names it in the
 * reserved namespace: a leading `_` (`_priority`), never a new plain name. Content synced before the feature
 * may already hold a plain name, and a later release must never turn yesterday's content into today's control
 * field. Since this list first shipped every source refuses `_…` keys, so no stored content holds one.
 *
 * Mirrored by the Python client (`cdk_prompt_serving_runtime/schema/reserved.py`); both are held to
 * `test/conformance/fixtures/reserved-attributes.json`.
 */
import { Attr } from './keys';
import { AuditAttr, LabelAttr, RolloutAttr } from './labels';

/** Attributes of the contract that are prompt content (what a source gives), not control fields. */
export const CONTENT_ATTRIBUTES: ReadonlySet<string> = new Set([
  Attr.templateType, Attr.text, Attr.messages, Attr.system, Attr.inputVariables, Attr.modelId, Attr.inferenceConfig,
]);

/**
 * Attributes of items that are not prompt rows, kept beside the schema's constants: the rollout registry
 * (`#rollouts`: `target_prompt_id`, `label`, `rollout_id`, `next_step_at`, `alarms`), the sync's claims
 * (`#sync-claims`: the claimed id), and the TTL attribute of the table (`expires_at`, audit records and claims).
 */
const OTHER_ITEM_ATTRIBUTES = ['target_prompt_id', `${Attr.promptId}_claimed`, 'expires_at'] as const;

/**
 * Every attribute name the table, the release path or the clients give meaning to, on any item kind: pointer and
 * version bookkeeping, the catalog, the sync's budget and claims, labels, rollouts (the map's keys too: a reader
 * must never find them at the top of an item), audit records, the rollout registry and the TTL attribute.
 */
export const RESERVED_ATTRIBUTES: ReadonlySet<string> = new Set([
  ...Object.values(Attr).filter((name) => !CONTENT_ATTRIBUTES.has(name)),
  ...Object.values(LabelAttr),
  ...Object.values(RolloutAttr),
  ...Object.values(AuditAttr),
  ...OTHER_ITEM_ATTRIBUTES,
].sort());

/**
 * Prefixes of names reserved for control fields to come (see the module's doc): `_`, and `#`, `$`, `@`, which no
 * content key the sources write starts with.
 */
export const RESERVED_ATTRIBUTE_PREFIXES: readonly string[] = ['_', '#', '$', '@'];

/**
 * A name's spelling-free form: lowercase, without `_`, `-`, `.` or spaces (`expiresAt`, `Expires-At` and
 * `expires_at` all fold to `expiresat`). Two names that fold alike are one name to a reserved-attribute check.
 */
export function foldAttributeName(name: string): string {
  return name.toLowerCase().replace(/[_\-. ]/g, '');
}

const FOLDED_RESERVED: ReadonlyMap<string, string> = new Map([...RESERVED_ATTRIBUTES].map((name) => [foldAttributeName(name), name]));

/**
 * The reserved attribute `name` is (or spells), or `undefined` when content may use it. For a name in the
 * reserved namespace, the name itself.
 */
export function reservedAttributeFor(name: string): string | undefined {
  if (RESERVED_ATTRIBUTES.has(name)) return name;
  if (RESERVED_ATTRIBUTE_PREFIXES.some((prefix) => name.startsWith(prefix))) return name;
  return FOLDED_RESERVED.get(foldAttributeName(name));
}

/** Whether content may not use `name` as a top-level key (see {@link reservedAttributeFor}). */
export function isReservedAttribute(name: string): boolean {
  return reservedAttributeFor(name) !== undefined;
}

/** The first top-level key of `record` (in key order) that is reserved, or `undefined` when there is none. */
export function reservedAttributeIn(record: Record<string, unknown>): string | undefined {
  return Object.keys(record).find(isReservedAttribute);
}

/**
 * Why content with `key` is refused, in words that name the key (and, for another spelling, the reserved name).
 * The caller prefixes the file or the Bedrock prompt.
 */
export function reservedAttributeReason(key: string): string {
  const reserved = reservedAttributeFor(key) ?? key;
  const spelled = reserved === key ? '' : ` (a spelling of \`${reserved}\`)`;
  const why = RESERVED_ATTRIBUTES.has(reserved)
    ? 'an attribute the table, the release path or the readers give meaning to'
    : `in the namespace kept for the table's future control fields (names starting with ${RESERVED_ATTRIBUTE_PREFIXES.map((p) => `'${p}'`).join(', ')})`;
  return `the key \`${key}\`${spelled} is reserved: ${why}; a prompt cannot set it (rename the key, or leave it out)`;
}

/**
 * The content of an item as a copy takes it: every top-level attribute that is not reserved, in key order. What a
 * writer copies from a version into `CURRENT` or a label is this plus the reserved attributes it sets itself.
 */
export function contentAttributes(item: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(item)) {
    if (value === undefined || isReservedAttribute(key)) continue;
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
