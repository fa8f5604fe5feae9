/**
 * `otelReadAttributes()` loads `@opentelemetry/api` lazily and never depends on it: run from an isolated copy (a
 * bundle in a temporary folder outside the repository, where nothing but Node's built-ins resolves), it answers
 * `undefined`; with the real package copied beside the bundle, it answers a hook that sets the attributes on the
 * active span. Both output formats a function bundle can have (CommonJS, and ESM where `__filename` is absent and
 * the function's root is `LAMBDA_TASK_ROOT`).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(__dirname, '../..');
const dirs: string[] = [];

afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const entry = `
import { otelReadAttributes } from ${JSON.stringify(path.join(root, 'src/runtime/read-hooks.ts'))};
const hook = otelReadAttributes();
let attributes = null;
if (hook) {
  const api = require('@opentelemetry/api');
  const span = { setAttributes(a) { attributes = a; return span; }, spanContext: () => ({ traceId: '1'.padStart(32, '0'), spanId: '1'.padStart(16, '0'), traceFlags: 1 }), isRecording: () => true };
  let current = api.ROOT_CONTEXT;
  api.context.setGlobalContextManager({ active: () => current, with: (c, fn, t, ...a) => { const s = current; current = c; try { return fn.call(t, ...a); } finally { current = s; } }, bind: (_c, f) => f, enable() { return this; }, disable() { return this; } });
  api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, span), () => hook({ tableName: 't', promptId: 'greeting', version: 3, checksum: 'c', source: 'l2', stale: true, ageSeconds: 2 }, undefined));
}
console.log(JSON.stringify({ hook: typeof hook, attributes }));
`;

async function isolated(format: 'cjs' | 'esm', withOtel: boolean): Promise<{ hook: string; attributes: Record<string, unknown> | null }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'otel-isolated-'));
  dirs.push(dir);
  const file = path.join(dir, format === 'cjs' ? 'index.js' : 'index.mjs');
  await build({
    stdin: { contents: format === 'esm' ? entry.replace("const api = require('@opentelemetry/api');", "const api = await import('@opentelemetry/api');") : entry, resolveDir: dir, loader: 'ts' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format,
    outfile: file,
    external: ['@opentelemetry/api'],
    logLevel: 'silent',
  });
  if (withOtel) fs.cpSync(path.join(root, 'node_modules/@opentelemetry/api'), path.join(dir, 'node_modules/@opentelemetry/api'), { recursive: true });
  const run = spawnSync(process.execPath, [file], {
    cwd: dir, encoding: 'utf8', timeout: 20_000, env: { PATH: process.env.PATH, LAMBDA_TASK_ROOT: dir },
  });
  if (run.status !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!);
}

test.each(['cjs', 'esm'] as const)('%s: without @opentelemetry/api the helper is undefined (the hook stays unset)', async (format) => {
  expect(await isolated(format, false)).toEqual({ hook: 'undefined', attributes: null });
});

test.each(['cjs', 'esm'] as const)('%s: with @opentelemetry/api beside the function the attributes land on the active span', async (format) => {
  expect(await isolated(format, true)).toEqual({
    hook: 'function',
    attributes: { 'gen_ai.prompt.name': 'greeting', 'gen_ai.prompt.version': 3, 'prompt.source': 'l2', 'prompt.stale': true, 'prompt.age_seconds': 2 },
  });
});
