/**
 * Wire contract: the `{{name}}` placeholder syntax shared by the sync (default `input_variables`) and the clients' `render`.
 */

/** Names of the `{{variable}}` placeholders in a template, in order of first use. */
export function templateVariables(template: string): string[] {
  const seen = new Set<string>();
  for (const m of template.matchAll(TEMPLATE_VARIABLE)) seen.add(m[1]);
  return [...seen];
}

/** `{{ name }}`: letters, digits, `_`, `-` and `.`; spaces inside the braces are allowed. */
export const TEMPLATE_VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;
