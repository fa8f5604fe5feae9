/**
 * The prompt object `getPrompt` returns: built once per table read (with its in-memory and stale variants, which
 * differ only in `provenance` and share the frozen content), deeply frozen, shared by every caller.
 */
import { PromptStoreError } from './errors';
import { Provenance, provenance as newProvenance, ReadSource } from './provenance';
import { JsonValue, PromptContent, contentOf } from '../schema/checksum';
import { ATTR_CHECKSUM, ATTR_STATUS, ATTR_TEMPLATE_TYPE, ATTR_VERSION_NUMBER, MAX_VERSION_NUMBER, PARTITION_KEY, SORT_KEY, parseVersionKey, STATUS_DELETED, TEMPLATE_CHAT, TEMPLATE_TEXT } from '../schema/keys';

export type { PromptVariables, RenderOptions } from './render-types';

/** What a CHAT prompt renders to: the same shapes as stored (Bedrock Converse `messages` and `system`). */
export interface RenderedChat {
  readonly messages: JsonValue[];
  readonly system: JsonValue[];
}

/** What every prompt carries. */
export interface PromptBase {
  /** The prompt id (`prompt_id`). */
  readonly id: string;
  /** The version number served (`version_number`). */
  readonly version: number;
  /** `sha256:` + 64 hex digits of the canonical content: equal checksums mean equal content. */
  readonly checksum: string;
  /** Declared variable names (`input_variables`), as the source lists them. */
  readonly inputVariables: readonly string[];
  /** The model the prompt was written for (`model_id`), if the source records one. */
  readonly modelId?: string;
  /** Inference settings (`inference_config`: temperature, maxTokens, …), if the source records them. */
  readonly inferenceConfig?: Readonly<Record<string, JsonValue>>;
  /** The whole stored content, including fields this client does not interpret. */
  readonly content: Readonly<PromptContent>;
  /**
   * `true` when this copy is past `maxAgeSeconds`: served while a background read refreshes it, or because
   * the table could not be read (stale-if-error).
   */
  readonly stale: boolean;
  /** The label this prompt was served for (`getPrompt(id, { label })`); `undefined` for `CURRENT` and exact versions. */
  readonly label?: string;
  /**
   * The rollout arm served, when the label has a rollout in progress: log it next to the model's output.
   * `version` is the version of that arm. `undefined` without a rollout (or when the rollout map is malformed).
   */
  readonly rollout?: PromptRollout;
  /**
   * `true` when the source deleted this prompt while a label still points at one of its versions: the label keeps
   * serving that version's content until it is moved. Always `false` for `CURRENT` and exact versions.
   */
  readonly sourceDeleted: boolean;
  /** Where this copy came from (`l1`, `l2`, `table`, `fallback`), whether stale, and how old (`provenance.ts`). */
  readonly provenance: Provenance;
}

/** Which arm of a label's rollout a read served (`prompt.rollout`). */
export interface PromptRollout {
  /** The label. */
  readonly label: string;
  /** The rollout's id (`rollout_id`), as the audit trail records it. */
  readonly rolloutId: string;
  /** `A`: the label's own version; `B`: the candidate. */
  readonly arm: 'A' | 'B';
  /** The share served arm B, in basis points (0 to 10,000). */
  readonly percentBp: number;
  /** The candidate's version number (arm B). */
  readonly candidateVersion: number;
}

/** A single-string prompt (`template_type = TEXT`). */
export interface TextPrompt extends PromptBase {
  readonly templateType: typeof TEMPLATE_TEXT;
  /** The template. */
  readonly text: string;
}

/** A conversation prompt (`template_type = CHAT`). */
export interface ChatPrompt extends PromptBase {
  readonly templateType: typeof TEMPLATE_CHAT;
  /** Message templates (`messages`), e.g. `[{ role: 'user', content: [{ text: '…{{question}}' }] }]`. */
  readonly messages: readonly JsonValue[];
  /** System prompt blocks (`system`), e.g. `[{ text: 'You are …' }]`; empty if none. */
  readonly system: readonly JsonValue[];
}

/** A served prompt; narrow on `templateType` to get the matching `render(prompt, …)` result (render.ts). */
export type Prompt = TextPrompt | ChatPrompt;

/** Whether a stored item is a tombstone (`status = DELETED`). */
export function isDeleted(item: Record<string, unknown>): boolean {
  return item[ATTR_STATUS] === STATUS_DELETED;
}

/**
 * Builds the frozen prompt for a pointer or version item; throws `PromptStoreError` if it breaks the contract.
 * `minVersion` 0 is for the caller's fallback only (served as version 0); a stored item starts at 1.
 */
