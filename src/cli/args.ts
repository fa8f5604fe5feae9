/**
 * Command-line parsing, by hand (no framework dependency): `<command> [operand] --name value | --name=value | --flag`.
 * Anything it cannot make sense of is a `UsageError` (exit code 2). A value is taken as a value: `--prompt -h`
 * asks for the value with `--prompt=-h` instead of printing help, and help is only an option in an option's place.
 */
import { MAX_VERSION_NUMBER } from '../schema';
import { CLIENT_TOKEN_PATTERN } from '../schema/release-api';

/** What the command line asks for. */
export type Invocation =
  | { readonly command: 'help' }
  | { readonly command: 'activate'; readonly table: string; readonly prompt: string; readonly version: number; readonly by?: string }
  | { readonly command: 'list-versions'; readonly table: string; readonly prompt: string; readonly json: boolean }
  | { readonly command: 'get'; readonly table: string; readonly prompt: string; readonly version?: number }
  | { readonly command: 'list'; readonly table: string; readonly json: boolean }
  | { readonly command: 'sync'; readonly table: string; readonly directory: string }
  | { readonly command: 'validate'; readonly directory: string }
  | { readonly command: 'history'; readonly table: string; readonly prompt: string; readonly limit?: number; readonly json: boolean }
  | (ReleaseMove & { readonly command: 'label set'; readonly version: number })
  | (ReleaseMove & {
    readonly command: 'rollout start';
    readonly version: number;
    /** Basis points (from `--percent-bp`, or `--percent` converted exactly). */
    readonly percentBp: number;
    readonly stepsBp?: number[];
    readonly interval?: number;
    readonly alarms?: string[];
  })
  | (ReleaseMove & { readonly command: 'rollout step'; readonly percentBp?: number })
  | (ReleaseMove & { readonly command: 'rollout promote' | 'rollout abort' });

/** What every move through the release path takes. */
export interface ReleaseMove {
  readonly table: string;
  readonly prompt: string;
  readonly label: string;
  readonly reason?: string;
  readonly url?: string;
  /** `--client-token`: retry a move another invocation started (absent: the CLI makes one and prints it). */
  readonly clientToken?: string;
}

/** The command line is malformed: print the message and the usage, exit 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

type CommandName = Exclude<Invocation['command'], 'help'>;
type OptionName = 'table' | 'prompt' | 'version' | 'by' | 'json' | 'directory'
  | 'audit' | 'limit' | 'label' | 'percent' | 'percent-bp' | 'steps' | 'steps-bp' | 'interval' | 'alarms' | 'reason' | 'url'
  | 'client-token';

interface CommandSpec {
  readonly required: readonly OptionName[];
  readonly optional: readonly OptionName[];
  /** The one positional argument the command takes, named as in the usage. */
  readonly operand?: string;
}

const COMMANDS: Readonly<Record<CommandName, CommandSpec>> = {
  'activate': { required: ['table', 'prompt', 'version'], optional: ['by'] },
  'list-versions': { required: ['table', 'prompt'], optional: ['json'] },
  'get': { required: ['table', 'prompt'], optional: ['version'] },
  'list': { required: ['table'], optional: ['json'] },
  'sync': { required: ['table', 'directory'], optional: [] },
  'validate': { required: [], optional: [], operand: 'DIRECTORY' },
  'history': { required: ['table', 'audit'], optional: ['limit', 'json'] },
  'label set': { required: ['table', 'prompt', 'label', 'version'], optional: ['reason', 'url', 'client-token'] },
  'rollout start': {
    required: ['table', 'prompt', 'label', 'version'],
    optional: ['percent-bp', 'percent', 'steps-bp', 'steps', 'interval', 'alarms', 'reason', 'url', 'client-token'],
  },
  'rollout step': { required: ['table', 'prompt', 'label'], optional: ['percent-bp', 'percent', 'reason', 'url', 'client-token'] },
  'rollout promote': { required: ['table', 'prompt', 'label'], optional: ['reason', 'url', 'client-token'] },
  'rollout abort': { required: ['table', 'prompt', 'label'], optional: ['reason', 'url', 'client-token'] },
};
/** Commands named by two words (`label set`, `rollout start`, …). */
const COMMAND_GROUPS: ReadonlySet<string> = new Set(['label', 'rollout']);

/** Options that take no value. */
const FLAGS: ReadonlySet<OptionName> = new Set(['json']);
const HELP_OPTIONS: ReadonlySet<string> = new Set(['--help', '-h']);
const HELP_COMMAND = 'help';
const OPTION = /^--([a-z]+(?:-[a-z]+)*)(?:=([\s\S]*))?$/;

