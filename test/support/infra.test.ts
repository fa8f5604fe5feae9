import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { CallCounter } from './call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from './table';

test('DynamoDB Local from the global setup answers and the counter counts real calls', async () => {
  // GIVEN
  const counter = new CallCounter();
  const client = counter.attach(localDynamoDBClient());
  // WHEN
  const name = await createServingTable(client);
  const tables = await client.send(new ListTablesCommand({}));
  // THEN
  expect(tables.TableNames).toContain(name);
  expect(counter.count('CreateTable')).toBe(1);
  expect(counter.count('ListTables')).toBe(1);
  await deleteTable(client, name);
  client.destroy();
});
