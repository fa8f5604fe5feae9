/** Creates serving tables in DynamoDB Local with the construct's key schema (schema v1). */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { setLocalAwsEnvironment } from './dynamodb-local';
import { PARTITION_KEY, SORT_KEY } from '../../src/schema';

/** Endpoint of the DynamoDB Local started by the jest global setup (or by the demo/bench). */
export function localEndpoint(): string {
  const endpoint = process.env.DYNAMODB_LOCAL_ENDPOINT;
  if (!endpoint) throw new Error('DYNAMODB_LOCAL_ENDPOINT is not set: start DynamoDB Local first (jest global setup does)');
  return endpoint;
}

/** A DynamoDB client pointed at DynamoDB Local. */
export function localDynamoDBClient(config: DynamoDBClientConfig = {}, endpoint = localEndpoint()): DynamoDBClient {
  setLocalAwsEnvironment();
  return new DynamoDBClient({ endpoint, region: 'us-east-1', ...config });
}

/** Creates a uniquely named serving table and returns its name. */
export async function createServingTable(client: DynamoDBClient, prefix = 'prompts'): Promise<string> {
  const tableName = `${prefix}-${randomUUID().slice(0, 8)}`;
  await createServingTableNamed(client, tableName);
  return tableName;
}

/** Creates a serving table (the construct's keys, on-demand) under exactly `tableName`. */
export async function createServingTableNamed(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(new CreateTableCommand({
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: PARTITION_KEY, AttributeType: 'S' },
      { AttributeName: SORT_KEY, AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: PARTITION_KEY, KeyType: 'HASH' },
      { AttributeName: SORT_KEY, KeyType: 'RANGE' },
    ],
  }));
}

export async function deleteTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
}
