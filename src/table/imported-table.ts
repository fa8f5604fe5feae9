import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import { PromptServingTableBase } from './serving-table-base';
import type { IPromptServingCache } from '../prompt-cache-options';
import type { PromptServingTableAttributes } from '../prompt-serving-table-ref';

/** A serving table owned elsewhere: grants and readers only; nothing is created for the table itself. */
export class ImportedPromptServingTable extends PromptServingTableBase {
  public readonly tableName: string;
  public readonly tableArn: string;
  public readonly encryptionKey?: kms.IKey;
  /** @internal */
  protected readonly _grantTable: dynamodb.TableBaseV2;
  /** @internal */
  protected readonly _readerCache?: IPromptServingCache;

  constructor(scope: Construct, id: string, attrs: PromptServingTableAttributes) {
    super(scope, id);
    if (attrs.tableName === undefined && attrs.tableArn === undefined) {
      throw new Error('`PromptServingTableAttributes` must give `tableName` or `tableArn`, got neither. '
        + 'Pass the serving table\'s name (same account and Region) or its ARN');
    }
    this._grantTable = dynamodb.TableV2.fromTableAttributes(this, 'Table', {
      tableName: attrs.tableName,
      tableArn: attrs.tableArn,
      encryptionKey: attrs.encryptionKey,
    }) as dynamodb.TableBaseV2;
    this.tableName = this._grantTable.tableName;
    this.tableArn = this._grantTable.tableArn;
    this.encryptionKey = attrs.encryptionKey;
    this._readerCache = attrs.cache;
  }
}
