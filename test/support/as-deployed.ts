/**
 * The as-deployed harness: every Lambda function of a synthesized app, run from its staged asset ALONE, the way the
 * Lambda runtime runs it. No jest globals (the bench uses it too).
 *
 * - `synthesize(build)`: the app synthesized as a user's app is (`new App({ outdir })`, `app.synth()`); each
 *   `AWS::Lambda::Function` of the template with its staged `asset.*` folder in cdk.out (found through the assets
 *   manifest by the S3 key), its layers' staged folders, its environment (tokens unresolved) and its event source
 *   mappings.
 * - `startFunction(fn, options)`: the asset copied into `<tmp>/var/task` of a fresh temporary folder under
 *   `os.tmpdir()` (outside the repository), layers into `<tmp>/opt`, and a "runtime" folder where only `@aws-sdk/*`
 *   is resolvable (Node.js) or only boto3 and its dependencies (Python, from Debian's dist-packages, where
 *   `python3-redis` must stay invisible). Node.js runs in a child process with `NODE_PATH` as Lambda sets it
 *   (`/opt/nodejs/node22/node_modules:/opt/nodejs/node_modules:/var/runtime/node_modules:/var/runtime:/var/task`) and
 *   a preload hook that fails any module the function's code asks for which resolves outside the asset, its layers,
 *   Node's built-ins or `@aws-sdk/*`; Python runs `/usr/bin/python3 -I -S` with `sys.path` as Lambda's (`/var/task`,
 *   `/opt/python`, the runtime's boto3) and reports every module loaded from elsewhere than those and the standard
 *   library. Every invocation answers with what the code asked for and could not find (`missing`).
 * - Environment: the template's `Environment.Variables` with tokens resolved by the caller (`resolve`), e.g. the
 *   table's `Ref` → the local table name, the cache endpoint → the local redis-server.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';

const root = path.resolve(__dirname, '../..');

export interface SynthesizedFunction {
  readonly stack: string;
  readonly logicalId: string;
  readonly handler: string;
  readonly runtime: string;
  /** `Environment.Variables` as the template renders them (tokens unresolved). */
  readonly environment: Record<string, unknown>;
  /** The staged asset folder in cdk.out. */
  readonly assetDir: string;
  /** The staged folders of its layers, in order. */
  readonly layerDirs: readonly string[];
  readonly timeoutSeconds: number;
  readonly properties: Record<string, any>;
}

export interface SynthesizedApp {
  readonly outdir: string;
  readonly templates: Record<string, any>;
  readonly functions: SynthesizedFunction[];
  /** `AWS::Lambda::EventSourceMapping` properties by the logical id of the function they invoke. */
  readonly eventSourceMappings: Record<string, Record<string, any>>;
  /** The function whose logical id starts with `prefix` (exactly one; of `stack` when given). */
  fn(prefix: string, stack?: string): SynthesizedFunction;
  cleanup(): void;
}

/** Synthesizes the stacks `build` adds to a fresh app, as `cdk synth` does, into a temporary cdk.out. */
export function synthesize(build: (app: App) => void, outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'as-deployed-cdk.out-'))): SynthesizedApp {
  const app = new App({ outdir });
  build(app);
  const assembly = app.synth();
  const templates: Record<string, any> = {};
  const functions: SynthesizedFunction[] = [];
  const eventSourceMappings: Record<string, Record<string, any>> = {};
  for (const stack of assembly.stacks) {
    const template = stack.template;
    templates[stack.stackName] = template;
    const manifest = JSON.parse(fs.readFileSync(path.join(assembly.directory, `${stack.stackName}.assets.json`), 'utf8'));
    const stagedByKey = (s3Key: unknown): string => {
      const key = typeof s3Key === 'string' ? s3Key : undefined;
      const hash = key?.replace(/\.zip$/, '');
      const entry = hash === undefined ? undefined : manifest.files?.[hash];
      if (!entry) throw new Error(`no staged asset for S3 key ${JSON.stringify(s3Key)} in ${stack.stackName}`);
      return path.join(assembly.directory, entry.source.path);
    };
    const resources: Record<string, any> = template.Resources ?? {};
    for (const [logicalId, resource] of Object.entries(resources)) {
      if (resource.Type === 'AWS::Lambda::EventSourceMapping') {
        const target = resource.Properties.FunctionName?.Ref;
        if (target) eventSourceMappings[target] = resource.Properties;
      }
      if (resource.Type !== 'AWS::Lambda::Function') continue;
      const props = resource.Properties;
      if (props.Code?.ZipFile !== undefined) throw new Error(`${stack.stackName}/${logicalId} has inline code: not an asset`);
      const layerDirs = (props.Layers ?? []).map((layer: any) => {
        const layerResource = resources[layer.Ref];
        if (layerResource?.Type !== 'AWS::Lambda::LayerVersion') throw new Error(`${logicalId}: layer ${JSON.stringify(layer)} is not in the template`);
        return stagedByKey(layerResource.Properties.Content.S3Key);
      });
      functions.push({
        stack: stack.stackName,
        logicalId,
        handler: props.Handler,
        runtime: props.Runtime,
        environment: props.Environment?.Variables ?? {},
        assetDir: stagedByKey(props.Code.S3Key),
        layerDirs,
        timeoutSeconds: props.Timeout ?? 3,
        properties: props,
      });
    }
  }
  return {
    outdir,
    templates,
    functions,
    eventSourceMappings,
    fn(prefix, stack) {
      const found = functions.filter((f) => f.logicalId.startsWith(prefix) && (stack === undefined || f.stack === stack));
      if (found.length !== 1) throw new Error(`${found.length} functions start with ${prefix}: ${functions.map((f) => f.logicalId).join(', ')}`);
      return found[0];
    },
    cleanup: () => fs.rmSync(outdir, { recursive: true, force: true }),
  };
}

