/**
 * The serving table's write side: pointer reads, guarded version writes, deletion marks and the catalog.
 * Every write that moves a pointer is conditioned on the pointer still holding what the caller read, so a
 * stale writer gets `'conflict'` (and re-reads) instead of overwriting something newer.
 */
import {
  AttributeValue,
  BatchGetItemCommand,
  BatchGetItemCommandOutput,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  QueryCommandOutput,
  ScanCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  Attr,
  CATALOG_ID,
  CURRENT,
  MAX_VERSION_NUMBER,
  PARTITION_KEY,
  SCHEMA_VERSION,
  SORT_KEY,
  STATUS_ACTIVE,
  STATUS_DELETED,
  bloomBuild,
  bloomAdd,
  bloomParameters,
  catalogProblem,
  parseVersionKey,
  versionKey,
} from '../schema';
import { backoffDelay, sleep } from './pacer';
import { PointerState, revisionBase, toPointerState } from './pointer-state';
import { Item, fromItem, toItem } from '../schema/ddb-codec';

export type { PointerState } from './pointer-state';

/** BatchGetItem takes at most 100 keys per call. */
const BATCH_GET_MAX_KEYS = 100;
/** Attempts at draining UnprocessedKeys before giving up. */
const BATCH_GET_MAX_ATTEMPTS = 8;
/** Pages of version keys read at most when looking for a free version number below a hand-made 999999. */
const GAP_SEARCH_MAX_PAGES = 10;
/** Backoff between re-reads of a contended key: short, the other writer is usually done. */
const CONFLICT_BACKOFF = { baseDelayMs: 50, maxDelayMs: 2_000 };

/** The catalog item: a Bloom filter of every ACTIVE prompt id. */
export interface Catalog {
  readonly bloom: Uint8Array;
  readonly bits: number;
  readonly hashes: number;
  readonly count: number;
  /** The write counter to continue from (when absent or broken: a floor above any it had, see `revisionBase`). */
  readonly revision: number;
  /** Why the item cannot be trusted (schema `catalogProblem`); then the other fields mean nothing. */
  readonly problem?: string;
  /** The raw `revision` read, for the write guard (undefined: absent). */
  readonly rawRevision?: AttributeValue;
}

export type WriteOutcome = 'written' | 'conflict';
/** A version write can also find its version item already there (the pointer's numbers were behind). */
export type VersionWriteOutcome = WriteOutcome | 'version-exists';

const POINTER_STATE_ATTRIBUTES = [
  Attr.promptId, Attr.status, Attr.versionNumber, Attr.latestVersionNumber, Attr.checksum, Attr.sourceChecksum,
  Attr.sourceRevision, Attr.sourceUpdatedAt, Attr.sourceReadAt, Attr.sourceVersion, Attr.revision,
];
const PROJECTION = {
  ProjectionExpression: POINTER_STATE_ATTRIBUTES.map((_, i) => `#p${i}`).join(', '),
  ExpressionAttributeNames: Object.fromEntries(POINTER_STATE_ATTRIBUTES.map((a, i) => [`#p${i}`, a])),
};

