/**
 * A Bedrock prompt version as the sync's prompt: the served variant's fields under the contract's names, every
 * further field Bedrock sends under its snake_case name (values in Bedrock's shapes), the other variants kept.
 */
import type { GetPromptCommandOutput, PromptTemplateConfiguration, PromptVariant } from '@aws-sdk/client-bedrock-agent';
import { JsonValue, PromptContent, TEMPLATE_CHAT, TEMPLATE_TEXT, reservedAttributeIn, reservedAttributeReason } from '../../schema';
import { PROTOTYPE_KEY } from '../../write/content';
import { SourceReadError } from '../errors';
import type { SourcePrompt } from '../source';

/** A GetPrompt answer as the engine's prompt, without its revision. */
export function toSourcePrompt(id: string, version: string, prompt: GetPromptCommandOutput): Omit<SourcePrompt, 'revision'> {
  const variants = prompt.variants ?? [];
  const served = variants.find((v) => v.name === prompt.defaultVariant) ?? variants[0];
  if (!served) throw new SourceReadError(id, `Bedrock prompt ${id} has no variants`);
  const others = variants.filter((v) => v !== served);
  const content = withoutUndefined({
    name: prompt.name,
    description: prompt.description,
    ...variantContent(id, served),
    other_variants: others.length > 0 ? others.map((v) => toJson(v)!) : undefined,
  });
  // A field Bedrock (or a newer SDK) adds lands at the top of the item under its snake_case name: one that names an
  // attribute the table gives meaning to (`expiresAt` → `expires_at`, the TTL) refuses the prompt, never acts.
  const reserved = reservedAttributeIn(content);
  if (reserved !== undefined) throw new SourceReadError(id, `Bedrock prompt ${id} (version ${prompt.version ?? version}): ${reservedAttributeReason(reserved)}`);
  return { id, content, sourceVersion: prompt.version ?? version, updatedAt: prompt.updatedAt?.toISOString() };
}

/**
 * The served variant as content: the contract's fields, plus every further variant field (metadata,
 * additionalModelRequestFields, genAiResource, …) under its snake_case name, values in Bedrock's shapes.
 */
function variantContent(id: string, variant: PromptVariant): PromptContent {
  const { name, templateType, templateConfiguration, modelId, inferenceConfiguration, ...further } = variant;
  return {
    ...snakeCaseFields(further),
    variant_name: name,
    ...templateContent(id, templateType, templateConfiguration),
    model_id: modelId,
    inference_config: toJson(inferenceConfiguration?.text) as { [key: string]: JsonValue } | undefined,
  };
}

function templateContent(id: string, type: string | undefined, config: PromptTemplateConfiguration | undefined): PromptContent {
  const text = config?.text;
  if (type === TEMPLATE_TEXT && typeof text?.text === 'string') {
    const { text: template, inputVariables, ...further } = text;
    return { ...snakeCaseFields(further), template_type: TEMPLATE_TEXT, text: template, input_variables: variableNames(inputVariables) };
  }
  const chat = config?.chat;
  if (type === TEMPLATE_CHAT && Array.isArray(chat?.messages)) {
    const { messages, system, inputVariables, ...further } = chat;
    return {
      ...snakeCaseFields(further),
      template_type: TEMPLATE_CHAT,
      messages: toJson(messages) as JsonValue[],
      system: toJson(system) as JsonValue[] | undefined,
      input_variables: variableNames(inputVariables),
    };
  }
  const reason = type === TEMPLATE_TEXT || type === TEMPLATE_CHAT
    ? `its ${type} variant has no ${type.toLowerCase()} template`
    : `unsupported templateType ${String(type)}`;
  throw new SourceReadError(id, `Bedrock prompt ${id}: ${reason}`);
}

function variableNames(variables: Array<{ name?: string }> | undefined): string[] | undefined {
  return variables?.map((v) => v.name).filter((name): name is string => typeof name === 'string');
}

/** `{ cachePoint: … }` → `{ cache_point: … }`: top-level keys only; undefined members dropped. */
function snakeCaseFields(fields: object): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  for (const [key, value] of Object.entries(fields)) {
    const json = toJson(value);
    if (json !== undefined || key === PROTOTYPE_KEY) defineKey(out, key.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase()), json ?? null);
  }
  return out;
}

/** A plain JSON copy of an SDK value: Dates as ISO-8601 strings, undefined members dropped. */
function toJson(value: unknown): JsonValue | undefined {
  switch (typeof value) {
    case 'undefined':
    case 'string':
    case 'number':
    case 'boolean':
      return value;
    case 'object': {
      if (value === null) return null;
      if (value instanceof Date) return value.toISOString();
      if (Array.isArray(value)) return value.map((v) => toJson(v) ?? null);
      const out: { [key: string]: JsonValue } = {};
      for (const [key, v] of Object.entries(value)) {
        const json = toJson(v);
        // The SDK's documents can carry an own `__proto__` whose value reads as undefined: kept (as null), so
        // the content check refuses the prompt instead of the key vanishing with whatever it held.
        if (json !== undefined || key === PROTOTYPE_KEY) defineKey(out, key, json ?? null);
      }
      return out;
    }
    default:
      throw new TypeError(`cannot convert a ${typeof value} to JSON`);
  }
}

/**
 * Sets `out[key]` as an own property, even for `__proto__` (an assignment would replace the prototype and lose
 * the key silently): the engine's content check then refuses the prompt with the key's path.
 */
function defineKey(out: { [key: string]: JsonValue }, key: string, value: JsonValue): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
