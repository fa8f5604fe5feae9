/**
 * Strict rendering: which variables a prompt takes, which values it accepts, and the one-pass fill.
 *
 * The rule (the same in the Python client, `render.py`; vectors in test/conformance/fixtures/render*.json):
 * - **Required**: every `{{placeholder}}` of the template (TEXT: `text`; CHAT: every string in `system`, then
 *   `messages`). A value that is absent, `undefined` or `null` is missing.
 * - **Accepted**: the placeholders plus the declared `input_variables` (Bedrock's `inputVariables`, front matter
 *   `variables:` of a prompt file). A declared name the template never uses is accepted, never required (the sync
 *   and `validate` report the disagreement); a placeholder that is not declared is still required.
 * - **Extra**: any other name with a value is an error unless `allowExtra` is set (then it is ignored). A name whose
 *   value is `undefined`/`null` is treated as absent, never as extra.
 * - **Values**: a string, a finite number or a boolean (printed as JavaScript's `String(value)`: `1.0` → `1`,
 *   `-0` → `0`, `1e21` → `1e+21`, `true`/`false`). A name listed in the prompt's `json_variables` (front matter
 *   `json_variables:`) or in the call's `jsonVariables` takes any JSON value instead, inserted as canonical JSON
 *   (keys sorted by UTF-16 code unit, no whitespace, numbers as JavaScript prints them). Anything else (objects
 *   without the opt-in, `NaN`, `Infinity`, functions, dates, …) is an invalid value.
 * - Every problem is found before anything is filled, and reported in one `PromptRenderError` (`missing`, `extra`,
 *   `invalid`). Values are inserted verbatim in one pass: a value containing `{{…}}` is never expanded again.
 */
import { PromptRenderError, PromptServingError } from './errors';
import type { ChatPrompt, Prompt, RenderedChat, TextPrompt } from './prompt';
import type { PromptVariables, RenderOptions } from './render-types';
import type { PromptVariablesOf } from './typed';
import { canonicalJson, JsonValue, setOwn } from '../schema/checksum';
import { TEMPLATE_VARIABLE, templateVariables } from '../schema/template';

export type { PromptVariables, RenderOptions, TemplateJson, TemplateValue } from './render-types';

/** `render`'s parameters after the prompt: the variables are optional only when the prompt takes none. */
export type RenderArgs<V> = Record<string, never> extends V ? [variables?: V, options?: RenderOptions] : [variables: V, options?: RenderOptions];

/**
 * What `render` takes after a prompt: a typed prompt's own variables (`cdk-prompt-serving types`, typed.ts), else any
 * `PromptVariables`.
 */
export type RenderArgsFor<P extends Prompt> = P extends { readonly [PromptVariablesOf]: infer V } ? RenderArgs<V>
  : [variables?: PromptVariables, options?: RenderOptions];

/** What `render` returns for a prompt: a string for TEXT, `{ messages, system }` for CHAT (either for an unnarrowed `Prompt`). */
export type RenderResult<P extends Prompt> = P extends TextPrompt ? string : P extends ChatPrompt ? RenderedChat : never;

/**
 * Fills every `{{name}}` of a prompt `getPrompt` returned. TEXT: the template, as a string. CHAT: every string in
 * `messages` and `system`, as new arrays; blocks without a variable (and `cachePoint` blocks) come out unchanged, keys
 * in the stored order, so everything before the first variable serialises byte-identically from render to render
 * (Bedrock's prompt cache hits). Strict: every placeholder needs a string, number or boolean value (any JSON value
 * for a name in `json_variables` or `jsonVariables`), and a variable the prompt neither uses nor declares is refused
 * unless `{ allowExtra: true }`. A module function, not a method, so a reader that never renders bundles none of it.
 * For a typed prompt (`cdk-prompt-serving types`) the variables are checked by `tsc` as well.
 *
 * @throws PromptRenderError listing every missing, unexpected and invalid variable
 * @example
 * import { PromptClient, render } from 'cdk-prompt-serving/runtime';
 * const prompt = await prompts.getPrompt('support-answer');
 * if (prompt.templateType === 'CHAT') {
 *   const { messages, system } = render(prompt, { question });
 *   await bedrock.send(new ConverseCommand({ modelId: prompt.modelId, messages, system }));
 * }
 */
export function render<P extends Prompt>(prompt: P, ...args: RenderArgsFor<P>): RenderResult<P>;
// The implementation's `variables` is what a caller typed as its prompt's own variables, checked at run time below.
export function render(prompt: Prompt, variables: unknown = {}, options?: RenderOptions): string | RenderedChat {
  if (prompt?.templateType === 'TEXT') {
    const plan = renderPlan(prompt.content, () => [prompt.text], prompt.inputVariables);
    return fillText(prompt.text, resolveVariables(prompt.id, prompt.version, plan, variables as PromptVariables, options));
  }
  if (prompt?.templateType !== 'CHAT') {
    throw new PromptServingError('render(prompt, variables) takes a prompt `getPrompt` returned as its first argument');
  }
  const plan = renderPlan(prompt.content, () => jsonStrings([prompt.system, prompt.messages]), prompt.inputVariables);
  const texts = resolveVariables(prompt.id, prompt.version, plan, variables as PromptVariables, options);
  return { messages: prompt.messages.map((m) => fillJson(m, texts)), system: prompt.system.map((b) => fillJson(b, texts)) };
}

