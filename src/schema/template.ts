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

/** Where a block sits in a CHAT prompt, in the order Bedrock reads the request: `system[0]`, `messages[1].content[2]`. */
interface Located {
  readonly at: string;
  readonly value: unknown;
}

/** The blocks of a CHAT prompt in request order: every system block, then every content block of every message. */
function chatBlocks(content: { system?: unknown; messages?: unknown }): Located[] {
  const blocks: Located[] = [];
  if (Array.isArray(content.system)) content.system.forEach((value, i) => blocks.push({ at: `system[${i}]`, value }));
  if (Array.isArray(content.messages)) {
    content.messages.forEach((message, m) => {
      const parts = message !== null && typeof message === 'object' ? (message as { content?: unknown }).content : undefined;
      if (Array.isArray(parts)) parts.forEach((value, i) => blocks.push({ at: `messages[${m}].content[${i}]`, value }));
      else blocks.push({ at: `messages[${m}]`, value: message });
    });
  }
  return blocks;
}

/** Whether a block is a Bedrock prompt-cache checkpoint (`{ cachePoint: { type: 'default' } }`). */
export function isCachePoint(block: unknown): boolean {
  return block !== null && typeof block === 'object' && !Array.isArray(block) && Object.hasOwn(block, 'cachePoint');
}

/** Placeholders anywhere in a JSON value's strings (keys are never templates), in order of first use. */
export function valueVariables(value: unknown, into: Set<string>): void {
  if (typeof value === 'string') {
    for (const name of templateVariables(value)) into.add(name);
  } else if (Array.isArray(value)) {
    for (const v of value) valueVariables(v, into);
  } else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) valueVariables(v, into);
  }
}

/**
 * Cache points a variable precedes, in a CHAT prompt. Bedrock's prompt cache hits only when everything before a cache
 * point is byte-identical from request to request; `render` keeps every block without a variable unchanged, so the
 * cache works exactly when no variable sits before a cache point. One line per such cache point, naming the first
 * variable before it and where it sits; empty for TEXT prompts and for CHAT prompts that keep variables after their
 * last cache point.
 */
export function cachePointWarnings(content: { template_type?: unknown; system?: unknown; messages?: unknown }): string[] {
  if (content.template_type !== 'CHAT') return [];
  const warnings: string[] = [];
  let first: { at: string; name: string } | undefined;
  for (const block of chatBlocks(content)) {
    if (isCachePoint(block.value)) {
      if (first !== undefined) {
        warnings.push(`the cache point at ${block.at} follows the variable {{${first.name}}} in ${first.at}: Bedrock's prompt cache `
          + 'then misses whenever that variable changes; move variables after the last cache point, or the cache point before the first variable');
      }
      continue;
    }
    if (first === undefined) {
      const names = new Set<string>();
      valueVariables(block.value, names);
      const [name] = names;
      if (name !== undefined) first = { at: block.at, name };
    }
  }
  return warnings;
}

/**
 * How declared variable names (`input_variables`, front matter `variables:`) and the template's placeholders disagree:
 * `undeclared` placeholders (still required by `render`, but missing from the declaration that typed prompts and
 * callers follow) and `unused` declared names (accepted by `render`, never required).
 */
export function variableDisagreement(declared: readonly string[], used: readonly string[]): { undeclared: string[]; unused: string[] } {
  const declaredSet = new Set(declared);
  const usedSet = new Set(used);
  return { undeclared: used.filter((n) => !declaredSet.has(n)), unused: declared.filter((n) => !usedSet.has(n)) };
}
