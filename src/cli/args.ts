/**
 * Command-line parsing, by hand (no framework dependency): `<command> [operand] --name value | --name=value | --flag`.
 * Anything it cannot make sense of is a `UsageError` (exit code 2). A value is taken as a value: `--prompt -h`
 * asks for the value with `--prompt=-h` instead of printing help, and help is only an option in an option's place.
 */
import { MAX_VERSION_NUMBER } from '../schema';

/** What the command line asks for. */
export type Invocation =
  | { readonly command: 'help' }
  | { readonly command: 'activate'; readonly table: string; readonly prompt: string; readonly version: number; readonly by?: string }
  | { readonly command: 'list-versions'; readonly table: string; readonly prompt: string; readonly json: boolean }
  | { readonly command: 'get'; readonly table: string; readonly prompt: string; readonly version?: number }
  | { readonly command: 'list'; readonly table: string; readonly json: boolean }
  | { readonly command: 'sync'; readonly table: string; readonly directory: string }
  | { readonly command: 'validate'; readonly directory: string };

/** The command line is malformed: print the message and the usage, exit 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

type CommandName = Exclude<Invocation['command'], 'help'>;
type OptionName = 'table' | 'prompt' | 'version' | 'by' | 'json' | 'directory';

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
};

/** Options that take no value. */
const FLAGS: ReadonlySet<OptionName> = new Set(['json']);
const HELP_OPTIONS: ReadonlySet<string> = new Set(['--help', '-h']);
const HELP_COMMAND = 'help';
const OPTION = /^--([a-z]+)(?:=([\s\S]*))?$/;

/** Parses `argv` (without the node and script paths). */
export function parseInvocation(argv: readonly string[]): Invocation {
  if (argv[0] === HELP_COMMAND || (argv[0] !== undefined && HELP_OPTIONS.has(argv[0]))) return { command: 'help' };
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('missing command');
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
  }
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
