/**
 * The sync's part of the ordering rule: a repair of a hand-broken row continues its `revision` rather
 * than restarting it, and a pointer hand-edited to absurd version numbers heals to the source's content. Against
 * DynamoDB Local. Each test failed before its fix.
 */
import { DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CATALOG_ID, CURRENT, MAX_VERSION_NUMBER } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { SyncEngine } from '../../src/sync/engine';
import { MemorySource, textPrompt } from '../support/memory-source';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let client: DynamoDBClient;
let tableName: string;

beforeEach(async () => {
  client = localDynamoDBClient();
  tableName = await createServingTable(client, 'repair');
});

afterEach(async () => {
  await deleteTable(client, tableName);
  client.destroy();
});

const sync = (source: MemorySource) => new SyncEngine({ dynamoDBClient: client, tableName, source }).fullSync();

async function raw(id: string, version = CURRENT): Promise<Record<string, any> | undefined> {
  const Key = { prompt_id: { S: id }, version: { S: version } };
  const out = await client.send(new GetItemCommand({ TableName: tableName, Key, ConsistentRead: true }));
  return out.Item && fromItem(out.Item);
}

async function edit(id: string, expression: string, values?: Record<string, any>): Promise<void> {
  await client.send(new UpdateItemCommand({
    TableName: tableName,
    Key: { prompt_id: { S: id }, version: { S: CURRENT } },
    UpdateExpression: expression,
    ExpressionAttributeValues: values,
  }));
}

/** Prompt `p` synced twice (history v000001, v000002), its pointer's revision then set to 41. */
async function syncedPrompt(): Promise<MemorySource> {
  const source = new MemorySource();
  source.set('p', textPrompt('served'));
  await sync(source);
  source.set('p', textPrompt('served v2'));
  await sync(source);
  await edit('p', 'SET revision = :r', { ':r': { N: '41' } });
  return source;
}

describe('a repair continues `revision`, never restarts it', () => {
  test.each([
    ['removed, then the source changes', 'REMOVE revision', undefined, true],
    ['removed, with a broken status (a repair without a source change)', 'REMOVE revision SET #s = :s', { ':s': { S: 'weird' } }, false],
    ['a string', 'SET revision = :r', { ':r': { S: 'x' } }, true],
    ['negative', 'SET revision = :r', { ':r': { N: '-3' } }, true],
    ['a fraction', 'SET revision = :r', { ':r': { N: '2.5' } }, true],
  ])('revision %s: the next write is above every revision the pointer had', async (_, expression, values, change) => {
    // GIVEN a pointer at revision 41, then hand-edited
    const source = await syncedPrompt();
    await client.send(new UpdateItemCommand({
      TableName: tableName,
      Key: { prompt_id: { S: 'p' }, version: { S: CURRENT } },
      UpdateExpression: expression,
      ExpressionAttributeValues: values,
      ...(expression.includes('#s') ? { ExpressionAttributeNames: { '#s': 'status' } } : {}),
    }));
    if (change) source.set('p', textPrompt('served v3'));
    // WHEN the sync writes it
    const report = await sync(source);
    // THEN its revision continues above 41, a whole number readers can compare
    expect(report.written).toBe(1);
    const pointer = await raw('p');
    expect(pointer!.revision).toBeGreaterThan(41);
    expect(Number.isSafeInteger(pointer!.revision)).toBe(true);
    // AND counts on from there
    source.set('p', textPrompt('served v4'));
    await sync(source);
    expect((await raw('p'))!.revision).toBe(pointer!.revision + 1);
  });

  test('a revision beyond what readers can compare exactly (1E+100) heals to a whole number', async () => {
    const source = await syncedPrompt();
    await edit('p', 'SET revision = :r', { ':r': { N: '1E+100' } });
    source.set('p', textPrompt('served v3'));
    const report = await sync(source);
    expect(report).toMatchObject({ written: 1, failed: 0 });
    expect(Number.isSafeInteger((await raw('p'))!.revision)).toBe(true);
  });

  test('the catalog\'s revision removed by hand: its next write continues above it', async () => {
    const source = await syncedPrompt();
    await client.send(new UpdateItemCommand({
      TableName: tableName,
      Key: { prompt_id: { S: CATALOG_ID }, version: { S: CURRENT } },
      UpdateExpression: 'SET revision = :r',
      ExpressionAttributeValues: { ':r': { N: '41' } },
    }));
    await client.send(new UpdateItemCommand({
      TableName: tableName, Key: { prompt_id: { S: CATALOG_ID }, version: { S: CURRENT } }, UpdateExpression: 'REMOVE revision',
    }));
    source.set('q', textPrompt('new prompt'));
    const report = await sync(source);
    expect(report.catalogUpdated).toBe(true);
    expect((await raw(CATALOG_ID))!.revision).toBeGreaterThan(41);
  });
});

describe('a pointer hand-edited to absurd version numbers heals to the source\'s content', () => {
  test.each([
    ['version_number 999999', 'SET version_number = :n, #t = :t', false],
    ['version_number and latest_version_number 999999, then a source change', 'SET version_number = :n, latest_version_number = :n', true],
    ['latest_version_number 999999, then a source change', 'SET latest_version_number = :n', true],
  ])('%s', async (_, expression, change) => {
    // GIVEN a pointer at v2 of 2, hand-edited
    const source = await syncedPrompt();
    await client.send(new UpdateItemCommand({
      TableName: tableName,
      Key: { prompt_id: { S: 'p' }, version: { S: CURRENT } },
      UpdateExpression: expression,
      ExpressionAttributeValues: { ':n': { N: String(MAX_VERSION_NUMBER) }, ...(expression.includes('#t') ? { ':t': { S: 'hand-edited text' } } : {}) },
      ...(expression.includes('#t') ? { ExpressionAttributeNames: { '#t': 'text' } } : {}),
    }));
    if (change) source.set('p', textPrompt('served v3'));
    // WHEN the next sync runs
    const report = await sync(source);
    // THEN the source's content is served again, as the version after the highest version item in the history
    expect(report.failures).toEqual([]);
    const text = change ? 'served v3' : 'served v2';
    expect(await raw('p')).toMatchObject({ status: 'ACTIVE', text, version_number: 3, latest_version_number: 3 });
    expect(await raw('p', 'v000003')).toMatchObject({ text, version_number: 3 });
    // AND the healed pointer stays put
    expect(await sync(source)).toMatchObject({ written: 0, repaired: [], failed: 0 });
  });

  test('a version item hand-made at v999999: the next version takes the highest free number below it', async () => {
    // GIVEN history v000001, v000002 and a hand-made v999999
    const source = await syncedPrompt();
    await client.send(new PutItemCommand({
      TableName: tableName,
      Item: { prompt_id: { S: 'p' }, version: { S: 'v999999' }, version_number: { N: '999999' }, text: { S: 'by hand' } },
    }));
    await edit('p', 'SET latest_version_number = :n', { ':n': { N: String(MAX_VERSION_NUMBER) } });
    source.set('p', textPrompt('served v3'));
    // WHEN
    const report = await sync(source);
    // THEN
    expect(report.failures).toEqual([]);
    expect(await raw('p')).toMatchObject({ text: 'served v3', version_number: 3, latest_version_number: 3 });
    expect(await raw('p', 'v999999')).toMatchObject({ text: 'by hand' }); // immutable: never rewritten
  });
});
