/**
 * The release path's reads and writes of the serving table: a label item as read (strongly consistent), the
 * members of a move's transaction (the guarded label `Put`, the check that the prompt is still served), the
 * transaction itself, a lone audit record, and the conditional deletes of rollout registry entries. The release
 * engine decides; this file is how its decisions reach the table.
 */
import {
  AttributeValue,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { isConflict } from './guarded-write';
import { RegistryAttr, RegistryEntry, labelGuard, registryKey } from './label-item';
import { Attr, CURRENT, PARTITION_KEY, SORT_KEY, STATUS_DELETED, labelSortKey } from '../schema';
import { Item } from '../schema/ddb-codec';

export class LabelWrites {
  constructor(private readonly client: DynamoDBClient, private readonly tableName: string) {}

  /** The label's item as read (strongly consistent), or none. */
  async getLabel(promptId: string, label: string): Promise<Item | undefined> {
    const out = await this.client.send(new GetItemCommand({
      TableName: this.tableName, ConsistentRead: true, Key: { [PARTITION_KEY]: { S: promptId }, [SORT_KEY]: { S: labelSortKey(label) } },
    }));
    return out.Item;
  }

  /** A `Put` of a label item, conditioned on the label still being as read (or still absent). */
  guardedLabelPut(item: Item, read: Item | undefined): TransactWriteItem {
    return { Put: { TableName: this.tableName, Item: item, ...labelGuard(read) } };
  }

  /**
   * A label move's check, in its own transaction, that `CURRENT` still exists and is not `DELETED`: a sync that marks
   * the prompt deleted between the move's read and its write makes the move lose (it re-reads, then answers
   * `PromptDeleted`), so no label moves after the deletion and misses its `source_deleted_at`.
   */
  servedCheck(promptId: string): TransactWriteItem {
    return {
      ConditionCheck: {
        TableName: this.tableName,
        Key: { [PARTITION_KEY]: { S: promptId }, [SORT_KEY]: { S: CURRENT } },
        ConditionExpression: 'attribute_exists(#pk) AND #status <> :deleted',
        ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#status': Attr.status },
        ExpressionAttributeValues: { ':deleted': { S: STATUS_DELETED } },
      },
    };
  }

  /** A `Put` of an item with no condition (a rollout registry entry). */
  put(item: Item): TransactWriteItem {
    return { Put: { TableName: this.tableName, Item: item } };
  }

  /** A `Delete` of a label's rollout registry entry, as a member of a move's transaction. */
  registryDelete(promptId: string, label: string): TransactWriteItem {
    return { Delete: { TableName: this.tableName, Key: registryKey(promptId, label) } };
  }

  /** Writes the members in one transaction (all or none; a failed condition throws a conflict). */
  async transact(items: TransactWriteItem[]): Promise<void> {
    await this.client.send(new TransactWriteItemsCommand({ TransactItems: items }));
  }

  /** Writes one record alone (an audit record built by `auditPut`). */
  async putRecord(record: TransactWriteItem): Promise<void> {
    await this.client.send(new PutItemCommand(record.Put!));
  }

  /**
   * Drops a registry entry whose label no longer carries that rollout (a hand edit; the release path writes both
   * in one transaction), conditioned on the entry still naming it.
   */
  async dropStaleRegistryEntry(entry: RegistryEntry): Promise<void> {
    await this.client.send(new DeleteItemCommand({
      TableName: this.tableName,
      Key: registryKey(entry.promptId, entry.label),
      ConditionExpression: '#rid = :rid',
      ExpressionAttributeNames: { '#rid': RegistryAttr.rolloutId },
      ExpressionAttributeValues: { ':rid': { S: entry.rolloutId } },
    })).catch((err: unknown) => {
      if (!isConflict(err)) throw err;
    });
  }

  /** Deletes a registry item as read (its `rollout_id`, whatever its type, unchanged); false when it changed. */
  async dropRegistryItem(raw: Record<string, AttributeValue>): Promise<boolean> {
    const rid = raw[RegistryAttr.rolloutId];
    try {
      await this.client.send(new DeleteItemCommand({
        TableName: this.tableName,
        Key: { [PARTITION_KEY]: raw[PARTITION_KEY], [SORT_KEY]: raw[SORT_KEY] },
        ConditionExpression: rid === undefined ? 'attribute_exists(#pk) AND attribute_not_exists(#rid)' : '#rid = :rid',
        ExpressionAttributeNames: rid === undefined ? { '#pk': PARTITION_KEY, '#rid': RegistryAttr.rolloutId } : { '#rid': RegistryAttr.rolloutId },
        ExpressionAttributeValues: rid === undefined ? undefined : { ':rid': rid },
      }));
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }
}
