/**
 * `cdk-prompt-serving/runtime`: the client Lambda functions use to read prompts from a `PromptServingTable`.
 *
 * Imports only the wire-contract module and `@aws-sdk/client-dynamodb` (present in the Lambda Node.js
 * runtime), never `aws-cdk-lib` or `constructs`, so a function bundle stays small. Not part of the jsii API.
 *
 * @example
 * import { PromptClient, render } from 'cdk-prompt-serving/runtime';
 *
 * const prompts = new PromptClient();
 *
 * export const handler = async (event: { question: string }) => {
 *   const prompt = await prompts.getPrompt('support-answer');
 *   if (prompt.templateType !== 'CHAT') throw new Error('expected a CHAT prompt');
 *   const { messages, system } = render(prompt, { question: event.question });
 *   // … ConverseCommand({ modelId: prompt.modelId, messages, system, inferenceConfig: prompt.inferenceConfig })
 * };
 */
export { PromptClient } from './client';
export { labels } from './label-feature';
export type { LabelFeature, PromptClientFeature } from './label-feature';
export type { GetPromptOptions } from './client';
export { preload } from './preload';
export type { PreloadOptions } from './preload';
export type { PromptFallback } from './fallback';
export type { PromptClientOptions } from './options';
export { Defaults, EnvVars, MAX_TIMER_MS } from './options';
export type { Prompt, PromptBase, PromptRollout, TextPrompt, ChatPrompt, RenderedChat, PromptVariables, RenderOptions } from './prompt';
export { render } from './render';
export { PromptServingError, PromptNotFoundError, PromptRenderError, PromptStoreError } from './errors';
export { l2Key } from './l2';
export type { PromptCacheL2 } from './l2';
export { cacheTier } from './cache-tier';
export type { PromptCacheTier } from './tier';
export type { PromptClientStats } from './stats';
export { combineReadHooks, emfReadMetrics, logReads, otelReadAttributes } from './read-hooks';
export type { PromptCatalog, PromptFor, TemplateJson, TemplateValue, TypedChatPrompt, TypedTextPrompt } from './typed';
export type { EmfReadMetrics, EmfReadMetricsOptions, LineWriter } from './read-hooks';
export type { OnRead, Provenance, ReadInfo, ReadingClient, ReadSource } from './provenance';
