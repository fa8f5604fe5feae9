/**
 * Seeds serving tables in the wire contract's shape (what the sync writes), so the runtime client is tested
 * against real items in DynamoDB Local without depending on the sync engine.
 */
import { DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  Attr, bloomBuild, bloomParameters, CATALOG_ID, checksum, CURRENT, JsonValue, PromptContent, SCHEMA_VERSION,
  STATUS_ACTIVE, STATUS_DELETED, templateVariables, versionKey,
} from '../../src/schema';
import { toItem } from '../../src/schema/ddb-codec';

/** TEXT prompt content; `input_variables` derived from the template. */
export function textContent(text: string, extra: Partial<PromptContent> = {}): PromptContent {
  return { template_type: 'TEXT', text, input_variables: templateVariables(text), ...extra };
}

/** CHAT prompt content in Bedrock Converse shapes. */
export function chatContent(system: string, userMessages: string[], extra: Partial<PromptContent> = {}): PromptContent {
  const messages: JsonValue[] = userMessages.map((text) => ({ role: 'user', content: [{ text }] }));
  const vars = templateVariables([system, ...userMessages].join('\n'));
  return { template_type: 'CHAT', system: [{ text: system }], messages, input_variables: vars, ...extra };
}

/** The last `revision` written to each pointer (`<table>/<id>`), so every pointer write carries a higher one, as the sync's do. */
const revisions = new Map<string, number>();

function nextRevision(tableName: string, promptId: string): number {
  const revision = (revisions.get(`${tableName}/${promptId}`) ?? 0) + 1;
  revisions.set(`${tableName}/${promptId}`, revision);
  return revision;
}

/**
 * Writes version item `versionNumber` of `promptId` and points CURRENT at it (a full copy) with the next
 * `revision`, as the sync does.
 */
export async function publish(
  client: DynamoDBClient, tableName: string, promptId: string, versionNumber: number, content: PromptContent,
): Promise<void> {
  const meta = {
    [Attr.promptId]: promptId,
    [Attr.versionNumber]: versionNumber,
    [Attr.checksum]: checksum(content),
    [Attr.source]: 'test',
    [Attr.sourceVersion]: String(versionNumber),
    [Attr.syncedAt]: new Date().toISOString(),
    [Attr.schemaVersion]: SCHEMA_VERSION,
  };
  await client.send(new PutItemCommand({
    TableName: tableName,
    Item: toItem({ ...content, ...meta, [Attr.version]: versionKey(versionNumber) }),
  }));
  await client.send(new PutItemCommand({
    TableName: tableName,
    Item: toItem({
      ...content,
      ...meta,
      [Attr.version]: CURRENT,
      [Attr.status]: STATUS_ACTIVE,
      [Attr.latestVersionNumber]: versionNumber,
      [Attr.revision]: nextRevision(tableName, promptId),
    }),
  }));
}

/** Marks a prompt deleted at the source: the pointer becomes a tombstone, history stays. */
export async function markDeleted(client: DynamoDBClient, tableName: string, promptId: string): Promise<void> {
  await client.send(new UpdateItemCommand({
    TableName: tableName,
    Key: toItem({ [Attr.promptId]: promptId, [Attr.version]: CURRENT }),
    UpdateExpression: 'SET #s = :d, #rev = :rev',
    ExpressionAttributeNames: { '#s': Attr.status, '#rev': Attr.revision },
    ExpressionAttributeValues: { ':d': { S: STATUS_DELETED }, ':rev': { N: String(nextRevision(tableName, promptId)) } },
  }));
}

/** Writes the Bloom-filter catalog of `ids` (`#catalog` / `CURRENT`), sized as the sync sizes it. */
export async function writeCatalog(client: DynamoDBClient, tableName: string, ids: readonly string[]): Promise<void> {
  const { bits, hashes } = bloomParameters(ids.length);
  await client.send(new PutItemCommand({
    TableName: tableName,
    Item: toItem({
      [Attr.promptId]: CATALOG_ID,
      [Attr.version]: CURRENT,
      [Attr.bloom]: bloomBuild(ids, bits, hashes),
      [Attr.bloomBits]: bits,
      [Attr.bloomHashes]: hashes,
      [Attr.count]: ids.length,
      [Attr.revision]: nextRevision(tableName, CATALOG_ID),
    }),
  }));
}

/** Records the key (`prompt_id/version`) of every `GetItem` the client sends, and each key of a `BatchGetItem`, in order. */
export function logGetItemKeys(client: DynamoDBClient): string[] {
  const keys: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      type Key = Record<string, { S?: string }>;
      const input = args.input as { Key?: Key; RequestItems?: Record<string, { Keys?: Key[] }> };
      const asked = context.commandName === 'GetItemCommand' && input.Key ? [input.Key]
        : context.commandName === 'BatchGetItemCommand' ? Object.values(input.RequestItems ?? {}).flatMap((r) => r.Keys ?? []) : [];
      for (const key of asked) keys.push(`${key[Attr.promptId]?.S}/${key[Attr.version]?.S}`);
      return next(args);
    },
    { step: 'initialize', name: 'getItemKeyLog' },
  );
  return keys;
}

/**
 * When each table request of `client` was made (`performance.now()`, in order), before it is sent: a read's wait for
 * its L2 is timed without the table's own answer, which a loaded machine stretches. Every request is recorded,
 * background ones too (a catalog refresh; with a store that has `ready`, the tier's two `#warm-up` requests), so a
 * test counts the requests before the read it times. Once per client.
 */
export function tableRequestTimes(client: DynamoDBClient): number[] {
  const times: number[] = [];
  client.middlewareStack.add(
    (next) => async (args) => {
      times.push(performance.now());
      return next(args);
    },
    { step: 'initialize', name: 'tableRequestTimes' },
  );
  return times;
}

/**
 * Fault injection: the next `times` GetItem calls fail with `errorName` before reaching DynamoDB Local
 * (which never throttles); later calls go through to the real store.
 */
export function failNextGetItems(client: DynamoDBClient, times: number, errorName: string): void {
  let left = times;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'GetItemCommand' && left > 0) {
        left--;
        throw Object.assign(new Error(`injected ${errorName}`), { name: errorName, $metadata: { httpStatusCode: 400 } });
      }
      return next(args);
    },
    { step: 'initialize', name: 'injectGetItemFaults' },
  );
}

/** Fakes only `Date` (timers, ticks and the SDK's sockets keep running for real); returns a clock to move. */
export function fakeDate(): { advanceSeconds(seconds: number): void } {
  jest.useFakeTimers({
    doNotFake: [
      'hrtime', 'nextTick', 'performance', 'queueMicrotask', 'setImmediate', 'clearImmediate',
      'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval',
    ],
  });
  return { advanceSeconds: (seconds) => jest.setSystemTime(Date.now() + seconds * 1000) };
}