/** Content field listing the variables that take JSON values (front matter `json_variables:`). */
export const JSON_VARIABLES_ATTR = 'json_variables';

/** What a template takes, worked out once per stored content (shared by every copy of a prompt). */
export interface RenderPlan {
  /** Every placeholder, in order of first use. */
  readonly placeholders: readonly string[];
  /** Placeholders plus declared names. */
  readonly accepted: ReadonlySet<string>;
  /** Names the stored prompt opts in to JSON values. */
  readonly json: ReadonlySet<string>;
}

const plans = new WeakMap<object, RenderPlan>();

/**
 * The plan of a content object (cached per frozen content). `templates` are the strings in fill order.
 */
export function renderPlan(content: object, templates: () => Iterable<string>, declared: readonly string[]): RenderPlan {
  let plan = plans.get(content);
  if (plan === undefined) {
    const seen = new Set<string>();
    for (const t of templates()) for (const name of templateVariables(t)) seen.add(name);
    const jsonNames = (content as Record<string, unknown>)[JSON_VARIABLES_ATTR];
    plan = {
      placeholders: [...seen],
      accepted: new Set([...seen, ...declared]),
      json: new Set(Array.isArray(jsonNames) ? jsonNames.filter((n): n is string => typeof n === 'string') : []),
    };
    plans.set(content, plan);
  }
  return plan;
}

/** The strings of a JSON value in fill order (arrays in order, objects in key order). */
export function* jsonStrings(value: unknown): Generator<string> {
  if (typeof value === 'string') {
    yield value;
  } else if (Array.isArray(value)) {
    for (const v of value) yield* jsonStrings(v);
  } else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) yield* jsonStrings(v);
  }
}

/**
 * Checks `variables` against the plan and returns the text of each placeholder's value.
 * @throws PromptRenderError listing every missing, extra and invalid variable
 */
export function resolveVariables(
  promptId: string, version: number, plan: RenderPlan, variables: PromptVariables, options: RenderOptions | undefined,
): Map<string, string> {
  const texts = new Map<string, string>();
  const missing: string[] = [];
  const invalid: string[] = [];
  const callJson = options?.jsonVariables;
  for (const name of plan.placeholders) {
    const value = Object.hasOwn(variables, name) ? variables[name] : undefined;
    if (value === undefined || value === null) {
      missing.push(name);
      continue;
    }
    const text = valueText(value, plan.json.has(name) || (callJson !== undefined && callJson.includes(name)));
    if (text === undefined) invalid.push(name);
    else texts.set(name, text);
  }
  const extra: string[] = [];
  if (options?.allowExtra !== true) {
    for (const name of Object.keys(variables)) {
      const value = variables[name];
      if (value !== undefined && value !== null && !plan.accepted.has(name)) extra.push(name);
    }
    extra.sort();
  }
  if (missing.length > 0 || extra.length > 0 || invalid.length > 0) {
    throw new PromptRenderError(promptId, version, missing, extra, invalid);
  }
  return texts;
}

/** The text a value is inserted as; `undefined` for a value of a type the variable does not take. */
export function valueText(value: unknown, json: boolean): string | undefined {
  switch (typeof value) {
    case 'string':
      return value;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return Number.isFinite(value) ? String(value) : undefined;
    default:
      if (!json || !isJson(value, 0)) return undefined;
      return canonicalJson(value);
  }
}

/** JSON depth bound (a cycle or absurd nesting is an invalid value, not a stack overflow). */
const MAX_JSON_DEPTH = 64;

/** A plain JSON value: null, string, boolean, finite number, array or plain object of those. */
function isJson(value: unknown, depth: number): boolean {
  if (depth > MAX_JSON_DEPTH) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) {
    // every index, holes included: a hole (or `undefined`) is `null`, as JSON.stringify and canonicalJson write it
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (v !== undefined && !isJson(v, depth + 1)) return false;
    }
    return true;
  }
  if (typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value).every((v) => v === undefined || isJson(v, depth + 1));
}

/** Replaces each `{{name}}` in one pass (values are never scanned again). Every name is in `texts` (checked first). */
export function fillText(template: string, texts: ReadonlyMap<string, string>): string {
  return template.replace(TEMPLATE_VARIABLE, (placeholder: string, name: string) => texts.get(name) ?? placeholder);
}

/**
 * `fillText` applied to every string of a JSON value; returns a new, unfrozen value with the same key order. A
 * value without placeholders (a `cachePoint` block, a fixed system block) comes out byte-identical when serialised.
 */
export function fillJson(value: JsonValue, texts: ReadonlyMap<string, string>): JsonValue {
  if (typeof value === 'string') return fillText(value, texts);
  if (Array.isArray(value)) return value.map((v) => fillJson(v, texts));
  if (value !== null && typeof value === 'object') {
    const out: { [key: string]: JsonValue } = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, k, fillJson(v, texts));
    return out;
  }
  return value;
}
