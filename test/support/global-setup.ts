/** Jest global setup: one DynamoDB Local for the whole run; tests create uniquely named tables. */
import { startDynamoDBLocal } from './dynamodb-local';

export default async function globalSetup(): Promise<void> {
  const ddb = await startDynamoDBLocal();
  process.env.DYNAMODB_LOCAL_ENDPOINT = ddb.endpoint;
  (globalThis as any).__DYNAMODB_LOCAL__ = ddb;
}
