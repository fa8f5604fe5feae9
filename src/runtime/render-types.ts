/** The types `render` (render.ts) takes: their own module, so the prompt and typed-prompt types import no render code. */

/**
 * Values for `{{placeholders}}`: strings, numbers and booleans, or JSON for names in `json_variables`; a missing,
 * `undefined` or `null` value is a missing variable. (Checked again at run time: a value of another type, from
 * untyped code, is an invalid value.)
 */
/** A value a `{{placeholder}}` takes (a variable listed in `json_variables` takes any JSON value). */
export type TemplateValue = string | number | boolean;

/** A JSON value (the type of a `json_variables` variable). */
export type TemplateJson = string | number | boolean | null | readonly TemplateJson[] | { readonly [key: string]: TemplateJson };

export type PromptVariables = Readonly<Record<string, TemplateValue | TemplateJson | null | undefined>>;

/** Options of one `render` call. */
export interface RenderOptions {
  /**
   * Ignore variables the prompt neither uses nor declares, instead of throwing.
   * @default false
   */
  readonly allowExtra?: boolean;
  /**
   * Names that take any JSON value (inserted as canonical JSON), in addition to the prompt's `json_variables`.
   * @default - only the prompt's own `json_variables`
   */
  readonly jsonVariables?: readonly string[];
}
