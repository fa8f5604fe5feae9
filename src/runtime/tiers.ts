/**
 * The remote tiers of one read: the shared L2 (wire contract v2, src/schema/l2.ts), then the table, then a
 * fill of the L2 through the ordering rule so a reader never replaces a newer pointer with the one it read.
 * The catalog goes through here too (`getItem` of `#catalog`), so a fleet cold start reads it from the L2.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PromptCacheL2, withTimeout } from './l2';
import type { Counters } from './stats';
import { TableReader } from './store';
import { fromItem, Item } from '../schema/ddb-codec';
import { Attr, CATALOG_ID, CURRENT, SORT_KEY } from '../schema/keys';
import { decodeL2Value, encodeL2Value, fromDynamoJson, L2_VALUE_TTL_SECONDS, l2ItemKey, toDynamoJson } from '../schema/l2';

/** An item and where it came from. */
export interface Loaded {
  /** The item as a plain object (numbers as numbers, binary as `Uint8Array`). */
  readonly item: Record<string, unknown>;
  /** Its `revision` (0 when absent). */
  readonly revision: number;
  /** When it was read from the table (epoch ms, never in the future). */
  readonly fetchedAt: number;
  readonly fromL2: boolean;
}

export interface SharedOptions {
  readonly l2: PromptCacheL2 | undefined;
  readonly l2TimeoutMs: number;
  /** Longest wait for the L2's first connection (not counted in `l2TimeoutMs`). */
  readonly l2ConnectTimeoutMs: number;
  /** How long a value counts as fresh when the L2 is not written through. */
  readonly maxAgeMs: number;
}

export class SharedReader extends TableReader {
  private readonly l2: PromptCacheL2 | undefined;

  constructor(
    client: DynamoDBClient, tableName: string, requestTimeoutMs: number, maxAttempts: number,
    private readonly stats: Counters,
    private readonly shared: SharedOptions,
  ) {
    super(client, tableName, requestTimeoutMs, maxAttempts, stats);
    this.l2 = shared.l2;
  }

  get hasL2(): boolean {
    return this.l2 !== undefined;
  }

  get writeThrough(): boolean {
    return this.l2?.writeThrough === true;
  }

  /** The catalog comes from the L2 when it holds it; every other item from the table alone. */
  override async getItem(promptId: string, sortKey: string, signal = this.deadline()): Promise<Record<string, unknown> | undefined> {
    if (promptId !== CATALOG_ID || this.l2 === undefined) return super.getItem(promptId, sortKey, signal);
    return (await this.read(promptId, sortKey, signal))?.item;
  }

  /** L2, else the table (then the L2 is filled in the background); `undefined` when the table has no item. */
  async read(promptId: string, sortKey: string, signal: AbortSignal, skipL2 = false): Promise<Loaded | undefined> {
    if (this.l2 !== undefined && !skipL2) {
      const shared = await this.readShared(promptId, sortKey);
      if (shared !== undefined) return shared;
    }
    const fetchedAt = Date.now();
    const raw = await this.getRawItem(promptId, sortKey, signal);
    if (raw === undefined) return undefined;
    const item = fromItem(raw);
    const revision = revisionOf(item);
    if (this.l2 !== undefined) this.fill(promptId, sortKey, raw, revision, fetchedAt);
    return { item, revision, fetchedAt, fromL2: false };
  }

  /** The L2's value of an item, `undefined` when it holds none usable (absent, too old, another format, failing, slow). */
  async readShared(promptId: string, sortKey: string, count = true): Promise<Loaded | undefined> {
    const l2 = this.l2!;
    const key = l2ItemKey(this.tableName, promptId, sortKey);
    try {
      if (l2.ready !== undefined) await withTimeout(() => l2.ready!(), this.shared.l2ConnectTimeoutMs);
      const raw = await withTimeout(() => l2.get(key), this.shared.l2TimeoutMs);
      const value = raw === undefined || raw === null ? undefined : decodeL2Value(raw, promptId);
      const usable = value !== undefined && (value.item[SORT_KEY] as { S?: string } | undefined)?.S === sortKey;
      if (usable && (sortKey !== CURRENT || l2.writeThrough || Date.now() < value.fetchedAt + this.shared.maxAgeMs)) {
        const item = fromItem(fromDynamoJson(value.item) as Item);
        if (count) this.stats.l2Hits++;
        return { item, revision: value.revision, fetchedAt: value.fetchedAt, fromL2: true };
      }
      // An unreadable value: the ordering rule's script replaces it on the next fill; a plain store drops it.
      if (raw !== undefined && raw !== null && !usable && l2.putIfNewer === undefined && l2.delete !== undefined) {
        void withTimeout(() => l2.delete!(key), this.shared.l2TimeoutMs).catch(() => { this.stats.l2Errors++; });
      }
      if (count) this.stats.l2Misses++;
    } catch {
      this.stats.l2Errors++;
    }
    return undefined;
  }

  /** Shares a table read with every other reader; in the background, failures only counted. */
  private fill(promptId: string, sortKey: string, raw: Item, revision: number, fetchedAt: number): void {
    const l2 = this.l2!;
    const ttlSeconds = l2.writeThrough || sortKey !== CURRENT
      ? L2_VALUE_TTL_SECONDS
      : Math.ceil((fetchedAt + this.shared.maxAgeMs - Date.now()) / 1000);
    if (ttlSeconds < 1) return;
    const key = l2ItemKey(this.tableName, promptId, sortKey);
    const value = encodeL2Value({ revision, fetchedAt, item: toDynamoJson(raw) });
    withTimeout(
      () => (l2.putIfNewer !== undefined ? l2.putIfNewer(key, revision, value, ttlSeconds) : l2.set(key, value, ttlSeconds)),
      this.shared.l2TimeoutMs,
    ).catch(() => { this.stats.l2Errors++; });
  }
}

/** An item's `revision` attribute: a whole number ≥ 0, else 0. */
export function revisionOf(item: Record<string, unknown>): number {
  const revision = item[Attr.revision];
  return typeof revision === 'number' && Number.isSafeInteger(revision) && revision >= 0 ? revision : 0;
}
