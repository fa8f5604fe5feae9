/**
 * Hostile ids and hand-broken catalogs on the read side, against DynamoDB Local: an id over the key limit is not-found
 * without a remote call, and a catalog that fails its integrity rules never rejects a real prompt.
 */
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { publish, textContent, writeCatalog } from './fixtures';
import { PromptClient, PromptNotFoundError } from '../../src/runtime';
import { CATALOG_ID, CURRENT } from '../../src/schema';
import { fromItem, toItem } from '../../src/schema/ddb-codec';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let admin: DynamoDBClient;
let tableName: string;
const opened: DynamoDBClient[] = [];

beforeEach(async () => {
  admin = localDynamoDBClient();
  tableName = await createServingTable(admin);
  await publish(admin, tableName, 'greeting', 1, textContent('Hello {{name}}'));
});

afterEach(async () => {
  for (const c of opened.splice(0)) c.destroy();
  await deleteTable(admin, tableName);
  admin.destroy();
});

function reader() {
  const counter = new CallCounter();
  const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }));
  opened.push(dynamoDBClient);
  return { prompts: new PromptClient({ tableName, dynamoDBClient }), counter };
}

test.each([
  ['700 CJK characters (2,100 bytes)', '提'.repeat(700)],
  ['1,025 ASCII characters', 'a'.repeat(1025)],
  ['a lone surrogate', 'x\ud800'],
])('an id of %s is not found, with no remote call', async (_name, id) => {
  const { prompts, counter } = reader();
  await expect(prompts.getPrompt(id)).rejects.toBeInstanceOf(PromptNotFoundError);
  expect(counter.snapshot()).toEqual({});
});

test.each([
  ['bloom_hashes 1e8', { bloom_hashes: 100_000_000 }],
  ['an all-zero filter with a positive count', { bloom: new Uint8Array(128), count: 5 }],
  ['bloom_bits beyond the bytes', { bloom_bits: 999_999 }],
  ['bloom a string', { bloom: 'AAAA' }],
  ['count a string', { count: '1' }],
  ['revision a string', { revision: 'x' }],
])('a catalog with %s is ignored: the prompt is served, quickly', async (_name, broken) => {
  // GIVEN a catalog that does not list "greeting" at all, then broken
  await writeCatalog(admin, tableName, ['someone-else']);
  const { Item } = await admin.send(new GetItemCommand({
    TableName: tableName, Key: { prompt_id: { S: CATALOG_ID }, version: { S: CURRENT } },
  }));
  await admin.send(new PutItemCommand({ TableName: tableName, Item: toItem({ ...fromItem(Item!), ...broken }) }));
  const { prompts } = reader();
  // WHEN
  const started = performance.now();
  const prompt = await prompts.getPrompt('greeting');
  // THEN
  expect(prompt.templateType === 'TEXT' && prompt.text).toBe('Hello {{name}}');
  expect(performance.now() - started).toBeLessThan(2_000);
});

test('a consistent catalog still rules out ids it does not hold (the check is not simply off)', async () => {
  await writeCatalog(admin, tableName, ['someone-else']);
  const { prompts } = reader();
  await expect(prompts.getPrompt('greeting')).rejects.toBeInstanceOf(PromptNotFoundError);
});
