import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct, type IConstruct } from 'constructs';

/** Construct id of the mark `addReader` leaves on a reader (a plain construct: nothing in the template). */
const MARK_ID = 'PromptServingReader';

/**
 * Which serving table a function reads, left on the function by the first `addReader`
 * (docs/adr/0006-one-table-per-reader.md): the table's name (a token for a table made in this app) and its path.
 */
class ReaderMark extends Construct {
  constructor(scope: Construct, id: string, readonly tableName: string, readonly tablePath: string) {
    super(scope, id);
  }
}

/** What `addReader` knows of a table: its name as the environment gets it, and its construct path for messages. */
export interface ReaderTable {
  readonly tableName: string;
  readonly tablePath: string;
}

/**
 * Whether `fn` already reads `table` (`true`: `addReader` ran for it before) or reads nothing yet (`false`).
 * Throws when `fn` reads another table: a function's environment names one table and one cache, so a second
 * table would silently take them over while the grants covered both.
 */
export function alreadyReads(fn: lambda.Function, table: ReaderTable): boolean {
  const mark = fn.node.tryFindChild(MARK_ID) as ReaderMark | undefined;
  if (mark === undefined) return false;
  if (mark.tableName === table.tableName) return true;
  throw new Error(`\`addReader\`: ${fn.node.path} already reads the serving table ${mark.tablePath}, so it cannot also be a reader of `
    + `${table.tablePath}: a reader's environment (\`PROMPT_SERVING_TABLE_NAME\` and the cache settings) names one table. `
    + `To read ${table.tablePath} as well, grant it with \`grantRead(fn)\` on that table and pass the table's name to the client `
    + '(`new PromptClient({ tableName })`, `PromptClient(table_name=...)`), e.g. through an environment variable of your own');
}

/** Records that `fn` reads `table` (after every check passed). */
export function markReader(fn: lambda.Function, table: ReaderTable): void {
  new ReaderMark(fn, MARK_ID, table.tableName, table.tablePath);
}

/**
 * The function `addReader` configures for `fn`: `fn` itself when it is a function made in this app, the function
 * behind an alias or version of one; otherwise (an imported function) an error naming what to do instead.
 */
export function readerFunction(fn: lambda.IFunction): lambda.Function {
  if (fn instanceof lambda.Function) return fn;
  if (fn instanceof lambda.Alias) return readerFunction(fn.version.lambda);
  if (fn instanceof lambda.Version) return readerFunction(fn.lambda);
  throw new Error('`addReader` needs a Lambda function made in this app (`lambda.Function`, `NodejsFunction`, `PythonFunction`, or an '
    + `alias or version of one) to set its environment and layers, got ${describe(fn)}. For a function made elsewhere, grant it with `
    + '`grantRead(fn)` and give its code the table name (`new PromptClient({ tableName })`, `PromptClient(table_name=...)`); '
    + 'with a cache it then reads the table only');
}

function describe(fn: IConstruct): string {
  return `${fn.node.path} (${fn.constructor.name === 'Import' ? 'an imported function' : fn.constructor.name})`;
}
