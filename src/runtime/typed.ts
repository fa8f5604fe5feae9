/**
 * Typed prompts: `cdk-prompt-serving types` writes a declaration file that fills {@link PromptCatalog} (module
 * augmentation of `cdk-prompt-serving/runtime`), so `getPrompt('support/triage')` returns a prompt that
 * `render(prompt, variables)` (render.ts) takes only with that prompt's variables: a renamed or misspelt variable fails
 * `tsc`, not production. Without the
 * generated file the catalog is empty and every id gives the untyped `Prompt`. A labeled read (`getPrompt(id, { label,
 * stickinessKey })`) renders with the same variables as the CURRENT read: the types describe the prompt files (or the
 * CURRENT items) they were generated from, so a label or rollout arm on a version with other variables is caught by
 * `render`'s run-time check, not by `tsc`. Types only: nothing here exists at run time.
 */
import type { ChatPrompt, Prompt, TextPrompt } from './prompt';

export type { TemplateJson, TemplateValue } from './render-types';


/**
 * The prompts known at compile time, by id: `{ templateType: 'TEXT' | 'CHAT'; variables: { name: TemplateValue; … } }`.
 * Empty here; filled by the declaration file `cdk-prompt-serving types` generates.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface PromptCatalog {}

/** The key of a typed prompt's variables type (types only: no prompt has this property at run time). */
export declare const PromptVariablesOf: unique symbol;

/** A TEXT prompt that `render(prompt, variables)` takes only with exactly its variables. */
export interface TypedTextPrompt<V> extends TextPrompt {
  readonly [PromptVariablesOf]: V;
}

/** A CHAT prompt that `render(prompt, variables)` takes only with exactly its variables. */
export interface TypedChatPrompt<V> extends ChatPrompt {
  readonly [PromptVariablesOf]: V;
}

/** What `getPrompt(id)` returns: the typed prompt for an id in the catalog, else `Prompt`. */
export type PromptFor<K extends string> = string extends K ? Prompt : K extends keyof PromptCatalog
  ? PromptCatalog[K] extends { readonly templateType: 'TEXT'; readonly variables: infer V } ? TypedTextPrompt<V>
    : PromptCatalog[K] extends { readonly templateType: 'CHAT'; readonly variables: infer V } ? TypedChatPrompt<V> : Prompt
  : Prompt;
