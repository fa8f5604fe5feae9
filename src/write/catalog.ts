/**
 * The catalog's upkeep: the `#catalog` item, a Bloom filter of every ACTIVE prompt id (wire contract in
 * src/schema/catalog.ts), read, grown in place when ids are added, rebuilt from the table when ids leave or the
 * filter is full or broken. Every write is guarded on the revision read, so concurrent syncs never drop each
 * other's ids.
 */
import { AttributeValue, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  Attr,
  CATALOG_ID,
  CURRENT,
  PARTITION_KEY,
  SCHEMA_VERSION,
  SORT_KEY,
  bloomAdd,
  bloomBuild,
  bloomParameters,
  catalogProblem,
} from '../schema';
import { CONFLICT_BACKOFF, pointerKey, sendGuarded, WriteOutcome } from './guarded-write';
import { backoffDelay, sleep } from './pacer';
import { revisionBase } from './pointer-state';
import { Item, fromItem, toItem } from '../schema/ddb-codec';

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

/** The catalog item of one serving table. */
export class ServingCatalog {
  /**
   * @param activeIds reads the ids of every ACTIVE pointer (a strongly consistent scan), for a rebuild
   */
  constructor(
    private readonly client: DynamoDBClient,
    readonly tableName: string,
    private readonly activeIds: () => Promise<string[]>,
  ) {}

  /** The catalog item, strongly consistent, checked (`problem` says why it cannot be trusted); undefined if absent. */
  async read(): Promise<Catalog | undefined> {
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
  async rebuild(syncedAt: string, maxAttempts = 10): Promise<boolean> {
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      if (attempt > 0) await sleep(backoffDelay(attempt, CONFLICT_BACKOFF));
      const current = await this.read();
      const ids = await this.activeIds();
      const { bits, hashes } = catalogSizing(ids.length, current);
      const bloom = bloomBuild(ids, bits, hashes);
      if (current && !current.problem && current.count === ids.length && current.bits === bits && current.hashes === hashes
        && Buffer.from(current.bloom).equals(Buffer.from(bloom))) {
        return false;
      }
      const outcome = await this.write(current, bloom, bits, hashes, ids.length, syncedAt);
      if (outcome === 'written') return true;
    }
    throw new Error(`catalog rebuild kept conflicting with concurrent syncs after ${maxAttempts} attempts`);
  }

  /**
   * Adds ids that just became ACTIVE to the catalog in place: one strongly consistent read and one guarded
   * write, retried on conflict, so a membership change costs what it adds, not a scan of the table. Falls
   * back to {@link rebuild} when there is no trustworthy catalog or the filter has no room left for
   * `count + ids` at the target false-positive rate (rebuilds size it for twice the count).
   */
  async add(ids: readonly string[], syncedAt: string, maxAttempts = 10): Promise<boolean> {
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      if (attempt > 0) await sleep(backoffDelay(attempt, CONFLICT_BACKOFF));
      const current = await this.read();
      if (!current || current.problem !== undefined || bloomParameters(current.count + ids.length).bits > current.bits) {
        return this.rebuild(syncedAt);
      }
      const bloom = bloomAdd(current.bloom, ids, current.bits, current.hashes);
      const outcome = await this.write(current, bloom, current.bits, current.hashes, current.count + ids.length, syncedAt);
      if (outcome === 'written') return true;
    }
    throw new Error(`catalog update kept conflicting with concurrent syncs after ${maxAttempts} attempts`);
  }

  /** Writes the catalog item over `current` (as read), guarded on its raw revision. */
  private write(
    current: Catalog | undefined, bloom: Uint8Array, bits: number, hashes: number, count: number, syncedAt: string,
  ): Promise<WriteOutcome> {
    return sendGuarded(this.client, new PutItemCommand({
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
