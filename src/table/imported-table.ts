import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { addCacheReader } from '../cache/reader';
import { KEY_READ_ACTIONS, READ_DATA_ACTIONS } from '../private/perms';
import { grantOnTable, readConditions } from '../private/table-grants';
import type { IPromptServingCache } from '../prompt-cache-options';
import type { PromptServingGrantReadOptions } from '../prompt-serving-table';
import type { IPromptServingTable, PromptServingTableAttributes } from '../prompt-serving-table-ref';
import { Env } from '../schema';

/** A serving table owned elsewhere: grants and readers only; nothing is created for the table itself. */
export class ImportedPromptServingTable extends Construct implements IPromptServingTable {
  public readonly tableName: string;
  public readonly tableArn: string;
  public readonly encryptionKey?: kms.IKey;
  private readonly table: dynamodb.TableBaseV2;
  private readonly cache?: IPromptServingCache;

  constructor(scope: Construct, id: string, attrs: PromptServingTableAttributes) {
    super(scope, id);
    if (attrs.tableName === undefined && attrs.tableArn === undefined) {
      throw new Error('`PromptServingTableAttributes` must give `tableName` or `tableArn`, got neither. '
        + 'Pass the serving table\'s name (same account and Region) or its ARN');
    }
    this.table = dynamodb.TableV2.fromTableAttributes(this, 'Table', {
      tableName: attrs.tableName,
      tableArn: attrs.tableArn,
      encryptionKey: attrs.encryptionKey,
    }) as dynamodb.TableBaseV2;
    this.tableName = this.table.tableName;
    this.tableArn = this.table.tableArn;
    this.encryptionKey = attrs.encryptionKey;
    this.cache = attrs.cache;
  }

  public grantRead(grantee: iam.IGrantable, options: PromptServingGrantReadOptions = {}): iam.Grant {
    return grantOnTable(grantee, this.table, READ_DATA_ACTIONS, KEY_READ_ACTIONS, readConditions(options.promptIds));
  }

  public addReader(fn: lambda.Function, options: PromptServingGrantReadOptions = {}): iam.Grant {
    // As the owning table does: the cache part first, since it checks that `fn` can reach the cache.
    const cacheGrant = this.cache ? addCacheReader(fn, this.cache, this.tableName) : undefined;
    fn.addEnvironment(Env.tableName, this.tableName);
    const grant = this.grantRead(fn, options);
    return cacheGrant ? grant.combine(cacheGrant) : grant;
  }
}