/** Parses `argv` (without the node and script paths). */
export function parseInvocation(argv: readonly string[]): Invocation {
  if (argv[0] === HELP_COMMAND || (argv[0] !== undefined && HELP_OPTIONS.has(argv[0]))) return { command: 'help' };
  let [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('missing command');
  if (COMMAND_GROUPS.has(command)) {
    if (rest[0] === undefined || rest[0].startsWith('-')) throw new UsageError(`${command} needs a subcommand (${Object.keys(COMMANDS).filter((c) => c.startsWith(`${command} `)).map((c) => c.split(' ')[1]).join(', ')})`);
    command = `${command} ${rest[0]}`;
    rest = rest.slice(1);
  }
  if (!isCommand(command)) throw new UsageError(`unknown command '${command}'`);
  const spec = COMMANDS[command];
  const values = new Map<OptionName, string>();
  const flags = new Set<OptionName>();
  let operand: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    if (HELP_OPTIONS.has(rest[i])) return { command: 'help' };
    const m = OPTION.exec(rest[i]);
    if (!m) {
      if (spec.operand && operand === undefined && !rest[i].startsWith('-')) {
        operand = rest[i];
        continue;
      }
      throw new UsageError(`unexpected argument '${rest[i]}'`);
    }
    const name = m[1] as OptionName;
    if (![...spec.required, ...spec.optional].includes(name)) throw new UsageError(`${command} does not take --${m[1]}`);
    if (values.has(name) || flags.has(name)) throw new UsageError(`--${name} is given twice`);
    if (FLAGS.has(name)) {
      if (m[2] !== undefined) throw new UsageError(`--${name} takes no value`);
      flags.add(name);
      continue;
    }
    const value = m[2] ?? rest[++i];
    if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
    if (m[2] === undefined && value.startsWith('-')) {
      throw new UsageError(`--${name} needs a value, got the option-like '${value}' (write --${name}=${value} if that is the value)`);
    }
    values.set(name, value);
  }
  for (const name of spec.required) {
    if (!values.has(name)) throw new UsageError(`${command} needs --${name}`);
  }
  if (spec.operand && operand === undefined) throw new UsageError(`${command} needs a ${spec.operand}`);

  const table = values.get('table')!;
  const target = { table, prompt: values.get('prompt')! };
  const version = values.has('version') ? versionNumber(values.get('version')!) : undefined;
  switch (command) {
    case 'activate': return { command, ...target, version: version!, by: values.get('by') };
    case 'list-versions': return { command, ...target, json: flags.has('json') };
    case 'get': return { command, ...target, version };
    case 'list': return { command, table, json: flags.has('json') };
    case 'sync': return { command, table, directory: values.get('directory')! };
    case 'validate': return { command, directory: operand! };
    case 'history': return { command, table, prompt: values.get('audit')!, limit: optionalWhole(values.get('limit'), 'limit', 1, 1000), json: flags.has('json') };
  }
  const release: ReleaseMove = {
    table,
    prompt: values.get('prompt')!,
    label: values.get('label')!,
    reason: values.get('reason'),
    url: values.get('url'),
    clientToken: clientToken(values.get('client-token')),
  };
  switch (command) {
    case 'label set': return { command, ...release, version: version! };
    case 'rollout start': {
      const percentBp = singleShare(values);
      if (percentBp === undefined) throw new UsageError('rollout start needs --percent-bp (or --percent)');
      return {
        command,
        ...release,
        version: version!,
        percentBp,
        stepsBp: shareBp(values, 'steps'),
        interval: optionalWhole(values.get('interval'), 'interval', 60, 604_800),
        alarms: values.has('alarms') ? values.get('alarms')!.split(',').map((a) => a.trim()).filter((a) => a.length > 0) : undefined,
      };
    }
    case 'rollout step': return { command, ...release, percentBp: singleShare(values) };
    case 'rollout promote':
    case 'rollout abort': return { command, ...release };
  }
  throw new UsageError(`unknown command '${command}'`);
}

/**
 * A share (or comma-separated list of shares) in basis points, from `--NAME-bp` (whole basis points) or `--NAME`
 * (percents, converted exactly from their decimal text: 2.5 is 250 bp; a percent finer than 0.01 is refused, never
 * rounded). Only one of the two may be given. The release function checks the range, so both say the same.
 */
function shareBp(values: ReadonlyMap<OptionName, string>, name: 'percent' | 'steps'): number[] | undefined {
  const bpName = `${name}-bp` as const;
  if (values.has(name) && values.has(bpName)) throw new UsageError(`give --${bpName} or --${name}, not both`);
  if (values.has(bpName)) return values.get(bpName)!.split(',').map((t) => wholeBp(t.trim(), bpName));
  if (values.has(name)) return values.get(name)!.split(',').map((t) => percentTextToBp(t.trim(), name));
  return undefined;
}

function singleShare(values: ReadonlyMap<OptionName, string>): number | undefined {
  const shares = shareBp(values, 'percent');
  if (shares !== undefined && shares.length !== 1) throw new UsageError(`--${values.has('percent') ? 'percent' : 'percent-bp'} takes one share, got ${shares.length}`);
  return shares?.[0];
}

function wholeBp(text: string, option: string): number {
  if (!/^\d{1,9}$/.test(text)) throw new UsageError(`--${option} must be whole basis points such as 1000 (10 %) or 250 (2.5 %), got '${text}'`);
  return Number(text);
}

/** `10` → 1000, `2.5` → 250, `0.01` → 1: decimal text to basis points without floating-point rounding. */
export function percentTextToBp(text: string, option = 'percent'): number {
  const m = /^(\d{1,7})(?:\.(\d+))?$/.exec(text);
  if (!m) throw new UsageError(`--${option} must be a percent such as 10 or 2.5, got '${text}'`);
  const fraction = (m[2] ?? '').replace(/0+$/, '');
  if (fraction.length > 2) throw new UsageError(`--${option} must be a whole number of hundredths of a percent (one basis point is 0.01 %), got '${text}'`);
  return Number(m[1]) * 100 + Number(fraction.padEnd(2, '0'));
}

function clientToken(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  if (!CLIENT_TOKEN_PATTERN.test(text)) throw new UsageError(`--client-token must be 1 to 64 letters, digits, '-' or '_', got '${text}'`);
  return text;
}

function optionalWhole(text: string | undefined, option: string, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`--${option} must be a whole number from ${min} to ${max}, got '${text}'`);
  return n;
}

function isCommand(name: string): name is CommandName {
  return Object.prototype.hasOwnProperty.call(COMMANDS, name);
}

function versionNumber(text: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_VERSION_NUMBER)) {
    throw new UsageError(`--version must be a whole number from 1 to ${MAX_VERSION_NUMBER}, got '${text}'`);
  }
  return n;
}
