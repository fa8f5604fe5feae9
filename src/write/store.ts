/**
 * The serving table's write side: pointer reads, guarded version writes and deletion marks; the catalog's
 * upkeep is in ./catalog.ts (`store.catalog`), the labels' `source_deleted_at` flag in ./label-flags.ts.
 * Every write that moves a pointer is conditioned on the pointer still holding what the caller read
 * (./pointer-guard.ts), so a stale writer gets `'conflict'` (and re-reads) instead of overwriting something newer.
 */
import {
  BatchGetItemCommand,
  BatchGetItemCommandOutput,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  PutItemCommandInput,
  QueryCommand,
  QueryCommandOutput,
  TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  Attr,
  CATALOG_ID,
  CURRENT,
  MAX_VERSION_NUMBER,
  PARTITION_KEY,
  SORT_KEY,
  STATUS_ACTIVE,
  STATUS_DELETED,
  parseVersionKey,
  versionKey,
} from '../schema';
import { ServingCatalog } from './catalog';
import { CONFLICT_BACKOFF, isConflict, pointerKey, sendGuarded, WriteOutcome } from './guarded-write';
import { LabelFlags } from './label-flags';
import { backoffDelay, sleep } from './pacer';
import { nextRevision, pointerGuard, withNextRevision } from './pointer-guard';
import { PointerState, toPointerState } from './pointer-state';
import { consistentScan } from './scan';
import { Item, fromItem } from '../schema/ddb-codec';

export type { PointerState } from './pointer-state';
export type { WriteOutcome } from './guarded-write';

/** BatchGetItem takes at most 100 keys per call. */
const BATCH_GET_MAX_KEYS = 100;
/** Attempts at draining UnprocessedKeys before giving up. */
const BATCH_GET_MAX_ATTEMPTS = 8;
/** Pages of version keys read at most when looking for a free version number below a hand-made 999999. */
const GAP_SEARCH_MAX_PAGES = 10;

/** A version write can also find its version item already there (the pointer's numbers were behind). */
export type VersionWriteOutcome = WriteOutcome | 'version-exists';

const POINTER_STATE_ATTRIBUTES = [
  Attr.promptId, Attr.status, Attr.versionNumber, Attr.latestVersionNumber, Attr.checksum, Attr.sourceChecksum,
  Attr.sourceRevision, Attr.sourceUpdatedAt, Attr.sourceReadAt, Attr.sourceVersion, Attr.revision, Attr.syncedAt,
];
const PROJECTION = {
  ProjectionExpression: POINTER_STATE_ATTRIBUTES.map((_, i) => `#p${i}`).join(', '),
  ExpressionAttributeNames: Object.fromEntries(POINTER_STATE_ATTRIBUTES.map((a, i) => [`#p${i}`, a])),
};

export class ServingTableStore {
  /** The table's `#catalog` item. */
  readonly catalog: ServingCatalog;
  private readonly labelFlags: LabelFlags;

  constructor(private readonly client: DynamoDBClient, readonly tableName: string) {
    this.catalog = new ServingCatalog(client, tableName, () => this.scanActiveIds());
    this.labelFlags = new LabelFlags(client, tableName);
  }

  /** One pointer's state, read strongly consistently (used before retrying a conflicting write). */
  async getPointer(id: string): Promise<PointerState | undefined> {
    const out = await this.client.send(new GetItemCommand({
      TableName: this.tableName, Key: pointerKey(id), ConsistentRead: true, ...PROJECTION,
    }));
    return out.Item ? toPointerState(out.Item) : undefined;
  }