export function promptFromItem(
  item: Record<string, unknown>, minVersion = 1, source: Provenance = newProvenance('table', false, Date.now()),
): Prompt {
  const id = String(item[PARTITION_KEY]);
  const malformed = (what: string) =>
    new PromptStoreError(`item ${id}/${String(item[SORT_KEY])} breaks the wire contract: ${what}`);
  const content = deepFreeze(contentOf(item));
  const templateType = content.template_type;
  const number = item[ATTR_VERSION_NUMBER];
  if (number !== undefined && !(Number.isInteger(number) && (number as number) >= minVersion && (number as number) <= MAX_VERSION_NUMBER)) {
    throw malformed(`${ATTR_VERSION_NUMBER} ${JSON.stringify(number)} is not a whole number from ${minVersion} to ${MAX_VERSION_NUMBER}`);
  }
  const version = number !== undefined ? number as number : parseVersionKey(String(item[SORT_KEY]));
  const checksum = item[ATTR_CHECKSUM];
  if (version === undefined) throw malformed(`no ${ATTR_VERSION_NUMBER}`);
  if (typeof checksum !== 'string') throw malformed(`no ${ATTR_CHECKSUM}`);
  const base = {
    id,
    version,
    checksum,
    // The declared names: strings only (a list of anything else declares nothing).
    inputVariables: Object.freeze(Array.isArray(content.input_variables)
      ? (content.input_variables as unknown[]).filter((v): v is string => typeof v === 'string') : []),
    modelId: content.model_id,
    inferenceConfig: content.inference_config,
    content,
    sourceDeleted: false,
  };
  if (templateType === TEMPLATE_TEXT) {
    if (typeof content.text !== 'string') throw malformed('TEXT prompt without text');
    return new ServedTextPrompt(base, content.text, source);
  }
  if (templateType === TEMPLATE_CHAT) {
    if (!Array.isArray(content.messages)) throw malformed('CHAT prompt without messages');
    return new ServedChatPrompt(base, content.messages, Array.isArray(content.system) ? content.system : Object.freeze([]), source);
  }
  throw malformed(`unknown ${ATTR_TEMPLATE_TYPE} ${JSON.stringify(templateType)}`);
}

/** The same prompt flagged `stale: true`, served from memory (shares the frozen content). */
export function staleCopy(prompt: Prompt): Prompt {
  return servedCopy(prompt, prompt.provenance.source === 'fallback' ? 'fallback' : 'l1', true);
}

/** The same prompt as served for a label: `label`, `rollout` and `sourceDeleted` set (shares the frozen content and provenance). */
export function servedForLabel(prompt: Prompt, label: string, rollout: PromptRollout | undefined, sourceDeleted: boolean): Prompt {
  const base: Base = { ...baseOf(prompt), label, rollout: rollout === undefined ? undefined : Object.freeze({ ...rollout }), sourceDeleted };
  return prompt.templateType === TEMPLATE_TEXT
    ? new ServedTextPrompt(base, prompt.text, prompt.provenance)
    : new ServedChatPrompt(base, prompt.messages, prompt.system, prompt.provenance);
}

/** The same prompt with another provenance (same `readAt`; shares the frozen content). */
export function servedCopy(prompt: Prompt, source: ReadSource, stale: boolean): Prompt {
  const p = newProvenance(source, stale, prompt.provenance.readAt);
  return prompt.templateType === TEMPLATE_TEXT
    ? new ServedTextPrompt(prompt, prompt.text, p)
    : new ServedChatPrompt(prompt, prompt.messages, prompt.system, p);
}

function baseOf(p: PromptBase): Base {
  return {
    id: p.id,
    version: p.version,
    checksum: p.checksum,
    inputVariables: p.inputVariables,
    modelId: p.modelId,
    inferenceConfig: p.inferenceConfig,
    content: p.content,
    label: p.label,
    rollout: p.rollout,
    sourceDeleted: p.sourceDeleted,
  };
}

type Base = Omit<PromptBase, 'stale' | 'provenance'>;

/**
 * What both template types share: copied from the item once, then read by every caller. The fields are `declare`d and
 * assigned in the constructor (in the order a prompt's keys were always listed), so the bundle spells each name once,
 * not once as a field and once as its assignment.
 */
abstract class ServedPrompt implements PromptBase {
  declare readonly provenance: Provenance;
  declare readonly id: string;
  declare readonly version: number;
  declare readonly checksum: string;
  declare readonly inputVariables: readonly string[];
  declare readonly modelId?: string;
  declare readonly inferenceConfig?: Readonly<Record<string, JsonValue>>;
  declare readonly content: Readonly<PromptContent>;
  declare readonly label: string | undefined;
  declare readonly rollout: PromptRollout | undefined;
  declare readonly sourceDeleted: boolean;
  declare readonly stale: boolean;

  constructor(base: Base, provenance: Provenance) {
    this.provenance = provenance;
    this.id = base.id;
    this.version = base.version;
    this.checksum = base.checksum;
    this.inputVariables = base.inputVariables;
    this.modelId = base.modelId;
    this.inferenceConfig = base.inferenceConfig;
    this.content = base.content;
    this.label = base.label;
    this.rollout = base.rollout;
    this.sourceDeleted = base.sourceDeleted;
    this.stale = provenance.stale;
  }
}

class ServedTextPrompt extends ServedPrompt implements TextPrompt {
  declare readonly text: string;
  declare readonly templateType: typeof TEMPLATE_TEXT;

  constructor(base: Base, text: string, source: Provenance) {
    super(base, source);
    this.text = text;
    this.templateType = TEMPLATE_TEXT;
  }
}

class ServedChatPrompt extends ServedPrompt implements ChatPrompt {
  declare readonly messages: readonly JsonValue[];
  declare readonly system: readonly JsonValue[];
  declare readonly templateType: typeof TEMPLATE_CHAT;

  constructor(base: Base, messages: readonly JsonValue[], system: readonly JsonValue[], source: Provenance) {
    super(base, source);
    this.messages = messages;
    this.system = system;
    this.templateType = TEMPLATE_CHAT;
  }
}

/** Freezes a decoded item's content so one caller cannot change what the next one is served. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
