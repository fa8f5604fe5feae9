/**
 * A caller-supplied prompt `getPrompt` returns only when nothing can be read: the table fails (down,
 * throttled past the retries, timed out), the L2 has no copy and memory holds none within `staleIfErrorSeconds`.
 */
import { Prompt, promptFromItem } from './prompt';
import { provenance } from './provenance';
import { checksum, JsonValue, PromptContent } from '../schema/checksum';
import { ATTR_CHECKSUM, ATTR_VERSION_NUMBER, CURRENT, PARTITION_KEY, SORT_KEY, TEMPLATE_CHAT, TEMPLATE_TEXT } from '../schema/keys';
import { templateVariables } from '../schema/template';

/** A TEXT or CHAT prompt given in code. */
export interface PromptFallback {
  /** A TEXT template (`{{name}}` placeholders). Give either `text` or `messages`. */
  readonly text?: string;
  /** CHAT message templates in Bedrock Converse shape. */
  readonly messages?: readonly JsonValue[];
  /** CHAT system blocks. */
  readonly system?: readonly JsonValue[];
  readonly modelId?: string;
  readonly inferenceConfig?: Readonly<Record<string, JsonValue>>;
}

/** The fallback as a served prompt: version 0, flagged `stale`, checksum of its content. */
export function fallbackPrompt(promptId: string, fallback: PromptFallback): Prompt {
  const isText = typeof fallback.text === 'string';
  const templates = isText ? fallback.text! : JSON.stringify([fallback.system ?? [], fallback.messages ?? []]);
  const content: PromptContent = {
    template_type: isText ? TEMPLATE_TEXT : TEMPLATE_CHAT,
    ...(isText ? { text: fallback.text } : { messages: [...(fallback.messages ?? [])], system: [...(fallback.system ?? [])] }),
    input_variables: templateVariables(templates),
    ...(fallback.modelId !== undefined ? { model_id: fallback.modelId } : {}),
    ...(fallback.inferenceConfig !== undefined ? { inference_config: { ...fallback.inferenceConfig } } : {}),
  } as PromptContent;
  return promptFromItem({
    ...content, [PARTITION_KEY]: promptId, [SORT_KEY]: CURRENT, [ATTR_VERSION_NUMBER]: 0, [ATTR_CHECKSUM]: checksum(content),
  }, 0, provenance('fallback', true, Date.now()));
}
