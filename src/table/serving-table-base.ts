import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { addCacheReader } from '../cache/reader';
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
   * the runtime client reads) and grants read access as the read grant does. Any Lambda function works,
   * `NodejsFunction` included (it bundles the runtime client into the function).
   *
   * With a `cache`, `fn` must be in the cache's VPC (a synth-time error otherwise); it also opens the cache's
   * ports (TCP 6379-6380 for a serverless cache) from `fn`'s security groups, grants `elasticache:Connect` on the
   * cache and its reader user, and sets the cache environment (`PROMPT_SERVING_CACHE_ENDPOINT`, `_TLS`, `_AUTH`,
   * `_USER`, `_NAME`, `_RESOURCE_TYPE`, `_CLUSTER`), which turns the runtime client's L2 on. `fn` then also needs
   * a route to DynamoDB: a gateway endpoint (`dynamoDbGatewayEndpoint: true` on the cache) or a NAT gateway.
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
  public addReader(fn: lambda.Function, options: PromptServingGrantReadOptions = {}): iam.Grant {
    const tableName = this._grantTable.tableName;
    // The cache part first: it checks that `fn` can reach the cache before anything is changed.
    const cacheGrant = this._readerCache ? addCacheReader(fn, this._readerCache, tableName) : undefined;
    fn.addEnvironment(Env.tableName, tableName);
    const grant = this.grantRead(fn, options);
    return cacheGrant ? grant.combine(cacheGrant) : grant;
  }
}
