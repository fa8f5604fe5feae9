/**
 * The write kit's one table Scan: strongly consistent and paged to the end, for the rare whole-table passes (the
 * catalog's membership, the label flags' drift). Callers give what to project and filter; the pages are theirs to fold.
 */
import { DynamoDBClient, ScanCommand, ScanCommandInput } from '@aws-sdk/client-dynamodb';
import { Item } from '../schema/ddb-codec';

/** What a caller chooses of a Scan: the rest (table, consistency, paging) is the kit's. */
export type ScanShape = Pick<ScanCommandInput, 'ProjectionExpression' | 'FilterExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'>;

/** Every item `shape` selects from `tableName`, page after page (strongly consistent). */
export async function* consistentScan(client: DynamoDBClient, tableName: string, shape: ScanShape): AsyncGenerator<Item> {
  let startKey: Item | undefined;
  do {
    const out = await client.send(new ScanCommand({ ...shape, TableName: tableName, ConsistentRead: true, ExclusiveStartKey: startKey }));
    yield* out.Items ?? [];
    startKey = out.LastEvaluatedKey;
  } while (startKey);
}
