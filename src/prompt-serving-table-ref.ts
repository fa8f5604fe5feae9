import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import type { IPromptServingCache } from './prompt-cache-options';

/** Options for `grantRead()` and `addReader()` of a serving table (made here or imported). */
export interface PromptServingGrantReadOptions {
  /**
   * Restrict the grantee to these prompt ids (and the `#catalog` item readers check first).
   *
   * Adds a `ForAllValues:StringEquals` condition on `dynamodb:LeadingKeys`. Limits: the grant is per prompt
   * (every version of a listed prompt is readable); a `BatchGetItem` with any unlisted id is denied as a
   * whole; the catalog reveals whether other ids exist (never their content); the KMS grant cannot be scoped
   * by prompt; each id adds its length plus a few characters to the grantee's policy, which IAM limits to
   * 10,240 characters per role; and a broader grant to the same principal still applies, since IAM adds them up.
   * `addReader` of a table with a cache refuses `promptIds`: the cache's reader user reads every prompt of the table.
   *
   * @default - every prompt in the table
   */
  readonly promptIds?: string[];
}

/**
 * A serving table that readers can be given access to: one this app made (`PromptServingTable`) or one made
 * elsewhere and imported by name or attributes.
 */
export interface IPromptServingTable extends IConstruct {
  /** The name of the serving table. */
  readonly tableName: string;

  /** The ARN of the serving table. */
  readonly tableArn: string;

  /** The table's customer managed key, when it has one. */
  readonly encryptionKey?: kms.IKey;

  /**
   * Permits the grantee to read prompts: the table's read actions (get, batch get and query of items, nothing
   * else), plus decrypting with the table's customer managed key when it has one.
   */
  grantRead(grantee: iam.IGrantable, options?: PromptServingGrantReadOptions): iam.Grant;

  /**
   * Makes a function a reader in one call: sets the table-name environment variable that the runtime client
   * reads, and grants read access as the read grant does. With a cache tier it also makes the function a cache
   * reader (VPC check, ports, `elasticache:Connect`, cache environment, the cache client layer).
   *
   * `fn` must be a Lambda function made in this app (`lambda.Function`, `NodejsFunction`, `PythonFunction`, or an
   * alias or version of one); an imported function is refused (grant it with the read grant instead). A function
   * reads one serving table: adding it again to the same table changes only the grant; adding it to another
   * table is refused at synth.
   */
  addReader(fn: lambda.IFunction, options?: PromptServingGrantReadOptions): iam.Grant;
}

/**
 * How to find a serving table made by another stack, app or account.
 *
 * Give the table's name or its ARN (an ARN for a table in another account or Region).
 */
export interface PromptServingTableAttributes {
  /**
   * The name of the serving table, in this stack's account and Region.
   *
   * @default - taken from `tableArn`
   */
  readonly tableName?: string;

  /**
   * The ARN of the serving table. Needed for a table in another account or Region. A reader in another account
   * also needs the owning account to allow it, in the table's resource policy.
   *
   * @default - built from `tableName` in this stack's account and Region
   */
  readonly tableArn?: string;

  /**
   * The table's customer managed KMS key, so that readers are also granted decryption with it.
   *
   * @default - the table uses an AWS owned key; no key permissions are granted
   */
  readonly encryptionKey?: kms.IKey;

  /**
   * The table's cache tier, e.g. `cache` of the `PromptServingTable` that owns it (another stack of the same
   * app). `addReader` then treats the function as a cache reader exactly as the owning table would: it must be
   * in the cache's VPC, gets the cache's ports opened, `elasticache:Connect` on the cache and its reader user,
   * and the cache environment.
   *
   * @default - readers read the table only
   */
  readonly cache?: IPromptServingCache;
}
