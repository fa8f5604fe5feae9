/**
 * The strict-render vectors (test/conformance/fixtures/render.json), every field: the expected text or value, its
 * exact serialisation, and the error's missing / extra / invalid lists and message. python/tests/test_render.py runs
 * the same file against the Python client.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PromptRenderError, PromptVariables, RenderOptions, render } from '../../src/runtime';
import { promptFromItem } from '../../src/runtime/prompt';

interface RenderCase {
  readonly name: string;
  readonly content: Record<string, unknown>;
  readonly variables: Record<string, unknown>;
  readonly options?: RenderOptions;
  readonly repeat?: { unit: string; times: number };
  readonly expected?: unknown;
  readonly expectedJson?: string;
  readonly error?: { missing: string[]; extra?: string[]; invalid?: string[]; message: string };
}

const FIXTURE = path.join(__dirname, '..', 'conformance', 'fixtures', 'render.json');
const CASES = (JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as { cases: RenderCase[] }).cases;
const META = { prompt_id: 'render-case', version: 'CURRENT', version_number: 1, checksum: `sha256:${'0'.repeat(64)}` };

/** `@REPEAT@` in every string of `value` replaced by the case's repeated unit. */
function expand<T>(value: T, repeat: RenderCase['repeat']): T {
  if (repeat === undefined) return value;
  const long = repeat.unit.repeat(repeat.times);
  return JSON.parse(JSON.stringify(value), (_k, v: unknown) => (typeof v === 'string' ? v.split('@REPEAT@').join(long) : v)) as T;
}

test.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
  const prompt = promptFromItem({ ...c.content, ...META });
  const variables = expand(c.variables, c.repeat) as PromptVariables; // JSON from the fixture: what the type allows
  if (c.error !== undefined) {
    let caught: unknown;
    try {
      render(prompt, variables, c.options);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PromptRenderError);
    const error = caught as PromptRenderError;
    expect(error.name).toBe('PromptRenderError');
    expect(error.promptId).toBe('render-case');
    expect(error.version).toBe(1);
    expect(error.missing).toEqual(c.error.missing);
    expect(error.missingVariables).toEqual(c.error.missing);
    expect(error.extra).toEqual(c.error.extra ?? []);
    expect(error.invalid).toEqual(c.error.invalid ?? []);
    expect(error.message).toBe(c.error.message);
    return;
  }
  const out = render(prompt, variables, c.options);
  expect(out).toEqual(expand(c.expected, c.repeat));
  if (c.expectedJson !== undefined) expect(JSON.stringify(out)).toBe(c.expectedJson);
});