/** Resolves the template's intrinsic functions in an environment value: `Ref`/`Fn::GetAtt` through `refs`, `Fn::Join`. */
export type RefResolver = (logicalId: string, attribute?: string) => string | undefined;

export function resolveValue(value: unknown, refs: RefResolver): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  const v = value as Record<string, any>;
  if (v.Ref !== undefined) return must(refs(v.Ref), v);
  if (v['Fn::GetAtt'] !== undefined) return must(refs(v['Fn::GetAtt'][0], v['Fn::GetAtt'][1]), v);
  if (v['Fn::Join'] !== undefined) return (v['Fn::Join'][1] as unknown[]).map((p) => resolveValue(p, refs)).join(v['Fn::Join'][0]);
  throw new Error(`cannot resolve ${JSON.stringify(value)}`);
}

function must(resolved: string | undefined, token: unknown): string {
  if (resolved === undefined) throw new Error(`no local value for ${JSON.stringify(token)}`);
  return resolved;
}

export interface StartOptions {
  /** Resolves tokens of the template's environment. */
  readonly refs: RefResolver;
  /** Added to the environment (credentials, endpoints of the local stand-ins, a CA to trust). */
  readonly extraEnv?: Record<string, string>;
  /** Replaces the staged asset folder (a deliberately broken asset). */
  readonly assetDir?: string;
}

export interface InvokeResult<T = unknown> {
  readonly result?: T;
  readonly error?: { readonly name: string; readonly message: string };
  /** Modules the function's code asked for that could not be found in the isolated copy. */
  readonly missing: string[];
  /** Modules resolved outside the asset, its layers, built-ins and the runtime's SDK (the hook failed them). */
  readonly violations: string[];
}

export interface DeployedProcess {
  readonly dir: string;
  /** What the function wrote to stdout and stderr, one entry a line. */
  readonly logs: string[];
  /** Init failure, if the module could not be loaded. */
  readonly initError?: string;
  invoke<T = unknown>(event: unknown): Promise<InvokeResult<T>>;
  /** Invokes and returns the handler's result; throws on a function error or a module from outside the asset. */
  call<T = unknown>(event: unknown): Promise<T>;
  /** Calls another export of the handler's module (one a test appended), e.g. `stats`. */
  callExport<T = unknown>(name: string, event?: unknown): Promise<T>;
  stop(): Promise<void>;
}

