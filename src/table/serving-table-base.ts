import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { alreadyReads, markReader, readerFunction } from './reader-mark';
import { addCacheReader, grantCacheConnect } from '../cache/reader';
import { KEY_READ_ACTIONS, READ_DATA_ACTIONS } from '../private/perms';
import { grantOnTable, readConditions } from '../private/table-grants';
import type { IPromptServingCache } from '../prompt-cache-options';
import type { IPromptServingTable, PromptServingGrantReadOptions } from '../prompt-serving-table-ref';
import { Env } from '../schema';

/**
 * What a serving table made here and one imported by name or attributes share: the read grant and adding a
 * reader, written once (the role `TableBaseV2` plays for aws-cdk-lib's tables).
 *
 * Not exported from the package: jsii folds its public methods into each subclass.
 *
 * @internal
 */
export abstract class PromptServingTableBase extends Construct implements IPromptServingTable {
  public abstract readonly tableName: string;
  public abstract readonly tableArn: string;
  public abstract readonly encryptionKey?: kms.IKey;

  /**
   * The DynamoDB table the grants are made on (its ARN, its key, its resource policy across accounts).
   * @internal
   */
  protected abstract readonly _grantTable: dynamodb.TableBaseV2;

  /**
   * The cache tier readers also read, if the table has one.
   * @internal
   */
  protected abstract readonly _readerCache?: IPromptServingCache;

  /**
   * Permits `grantee` to read prompts: `dynamodb:GetItem`, `dynamodb:BatchGetItem` and `dynamodb:Query` on
   * the table (no `Scan`, no indexes, no streams), plus `kms:Decrypt` on `encryptionKey` when the table has a
   * customer managed key. IAM only: it sets no environment variable (adding a reader does both). With prompt
   * ids, the table actions carry a `dynamodb:LeadingKeys` condition (see the grant options).
   *
   * @example
   * import * as iam from 'aws-cdk-lib/aws-iam';
   * import { PromptServingTable, PromptSource } from 'cdk-prompt-serving';
   *
   * declare const role: iam.IRole;
   * const prompts = new PromptServingTable(this, 'Prompts', { source: PromptSource.bedrock() });
   * prompts.grantRead(role, { promptIds: ['summarize'] });
   */
  public grantRead(grantee: iam.IGrantable, options: PromptServingGrantReadOptions = {}): iam.Grant {
    return grantOnTable(grantee, this._grantTable, READ_DATA_ACTIONS, KEY_READ_ACTIONS, readConditions(options.promptIds));
  }

  /**
   * Makes a function a reader in one call: sets its `PROMPT_SERVING_TABLE_NAME` environment variable (which
   * the runtime client reads) and grants read access as the read grant does.
   *
   * `fn` must be a Lambda function made in this app, since its environment and layers are set: a
   * `lambda.Function`, `NodejsFunction` (which bundles the runtime client into the function), `PythonFunction`,
   * or an alias or version of one (the function behind it is configured). An imported function
   * (`Function.fromFunctionArn`) is refused with an error: grant it with `grantRead` and give its code the
   * table name instead.
   *
   * A function reads one serving table. Adding it again to the same table changes nothing but the grant (which
   * IAM adds up); adding it to a second table is an error at synth (docs/adr/0006-one-table-per-reader.md): grant
   * the second table with `grantRead` and pass its name to the client (`tableName`).
   *
   * With a `cache`, `fn` must be in the cache's VPC (a synth-time error otherwise); it also opens the cache's
   * ports (TCP 6379-6380 for a serverless cache) from `fn`'s security groups, grants `elasticache:Connect` on the
   * cache and its reader user, sets the cache environment (`PROMPT_SERVING_CACHE_ENDPOINT`, `_TLS`, `_AUTH`,
   * `_USER`, `_NAME`, `_RESOURCE_TYPE`, `_CLUSTER`), which turns the runtime client's L2 on, and attaches the
   * cache client layer once. `fn` then also needs a route to DynamoDB: a gateway endpoint
   * (`dynamoDbGatewayEndpoint: true` on the cache) or a NAT gateway.
   *
   * @example
   * import * as lambda from 'aws-cdk-lib/aws-lambda';
   * import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
   * import { PromptServingTable, PromptSource } from 'cdk-prompt-serving';
   *
   * const prompts = new PromptServingTable(this, 'Prompts', { source: PromptSource.fromDirectory('prompts') });
   * const fn = new nodejs.NodejsFunction(this, 'Inference', {
   *   entry: 'lambda/inference.mjs',
   *   runtime: lambda.Runtime.NODEJS_22_X,
   *   bundling: { format: nodejs.OutputFormat.ESM },
   * });
   * prompts.addReader(fn);
   */
  public addReader(fn: lambda.IFunction, options: PromptServingGrantReadOptions = {}): iam.Grant {
    const reader = readerFunction(fn);
    const tableName = this._grantTable.tableName;
    const table = { tableName, tablePath: this.node.path };
    // Every check before anything is changed: the table the function already reads, then the cache's VPC.
    const again = alreadyReads(reader, table);
    const cache = this._readerCache;
    if (cache && options.promptIds !== undefined) {
      throw new Error(`addReader of ${reader.node.path} with \`promptIds\` on ${this.node.path}, which has a cache: the cache's reader user `
        + 'reads every prompt of the table, so the scope would hold in DynamoDB only and the function would read every other prompt '
        + 'through the cache. For a prompt-scoped function use grantRead(fn, { promptIds }) and set PROMPT_SERVING_TABLE_NAME yourself '
        + '(it reads the table, not the cache), or addReader without `promptIds`');
    }
    let cacheGrant: iam.Grant | undefined;
    if (cache) {
      cacheGrant = again ? grantCacheConnect(reader, cache, cache.readerUserArn) : addCacheReader(reader, cache, tableName);
    }
    if (!again) {
      reader.addEnvironment(Env.tableName, tableName);
      markReader(reader, table);
    }
    const grant = this.grantRead(reader, options);
    return cacheGrant ? grant.combine(cacheGrant) : grant;
  }
}