  /** Pointer states of `ids`, 100 keys per BatchGetItem, retrying UnprocessedKeys with jittered backoff. */
  async getPointers(requested: readonly string[]): Promise<Map<string, PointerState>> {
    const ids = [...new Set(requested)]; // BatchGetItem rejects a request that names a key twice
    const found = new Map<string, PointerState>();
    for (let start = 0; start < ids.length; start += BATCH_GET_MAX_KEYS) {
      let keys: Item[] | undefined = ids.slice(start, start + BATCH_GET_MAX_KEYS).map(pointerKey);
      for (let attempt = 0; keys && keys.length > 0; attempt++) {
        if (attempt >= BATCH_GET_MAX_ATTEMPTS) {
          throw new Error(`BatchGetItem left ${keys.length} keys unprocessed after ${BATCH_GET_MAX_ATTEMPTS} attempts`);
        }
        if (attempt > 0) await sleep(backoffDelay(attempt, CONFLICT_BACKOFF));
        const out: BatchGetItemCommandOutput = await this.client.send(new BatchGetItemCommand({
          RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true, ...PROJECTION } },
        }));
        for (const item of out.Responses?.[this.tableName] ?? []) {
          const state = toPointerState(item);
          found.set(state.id, state);
        }
        keys = out.UnprocessedKeys?.[this.tableName]?.Keys;
      }
    }
    return found;
  }

  /**
   * Writes a new immutable version and points `CURRENT` at a full copy of it, in one transaction:
   * the version item must not exist, and the pointer must still be as `expected` (or absent) and not have
   * been written by a sync that read the source after `readAt`.
   */
  writeVersion(
    versionItem: Item, pointerItem: Item, expected: PointerState | undefined, readAt: string, extra: readonly TransactWriteItem[] = [],
  ): Promise<VersionWriteOutcome> {
    return this.transact([this.pointerWrite(pointerItem, expected, readAt), ...extra], versionItem);
  }

  /**
   * The highest version number in the prompt's history (0 if none), from the version items themselves: used
   * when a pointer's numbers cannot be believed. One Query, newest first, reading a handful of keys.
   */
  async highestVersionNumber(id: string): Promise<number> {
    const out = await this.versionKeysNewestFirst(id, { Limit: 10 });
    for (const item of out.Items ?? []) {
      const n = parseVersionKey(item[SORT_KEY]?.S ?? '');
      if (n !== undefined) return n;
    }
    return 0;
  }

  /**
   * For a history whose highest version item is {@link MAX_VERSION_NUMBER} (no successor: a hand-made item,
   * the sync numbers versions one by one): the highest version number below the run of items that ends at
   * the top, so the next version (this + 1, free) continues the history the sync wrote (`undefined` when every
   * number is used, or the gap lies beyond the pages read). Reads keys only, newest first, a bounded number of
   * pages.
   */
  async highestBelowTopRun(id: string): Promise<number | undefined> {
    let above = MAX_VERSION_NUMBER + 1;
    let startKey: Item | undefined;
    for (let page = 0; page < GAP_SEARCH_MAX_PAGES; page++) {
      const out = await this.versionKeysNewestFirst(id, { ExclusiveStartKey: startKey });
      for (const item of out.Items ?? []) {
        const n = parseVersionKey(item[SORT_KEY]?.S ?? '');
        if (n === undefined) continue;
        if (above - n > 1) return n; // `n + 1` is free: continue after the history below the block at the top
        above = n;
      }
      startKey = out.LastEvaluatedKey;
      if (!startKey) return above > 1 ? 0 : undefined;
    }
    return undefined;
  }

  /** One page of the prompt's version keys (`v000001` … `v999999`, sort keys only), newest first, read consistently. */
  private versionKeysNewestFirst(id: string, page: { Limit?: number; ExclusiveStartKey?: Item }): Promise<QueryCommandOutput> {
    return this.client.send(new QueryCommand({
      TableName: this.tableName,
      ConsistentRead: true,
      KeyConditionExpression: '#pk = :id AND #sk BETWEEN :first AND :last',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
      ExpressionAttributeValues: { ':id': { S: id }, ':first': { S: versionKey(1) }, ':last': { S: versionKey(MAX_VERSION_NUMBER) } },
      ProjectionExpression: '#sk',
      ScanIndexForward: false,
      ...page,
    }));
  }

  /**
   * The guarded `Put` of {@link putPointer} as a transaction member, so a caller can write the pointer together
   * with other items (the release path writes its audit record in the same transaction).
   */
  pointerPut(pointerItem: Item, expected: PointerState): TransactWriteItem {
    return this.pointerWrite(pointerItem, expected);
  }

  /** Replaces the pointer (e.g. to activate an older version) if it is still as `expected`. */
  async putPointer(pointerItem: Item, expected: PointerState): Promise<WriteOutcome> {
    return sendGuarded(this.client, new PutItemCommand(this.pointerWrite(pointerItem, expected).Put));
  }

  /**
   * Points `CURRENT` at a copy of an existing version (`pointerItem`), guarded like {@link writeVersion}, in one
   * transaction with `extra` (the audit record): a sync taking a version the activation gate denied before.
   */
  writePointer(pointerItem: Item, expected: PointerState, readAt: string, extra: readonly TransactWriteItem[] = []): Promise<WriteOutcome> {
    return this.transact([this.pointerWrite(pointerItem, expected, readAt), ...extra]);
  }

  /**
   * Writes a new immutable version that the activation gate denied: the version item, and on the pointer only
   * `latest_version_number` (so the next version gets the next number) with its revision, guarded like
   * {@link writeVersion}; `CURRENT` keeps serving what it served. `extra`: the `gate-deny` audit record.
   */
  writeDeniedVersion(
    versionItem: Item, expected: PointerState, readAt: string, versionNumber: number, extra: readonly TransactWriteItem[],
  ): Promise<VersionWriteOutcome> {
    const guard = pointerGuard(expected, readAt);
    const numberOnly: TransactWriteItem = {
      Update: {
        TableName: this.tableName,
        Key: pointerKey(expected.id),
        UpdateExpression: 'SET #lvnNew = :lvnNew, #rev = :nextRev',
        ConditionExpression: guard.ConditionExpression,
        ExpressionAttributeNames: { ...guard.ExpressionAttributeNames, '#lvnNew': Attr.latestVersionNumber, '#rev': Attr.revision },
        ExpressionAttributeValues: { ...guard.ExpressionAttributeValues, ':lvnNew': { N: String(versionNumber) }, ':nextRev': nextRevision(expected) },
      },
    };
    return this.transact([numberOnly, ...extra], versionItem);
  }

  /** The pointer's guarded `Put` (with `readAt`: a sync's, also not written since by a sync that read the source later). */
  private pointerWrite(pointerItem: Item, expected: PointerState | undefined, readAt?: string): { Put: PutItemCommandInput } {
    return { Put: { TableName: this.tableName, Item: withNextRevision(pointerItem, expected), ...pointerGuard(expected, readAt) } };
  }

  /**
   * The one transaction of the store: `members` (a guarded pointer write first, then e.g. the audit record), after
   * `newVersion`'s item when given (conditioned on its absence). `'conflict'` when a condition failed or a
   * concurrent transaction won; `'version-exists'` when only the new version item's condition failed (the
   * pointer's numbers were behind the history).
   */
  private transact(members: readonly TransactWriteItem[]): Promise<WriteOutcome>;
  private transact(members: readonly TransactWriteItem[], newVersion: Item): Promise<VersionWriteOutcome>;
  private async transact(members: readonly TransactWriteItem[], newVersion?: Item): Promise<VersionWriteOutcome> {
    const versionPut: TransactWriteItem[] = newVersion === undefined ? [] : [{
      Put: { TableName: this.tableName, Item: newVersion, ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': PARTITION_KEY } },
    }];
    try {
      await this.client.send(new TransactWriteItemsCommand({ TransactItems: [...versionPut, ...members] }));
      return 'written';
    } catch (err) {
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
      if (newVersion !== undefined && reasons?.[0]?.Code === 'ConditionalCheckFailed' && reasons[1]?.Code !== 'ConditionalCheckFailed') return 'version-exists';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  /**
   * Sets (`at`) or removes (`undefined`) `source_deleted_at` on every label item of the prompt (./label-flags.ts).
   * Returns how many labels were updated.
   */
  markLabelsSourceDeleted(id: string, at: string | undefined): Promise<number> {
    return this.labelFlags.markSourceDeleted(id, at);
  }

  /** Prompts whose labels disagree with their pointer about `source_deleted_at` (./label-flags.ts). */
  labelFlagDrift(): Promise<{ deleted: string[]; active: string[] }> {
    return this.labelFlags.drift();
  }

  /** Records what the source held at `readAt` without touching served content (no new version). */
  async updateSourceMetadata(expected: PointerState, readAt: string, fields: Record<string, string | undefined>): Promise<WriteOutcome> {
    const guard = pointerGuard(expected, readAt);
    const names: Record<string, string> = { ...guard.ExpressionAttributeNames };
    const values: Item = { ...guard.ExpressionAttributeValues, ':nextRev': nextRevision(expected), ':newReadAt': { S: readAt } };
    const sets: string[] = ['#readAt = :newReadAt', '#rev = :nextRev'];
    Object.entries(fields).forEach(([attr, value], i) => {
      if (value === undefined) return;
      names[`#f${i}`] = attr;
      values[`:f${i}`] = { S: value };
      sets.push(`#f${i} = :f${i}`);
    });
    return sendGuarded(this.client, new UpdateItemCommand({
      TableName: this.tableName,
      Key: pointerKey(expected.id),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: guard.ConditionExpression,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    }));
  }

  /**
   * Marks a pointer DELETED (history kept; readers get not-found). `source_read_at` records when the sync
   * saw the prompt gone, so a slower sync still holding its last content cannot bring it back.
   */
  async markDeleted(expected: PointerState, syncedAt: string, readAt: string, extra: readonly TransactWriteItem[] = []): Promise<WriteOutcome> {
    const guard = pointerGuard(expected, readAt);
    const update = {
      TableName: this.tableName,
      Key: pointerKey(expected.id),
      UpdateExpression: 'SET #status = :deleted, #synced = :synced, #readAt = :newReadAt, #rev = :nextRev',
      ConditionExpression: guard.ConditionExpression,
      ExpressionAttributeNames: { ...guard.ExpressionAttributeNames, '#synced': Attr.syncedAt },
      ExpressionAttributeValues: {
        ...guard.ExpressionAttributeValues,
        ':deleted': { S: STATUS_DELETED },
        ':synced': { S: syncedAt },
        ':nextRev': nextRevision(expected),
        ':newReadAt': { S: readAt },
      },
    };
    if (extra.length === 0) return sendGuarded(this.client, new UpdateItemCommand(update));
    return this.transact([{ Update: update }, ...extra]);
  }

  /** Ids of every ACTIVE pointer: a strongly consistent Scan (only run when catalog membership changes). */
  async scanActiveIds(): Promise<string[]> {
    const ids: string[] = [];
    for await (const item of consistentScan(this.client, this.tableName, {
      ProjectionExpression: '#pk',
      FilterExpression: '#sk = :current AND #status = :active',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY, '#status': Attr.status },
      ExpressionAttributeValues: { ':current': { S: CURRENT }, ':active': { S: STATUS_ACTIVE } },
    })) {
      const id = item[PARTITION_KEY]?.S;
      if (id !== undefined && id !== CATALOG_ID) ids.push(id);
    }
    return ids;
  }

  /** A full item (pointer or version) as a plain object, strongly consistent. */
  async getItem(id: string, version: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.client.send(new GetItemCommand({
      TableName: this.tableName, Key: { [PARTITION_KEY]: { S: id }, [SORT_KEY]: { S: version } }, ConsistentRead: true,
    }));
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /**
   * The whole pointer as a plain object together with the state a guarded write conditions on, from one
   * strongly consistent read (an operator's activation copies fields of the pointer it replaces).
   */
  async getPointerItem(id: string): Promise<{ state: PointerState; item: Record<string, unknown> } | undefined> {
    const out = await this.client.send(new GetItemCommand({
      TableName: this.tableName, Key: pointerKey(id), ConsistentRead: true,
    }));
    return out.Item ? { state: toPointerState(out.Item), item: fromItem(out.Item) } : undefined;
  }

}