/** Starts `fn` from an isolated copy of its asset (and layers) in a child process; resolves once its module is loaded. */
export async function startFunction(fn: SynthesizedFunction, options: StartOptions): Promise<DeployedProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'as-deployed-'));
  if (dir.startsWith(root + path.sep)) throw new Error('the temporary folder must be outside the repository');
  const task = path.join(dir, 'var', 'task');
  const opt = path.join(dir, 'opt');
  fs.cpSync(options.assetDir ?? fn.assetDir, task, { recursive: true, dereference: true });
  fs.mkdirSync(opt, { recursive: true });
  for (const layer of fn.layerDirs) fs.cpSync(layer, opt, { recursive: true, dereference: true });
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    AWS_REGION: 'us-east-1',
    AWS_DEFAULT_REGION: 'us-east-1',
    // DynamoDB Local keeps tables per access key id: the caller's (test/support/dynamodb-local.ts sets 'local').
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    AWS_SESSION_TOKEN: 'local-session',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_LAMBDA_FUNCTION_NAME: fn.logicalId,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.properties.MemorySize ?? 128),
    LAMBDA_TASK_ROOT: task,
    // Layers are extracted to /opt in Lambda: paths under it (a directory source's prompts) point into <tmp>/opt.
    ...Object.fromEntries(Object.entries(fn.environment).map(([k, v]) => [k, resolveValue(v, options.refs).replace(/(^|[^\w])\/opt\//g, `$1${opt}/`)])),
    ...options.extraEnv,
  };
  const child = fn.runtime.startsWith('python') ? startPython(dir, task, opt, fn, env) : startNode(dir, task, opt, fn, env);
  return connect(child, dir);
}

// ---- Node.js ---------------------------------------------------------------------------------------------------

/** The preload hook: records and fails resolutions from the function's code that leave the allowed folders. */
const GUARD = String.raw`
const Module = require('node:module');
const path = require('node:path');
const code = JSON.parse(process.env.AS_DEPLOYED_CODE_DIRS || '[]');
const inCode = (file) => typeof file === 'string' && code.some((d) => file === d || file.startsWith(d + path.sep));
const state = globalThis.__asDeployed = { missing: [], violations: [] };
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, isMain, options) {
  const fromCode = parent === undefined || parent === null ? false : inCode(parent.filename);
  let resolved;
  try {
    resolved = resolve.call(this, request, parent, isMain, options);
  } catch (err) {
    if (fromCode && err && err.code === 'MODULE_NOT_FOUND' && !state.missing.includes(request)) state.missing.push(request);
    throw err;
  }
  if (fromCode && !Module.isBuiltin(request) && !request.startsWith('@aws-sdk/') && !inCode(resolved)) {
    const what = request + ' (asked for by ' + parent.filename + ') resolved outside the asset and its layers: ' + resolved;
    state.violations.push(what);
    throw Object.assign(new Error('as-deployed: ' + what), { code: 'MODULE_NOT_FOUND' });
  }
  return resolved;
};
`;

/** ES module hooks: Lambda lets an ES module handler import the runtime's AWS SDK; nothing else may leave the asset. */
const ESM_HOOKS = String.raw`
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isBuiltin } from 'node:module';
import * as path from 'node:path';
let code = [];
let runtime = '';
export async function initialize(data) { code = data.code; runtime = data.runtime; }
const inCode = (url) => url && url.startsWith('file:') && code.some((d) => { const f = fileURLToPath(url); return f === d || f.startsWith(d + path.sep); });
export async function resolve(specifier, context, next) {
  if (!inCode(context.parentURL)) return next(specifier, context);
  if (specifier.startsWith('@aws-sdk/')) return next(specifier, { ...context, parentURL: pathToFileURL(path.join(runtime, 'index.mjs')).href });
  const resolved = await next(specifier, context);
  if (!isBuiltin(specifier) && !resolved.url.startsWith('node:') && !inCode(resolved.url)) {
    throw new Error('as-deployed: ' + specifier + ' (imported by ' + context.parentURL + ') resolved outside the asset and its layers: ' + resolved.url);
  }
  return resolved;
}
`;

/** Loads the handler as Lambda's runtime does (index.js, .mjs or .cjs), then serves invocations over IPC. */
const NODE_RUNNER = String.raw`
const { pathToFileURL } = require('node:url');
const fs = require('node:fs');
const path = require('node:path');
const [file, name] = (() => {
  const handler = process.env._HANDLER;
  const dot = handler.lastIndexOf('.');
  const base = path.join(process.env.LAMBDA_TASK_ROOT, handler.slice(0, dot));
  const ext = ['.js', '.mjs', '.cjs'].find((e) => fs.existsSync(base + e));
  if (!ext) throw new Error('handler file ' + base + '.{js,mjs,cjs} not found');
  return [base + ext, handler.slice(dot + 1)];
})();
const report = () => ({ missing: [...globalThis.__asDeployed.missing], violations: [...globalThis.__asDeployed.violations] });
// The test (or bench) that started this process is gone: so is the function (no orphans).
process.on('disconnect', () => process.exit(0));
(async () => {
  let handler;
  let mod;
  try {
    mod = await import(pathToFileURL(file).href);
    handler = mod[name] ?? (mod.default && mod.default[name]);
    if (typeof handler !== 'function') throw new Error(name + ' is not a function exported by ' + file);
  } catch (err) {
    process.send({ init: true, error: { name: err && err.name, message: String(err && err.stack || err) }, ...report() }, () => process.exit(1));
    return;
  }
  process.on('message', async ({ id, event }) => {
    try {
      // A test may call another export of the handler's module (e.g. one it appended to read stats()).
      const exported = event && event.__asDeployedExport;
      const fn = exported ? (mod[exported] ?? (mod.default && mod.default[exported])) : handler;
      const result = await fn(exported ? event.event : event, { functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, awsRequestId: 'req-' + id, getRemainingTimeInMillis: () => 30000 });
      process.send({ id, result, ...report() });
    } catch (err) {
      process.send({ id, error: { name: err && err.name, message: String(err && err.message || err) }, ...report() });
    }
  });
  process.send({ init: true, ...report() });
})();
`;

/** Only `@aws-sdk/*` (and, behind the symlink, what those packages need) is resolvable from the runtime folder. */
function runtimeFolder(dir: string): string {
  const runtime = path.join(dir, 'var', 'runtime');
  fs.mkdirSync(path.join(runtime, 'node_modules'), { recursive: true });
  fs.symlinkSync(path.join(root, 'node_modules', '@aws-sdk'), path.join(runtime, 'node_modules', '@aws-sdk'));
  return runtime;
}

function startNode(dir: string, task: string, opt: string, fn: SynthesizedFunction, env: Record<string, string>): ChildProcess {
  const runtime = runtimeFolder(dir);
  const boot = path.join(dir, 'bootstrap');
  fs.mkdirSync(boot);
  fs.writeFileSync(path.join(boot, 'guard.cjs'), GUARD);
  fs.writeFileSync(path.join(boot, 'hooks.mjs'), ESM_HOOKS);
  fs.writeFileSync(path.join(boot, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(
    'file://' + path.join(boot, 'hooks.mjs'))}, { data: { code: ${JSON.stringify([task, opt])}, runtime: ${JSON.stringify(path.join(runtime, 'node_modules'))} } });\n`);
  fs.writeFileSync(path.join(boot, 'runner.cjs'), NODE_RUNNER);
  const nodePath = [
    path.join(opt, 'nodejs', 'node22', 'node_modules'), path.join(opt, 'nodejs', 'node_modules'),
    path.join(runtime, 'node_modules'), runtime, task,
  ].join(':');
  return spawn(process.execPath, ['--require', path.join(boot, 'guard.cjs'), '--import', path.join(boot, 'register.mjs'), path.join(boot, 'runner.cjs')], {
    cwd: task,
    env: { ...env, NODE_PATH: nodePath, _HANDLER: fn.handler, AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`, AS_DEPLOYED_CODE_DIRS: JSON.stringify([task, opt]) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
}

// ---- Python -----------------------------------------------------------------------------------------------------

/**
 * What Lambda's Python runtime provides beside the function: boto3 and what it needs (never redis-py). Debian's
 * botocore uses the system's `requests` (and its dependencies) where upstream vendors it.
 */
export const PYTHON_RUNTIME_PACKAGES = ['boto3', 'botocore', 's3transfer', 'jmespath', 'dateutil', 'urllib3', 'six.py',
  'requests', 'idna', 'charset_normalizer', 'chardet', 'certifi'];
const DIST_PACKAGES = '/usr/lib/python3/dist-packages';
export const PYTHON = '/usr/bin/python3';

const PYTHON_RUNNER = String.raw`
import importlib, json, os, sys, traceback
task, opt, runtime = sys.argv[1], sys.argv[2], sys.argv[3]
stdlib = [p for p in sys.path if p]
sys.path[:] = [task, os.path.join(opt, 'python'), runtime] + stdlib
allowed = tuple(os.path.join(d, '') for d in [task, opt, runtime] + stdlib)
missing = []
class Missing:
    @staticmethod
    def find_spec(name, path=None, target=None):
        top = name.split('.')[0]
        if top not in missing:
            missing.append(top)
        return None
sys.meta_path.append(Missing)
protocol = os.fdopen(3, 'w')
def report():
    violations = sorted({name + ' from ' + f for name, m in list(sys.modules.items())
                         for f in [getattr(m, '__file__', None)] if name != '__main__' and f and not f.startswith(allowed)})
    return {'missing': list(missing), 'violations': violations}
def send(message):
    protocol.write(json.dumps(message, default=str) + '\n')
    protocol.flush()
module_name, _, function_name = os.environ['_HANDLER'].rpartition('.')
try:
    handler = getattr(importlib.import_module(module_name), function_name)
except Exception as err:
    send(dict(init=True, error={'name': type(err).__name__, 'message': traceback.format_exc()}, **report()))
    sys.exit(1)
send(dict(init=True, **report()))
class Context:
    function_name = os.environ.get('AWS_LAMBDA_FUNCTION_NAME')
    aws_request_id = 'req'
    def get_remaining_time_in_millis(self):
        return 30000
for line in sys.stdin:
    request = json.loads(line)
    try:
        event = request['event']
        exported = event.get('__asDeployedExport') if isinstance(event, dict) else None
        fn = getattr(sys.modules[module_name], exported) if exported else handler
        send(dict(id=request['id'], result=fn(event.get('event') if exported else event, Context()), **report()))
    except Exception as err:
        send(dict(id=request['id'], error={'name': type(err).__name__, 'message': str(err)}, **report()))
`;

function startPython(dir: string, task: string, opt: string, fn: SynthesizedFunction, env: Record<string, string>): ChildProcess {
  const runtime = path.join(dir, 'var', 'runtime');
  fs.mkdirSync(runtime, { recursive: true });
  for (const pkg of PYTHON_RUNTIME_PACKAGES) fs.symlinkSync(path.join(DIST_PACKAGES, pkg), path.join(runtime, pkg));
  const runner = path.join(dir, 'bootstrap.py');
  fs.writeFileSync(runner, PYTHON_RUNNER);
  return spawn(PYTHON, ['-I', '-S', '-B', runner, task, opt, runtime], {
    cwd: task,
    env: { ...env, _HANDLER: fn.handler, AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`, PYTHONUNBUFFERED: '1' },
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
}

// ---- both ---------------------------------------------------------------------------------------------------------

type Message = { id?: number; init?: boolean; result?: unknown; error?: { name: string; message: string }; missing: string[]; violations: string[] };

async function connect(child: ChildProcess, dir: string): Promise<DeployedProcess> {
  const logs: string[] = [];
  const keep = (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const listeners = new Set<(m: Message) => void>();
  const python = child.stdio[3] !== null && child.stdio[3] !== undefined && !child.connected;
  if (python) {
    let buffer = '';
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => {
      buffer += d.toString();
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        const m = JSON.parse(line) as Message;
        for (const l of listeners) l(m);
      }
    });
  } else {
    child.on('message', (m: Message) => { for (const l of listeners) l(m); });
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const init = await new Promise<Message>((resolve) => {
    const timer = setTimeout(() => resolve({ init: true, error: { name: 'Timeout', message: 'no init within 30 s' }, missing: [], violations: [] }), 30_000);
    const done = (m: Message) => { clearTimeout(timer); resolve(m); };
    listeners.add((m) => { if (m.init) done(m); });
    child.once('exit', (code) => done({ init: true, error: { name: 'Exit', message: `exited with ${code}: ${logs.join('\n')}` }, missing: [], violations: [] }));
  });
  let next = 0;
  const waiting = new Map<number, (m: Message) => void>();
  listeners.add((m) => {
    if (m.id === undefined) return;
    waiting.get(m.id)?.(m);
    waiting.delete(m.id);
  });
  child.once('exit', () => {
    for (const [id, w] of waiting) w({ id, error: { name: 'Exit', message: `the process exited: ${logs.slice(-5).join('\n')}` }, missing: [], violations: [] });
    waiting.clear();
  });
  const invoke = <T>(event: unknown): Promise<InvokeResult<T>> => {
    if (init.error) return Promise.resolve({ error: init.error, missing: init.missing, violations: init.violations });
    return new Promise((resolve) => {
      const id = next++;
      waiting.set(id, (m) => resolve({ result: m.result as T, error: m.error, missing: m.missing, violations: m.violations }));
      if (python) (child.stdio[0] as NodeJS.WritableStream).write(JSON.stringify({ id, event }) + '\n');
      else child.send({ id, event });
    });
  };
  const call = async <T>(event: unknown): Promise<T> => {
    const r = await invoke<T>(event);
    if (r.violations.length > 0) throw new Error(`modules from outside the asset: ${r.violations.join('; ')}`);
    if (r.error) throw Object.assign(new Error(`${r.error.name}: ${r.error.message}`), { name: r.error.name });
    return r.result as T;
  };
  return {
    dir,
    logs,
    initError: init.error?.message,
    invoke,
    call,
    callExport: <T>(name: string, event: unknown = {}): Promise<T> => call<T>({ __asDeployedExport: name, event }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The logical id of the one resource of `type` in `template` whose id starts with `prefix`. */
export function resourceId(template: any, type: string, prefix: string): string {
  const ids = Object.keys(template.Resources).filter((id) => template.Resources[id].Type === type && id.startsWith(prefix));
  if (ids.length !== 1) throw new Error(`${ids.length} ${type} start with ${prefix}`);
  return ids[0];
}