export class ServingTableStore {
  constructor(private readonly client: DynamoDBClient, readonly tableName: string) {}

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
  async writeVersion(versionItem: Item, pointerItem: Item, expected: PointerState | undefined, readAt: string): Promise<VersionWriteOutcome> {
    try {
      await this.client.send(new TransactWriteItemsCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.tableName,
              Item: versionItem,
              ConditionExpression: 'attribute_not_exists(#pk)',
              ExpressionAttributeNames: { '#pk': PARTITION_KEY },
            },
          },
          { Put: { TableName: this.tableName, Item: withNextRevision(pointerItem, expected), ...pointerGuard(expected, readAt) } },
        ],
      }));
      return 'written';
    } catch (err) {
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
      if (reasons?.[0]?.Code === 'ConditionalCheckFailed' && reasons[1]?.Code !== 'ConditionalCheckFailed') return 'version-exists';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  /**
   * The highest version number in the prompt's history (0 if none), from the version items themselves: used
   * when a pointer's numbers cannot be believed. One Query, newest first, reading a handful of keys.
   */
  async highestVersionNumber(id: string): Promise<number> {
    const out = await this.client.send(new QueryCommand({
      TableName: this.tableName,
      ConsistentRead: true,
      KeyConditionExpression: '#pk = :id AND #sk BETWEEN :first AND :last',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
      ExpressionAttributeValues: { ':id': { S: id }, ':first': { S: versionKey(1) }, ':last': { S: versionKey(MAX_VERSION_NUMBER) } },
      ProjectionExpression: '#sk',
      ScanIndexForward: false,
      Limit: 10,
    }));
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
      const out: QueryCommandOutput = await this.client.send(new QueryCommand({
        TableName: this.tableName,
        ConsistentRead: true,
        KeyConditionExpression: '#pk = :id AND #sk BETWEEN :first AND :last',
        ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
        ExpressionAttributeValues: { ':id': { S: id }, ':first': { S: versionKey(1) }, ':last': { S: versionKey(MAX_VERSION_NUMBER) } },
        ProjectionExpression: '#sk',
        ScanIndexForward: false,
        ExclusiveStartKey: startKey,
      }));
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

  /** Replaces the pointer (e.g. to activate an older version) if it is still as `expected`. */
  async putPointer(pointerItem: Item, expected: PointerState): Promise<WriteOutcome> {
    return this.guarded(new PutItemCommand({
      TableName: this.tableName, Item: withNextRevision(pointerItem, expected), ...pointerGuard(expected),
    }));
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
    return this.guarded(new UpdateItemCommand({
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
  async markDeleted(expected: PointerState, syncedAt: string, readAt: string): Promise<WriteOutcome> {
    const guard = pointerGuard(expected, readAt);
    return this.guarded(new UpdateItemCommand({
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
    }));
  }

  /** Ids of every ACTIVE pointer: a strongly consistent Scan (only run when catalog membership changes). */
  async scanActiveIds(): Promise<string[]> {
    const ids: string[] = [];
    let startKey: Item | undefined;
    do {
      const out = await this.client.send(new ScanCommand({
        TableName: this.tableName,
        ConsistentRead: true,
        ProjectionExpression: '#pk',
        FilterExpression: '#sk = :current AND #status = :active',
        ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY, '#status': Attr.status },
        ExpressionAttributeValues: { ':current': { S: CURRENT }, ':active': { S: STATUS_ACTIVE } },
        ExclusiveStartKey: startKey,
      }));
      for (const item of out.Items ?? []) {
        const id = item[PARTITION_KEY]?.S;
        if (id !== undefined && id !== CATALOG_ID) ids.push(id);
      }
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return ids;
  }

  async getCatalog(): Promise<Catalog | undefined> {
    const out = await this.client.send(new GetItemCommand({
      TableName: this.tableName, Key: pointerKey(CATALOG_ID), ConsistentRead: true,
    }));
    if (!out.Item) return undefined;
    const c = fromItem(out.Item);
    const fields = {
      bloom: c[Attr.bloom], bits: c[Attr.bloomBits], hashes: c[Attr.bloomHashes], count: c[Attr.count], revision: c[Attr.revision],
    };
    const problem = catalogProblem(fields);
    const rawRevision = out.Item[Attr.revision];
    const revision = revisionBase(fields.revision, Date.now());
    return problem === undefined
      ? {
        bloom: fields.bloom as Uint8Array,
        bits: fields.bits as number,
        hashes: fields.hashes as number,
        count: fields.count as number,
        revision,
        rawRevision,
      }
      : { bloom: new Uint8Array(0), bits: 0, hashes: 0, count: -1, revision, rawRevision, problem };
  }

  /**
   * Rebuilds the catalog from the ACTIVE pointers. Optimistic: read revision, scan, write conditioned on
   * the revision, retry on conflict — so concurrent syncs never drop each other's ids. Returns whether the
   * item was rewritten (it is left alone when membership did not change).
   */
  async rebuildCatalog(syncedAt: string, maxAttempts = 10): Promise<boolean> {
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      if (attempt > 0) await sleep(backoffDelay(attempt, CONFLICT_BACKOFF));
      const current = await this.getCatalog();
      const ids = await this.scanActiveIds();
      const { bits, hashes } = catalogSizing(ids.length, current);
      const bloom = bloomBuild(ids, bits, hashes);
      if (current && !current.problem && current.count === ids.length && current.bits === bits && current.hashes === hashes
        && Buffer.from(current.bloom).equals(Buffer.from(bloom))) {
        return false;
      }
      const outcome = await this.putCatalog(current, bloom, bits, hashes, ids.length, syncedAt);
      if (outcome === 'written') return true;
    }
    throw new Error(`catalog rebuild kept conflicting with concurrent syncs after ${maxAttempts} attempts`);
  }

  /**
   * Adds ids that just became ACTIVE to the catalog in place: one strongly consistent read and one guarded
   * write, retried on conflict, so a membership change costs what it adds, not a scan of the table. Falls
   * back to {@link rebuildCatalog} when there is no trustworthy catalog or the filter has no room left for
   * `count + ids` at the target false-positive rate (rebuilds size it for twice the count).
   */
  async addToCatalog(ids: readonly string[], syncedAt: string, maxAttempts = 10): Promise<boolean> {
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      if (attempt > 0) await sleep(backoffDelay(attempt, CONFLICT_BACKOFF));
      const current = await this.getCatalog();
      if (!current || current.problem !== undefined || bloomParameters(current.count + ids.length).bits > current.bits) {
        return this.rebuildCatalog(syncedAt);
      }
      const bloom = bloomAdd(current.bloom, ids, current.bits, current.hashes);
      const outcome = await this.putCatalog(current, bloom, current.bits, current.hashes, current.count + ids.length, syncedAt);
      if (outcome === 'written') return true;
    }
    throw new Error(`catalog update kept conflicting with concurrent syncs after ${maxAttempts} attempts`);
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

  /** Writes the catalog item over `current` (as read), guarded on its raw revision. */
  private putCatalog(
    current: Catalog | undefined, bloom: Uint8Array, bits: number, hashes: number, count: number, syncedAt: string,
  ): Promise<WriteOutcome> {
    return this.guarded(new PutItemCommand({
      TableName: this.tableName,
      Item: toItem({
        [PARTITION_KEY]: CATALOG_ID,
        [SORT_KEY]: CURRENT,
        [Attr.bloom]: bloom,
        [Attr.bloomBits]: bits,
        [Attr.bloomHashes]: hashes,
        [Attr.count]: count,
        [Attr.revision]: (current?.revision ?? 0) + 1,
        [Attr.syncedAt]: syncedAt,
        [Attr.schemaVersion]: SCHEMA_VERSION,
      }),
      ...catalogGuard(current),
    }));
  }

  private async guarded(command: PutItemCommand | UpdateItemCommand): Promise<WriteOutcome> {
    try {
      await this.client.send(command as any);
      return 'written';
    } catch (err) {
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }
}

/**
 * Filter size for a rebuild of `count` ids: room for twice as many at the target false-positive rate, so
 * the next additions go in place. An existing filter's size is kept while it is neither too small for
 * `count` nor more than twice what twice `count` needs (a rebuild that changes nothing writes nothing).
 */
function catalogSizing(count: number, current: Catalog | undefined): { bits: number; hashes: number } {
  const wanted = bloomParameters(2 * count);
  if (current && current.problem === undefined && current.bits >= bloomParameters(count).bits && current.bits <= 2 * wanted.bits) {
    return { bits: current.bits, hashes: current.hashes };
  }
  return wanted;
}

/**
 * Condition of a catalog write: the item is still as read. Guards on the raw `revision` (whatever its type,
 * or its absence), so a hand-broken revision is repaired instead of conflicting forever.
 */
interface Guard {
  readonly ConditionExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues?: Item;
}

function catalogGuard(current: Catalog | undefined): Guard {
  if (!current) return { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': PARTITION_KEY } };
  if (current.rawRevision === undefined) {
    return {
      ConditionExpression: 'attribute_exists(#pk) AND attribute_not_exists(#rev)',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#rev': Attr.revision },
    };
  }
  return { ConditionExpression: '#rev = :rev', ExpressionAttributeNames: { '#rev': Attr.revision }, ExpressionAttributeValues: { ':rev': current.rawRevision } };
}

export function pointerKey(id: string): Item {
  return { [PARTITION_KEY]: { S: id }, [SORT_KEY]: { S: CURRENT } };
}

/**
 * Condition: the pointer is absent (`expected` undefined) or still holds the numbers and status read; with
 * `readAt`, also not written since by a sync that read the source later (`source_read_at` ≤ `readAt`).
 */
function pointerGuard(expected: PointerState | undefined, readAt?: string) {
  const names: Record<string, string> = { '#pk': PARTITION_KEY };
  const values: Item = {};
  let condition = 'attribute_not_exists(#pk)';
  if (expected) {
    delete names['#pk'];
    // The raw values read, whatever their type: a hand-broken attribute must not look like a lost race.
    const g = expected.guard;
    const parts = ([
      ['vn', Attr.versionNumber, g.versionNumber],
      ['lvn', Attr.latestVersionNumber, g.latestVersionNumber],
      ['status', Attr.status, g.status],
      ['rev', Attr.revision, g.revision],
    ] as const).map(([key, attr, value]) => {
      names[`#${key}`] = attr;
      if (value === undefined) return `attribute_not_exists(#${key})`;
      values[`:${key}`] = value;
      return `#${key} = :${key}`;
    });
    condition = parts.join(' AND ');
    if (readAt !== undefined && expected.sourceReadAt === undefined && g.sourceReadAt !== undefined) {
      // A broken `source_read_at` (wrong type, in the future) is replaced, not compared with.
      condition += ' AND #readAt = :oldReadAt';
      names['#readAt'] = Attr.sourceReadAt;
      values[':oldReadAt'] = g.sourceReadAt;
      readAt = undefined;
    }
  }
  if (readAt !== undefined) {
    condition = `(${condition}) AND (attribute_not_exists(#readAt) OR #readAt <= :readAt)`;
    names['#readAt'] = Attr.sourceReadAt;
    values[':readAt'] = { S: readAt };
  }
  return {
    ConditionExpression: condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: Object.keys(values).length > 0 ? values : undefined,
  };
}

/** The `revision` a write replacing `expected` carries: its + 1 (1 for a new pointer). The guard checks `expected`'s. */
function nextRevision(expected: PointerState | undefined): { N: string } {
  return { N: String((expected?.revision ?? 0) + 1) };
}

function withNextRevision(pointerItem: Item, expected: PointerState | undefined): Item {
  return { ...pointerItem, [Attr.revision]: nextRevision(expected) };
}

/** A failed condition or a transaction that lost to a concurrent one: re-read and decide again. */
function isConflict(err: unknown): boolean {
  const name = (err as { name?: string })?.name;
  if (name === 'ConditionalCheckFailedException' || name === 'TransactionConflictException') return true;
  if (name === 'TransactionCanceledException') {
    const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
    return reasons.some((r) => r.Code === 'ConditionalCheckFailed' || r.Code === 'TransactionConflict');
  }
  return false;
}
