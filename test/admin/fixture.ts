/**
 * Shared set-up of the admin tests: a fresh serving table in DynamoDB Local per test, a prompts directory
 * synced into it by the real SyncEngine, a PromptAdmin on its own client, and a reader's view of the table.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient, GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { PromptAdmin } from '../../src/admin';
import { CURRENT, PARTITION_KEY, SORT_KEY } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { SyncEngine, SyncReport } from '../../src/sync/engine';
import { DirectoryPromptSource } from '../../src/sync/sources/directory';
import { CallCounter } from '../support/call-counter';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

export type StoredItem = Record<string, any>;

export interface ServingTableFixture {
  /** Client of the sync engine and the reader (calls counted by `counter`). */
  client: DynamoDBClient;
  counter: CallCounter;
  /** Client of `admin` (its own, so tests can hook into the admin's calls alone). */
  adminClient: DynamoDBClient;
  admin: PromptAdmin;
  tableName: string;
  /** The prompts directory the sync reads. */
  dir: string;
}

/** Registers per-test set-up and clean-up; the returned object holds the current test's table. */
export function useServingTable(): ServingTableFixture {
  const fx = {} as ServingTableFixture;
  beforeEach(async () => {
    fx.counter = new CallCounter();
    fx.client = fx.counter.attach(localDynamoDBClient());
    fx.tableName = await createServingTable(fx.client);
    fx.adminClient = fx.counter.attach(localDynamoDBClient());
    fx.admin = new PromptAdmin({ tableName: fx.tableName, dynamoDBClient: fx.adminClient });
    fx.dir = mkdtempSync(path.join(tmpdir(), 'prompts-'));
    fx.counter.reset();
  });
  afterEach(async () => {
    await deleteTable(fx.client, fx.tableName);
    fx.client.destroy();
    fx.adminClient.destroy();
    rmSync(fx.dir, { recursive: true, force: true });
  });
  return fx;
}

/** Writes `<id>.md` with `text` as its template: a change at the source. */
export function writePrompt(fx: ServingTableFixture, id: string, text: string): void {
  writeFileSync(path.join(fx.dir, `${id}.md`), text);
}

/** A full sync of the prompts directory with the real engine (a new engine each time, like each invocation). */
export function fullSync(fx: ServingTableFixture): Promise<SyncReport> {
  return engine(fx).fullSync();
}

/** A targeted sync of one prompt (what a CloudTrail event triggers). */
export function syncPrompt(fx: ServingTableFixture, id: string): Promise<SyncReport> {
  return engine(fx).syncPrompt(id);
}

function engine(fx: ServingTableFixture): SyncEngine {
  return new SyncEngine({ dynamoDBClient: fx.client, tableName: fx.tableName, source: new DirectoryPromptSource(fx.dir) });
}

/** Syncs each text in turn as the prompt's next version (v1, v2, …). */
export async function syncVersions(fx: ServingTableFixture, id: string, texts: readonly string[]): Promise<void> {
  for (const text of texts) {
    writePrompt(fx, id, text);
    const report = await fullSync(fx);
    expect(report.writtenIds).toContain(id);
  }
}

/** What a reader gets: one GetItem of the pointer. */
export async function readCurrent(fx: ServingTableFixture, id: string): Promise<StoredItem | undefined> {
  const out = await fx.client.send(new GetItemCommand({
    TableName: fx.tableName, Key: { [PARTITION_KEY]: { S: id }, [SORT_KEY]: { S: CURRENT } },
  }));
  return out.Item && fromItem(out.Item);
}

/** Every immutable version item of a prompt, by sort key (a consistent Query; the pointer left out). */
export async function versionItems(fx: ServingTableFixture, id: string): Promise<Map<string, StoredItem>> {
  const out = await fx.client.send(new QueryCommand({
    TableName: fx.tableName,
    KeyConditionExpression: '#pk = :id AND begins_with(#sk, :v)',
    ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
    ExpressionAttributeValues: { ':id': { S: id }, ':v': { S: 'v' } },
    ConsistentRead: true,
  }));
  return new Map((out.Items ?? []).map(fromItem).map((item) => [item[SORT_KEY] as string, item]));
}

/** Runs `hook` before each `command` (e.g. `PutItem`) `client` sends; the call then proceeds unchanged. */
export function beforeSending(client: DynamoDBClient, command: string, hook: () => Promise<void>): void {
  client.middlewareStack.add(
    (next: any, context: any) => async (args: any) => {
      if (context.commandName === `${command}Command`) await hook();
      return next(args);
    },
    { step: 'initialize', name: `testBeforeSending${command}` },
  );
}
