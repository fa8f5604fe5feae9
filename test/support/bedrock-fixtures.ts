/** Prompt drafts for the Bedrock stand-in, in Bedrock's own shapes. */
import type { PromptDraft } from './bedrock-stand-in';

export function textDraft(name: string, text: string): PromptDraft {
  return {
    name,
    description: `${name} prompt`,
    defaultVariant: 'main',
    variants: [{
      name: 'main',
      templateType: 'TEXT',
      templateConfiguration: { text: { text, inputVariables: [{ name: 'topic' }] } },
      modelId: 'anthropic.claude-3-haiku-20240307-v1:0',
      inferenceConfiguration: { text: { temperature: 0.2, maxTokens: 300 } },
    }],
  };
}

/** Creates `count` published prompts (draft + version 1) and returns their ids. */
export function seedPublished(standIn: { createPrompt(d: PromptDraft): string; createVersion(id: string): string }, count: number, prefix = 'prompt'): string[] {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = standIn.createPrompt(textDraft(`${prefix}-${i}`, `Write about {{topic}} (${prefix} ${i})`));
    standIn.createVersion(id);
    ids.push(id);
  }
  return ids;
}
