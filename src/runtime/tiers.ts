/**
 * The remote tiers of one read: the shared L2 (wire contract v3, src/schema/l2.ts), then the table, then a fill
 * of the L2 so the next reader is spared the table read. Two classes of L2 value: the stream's (written through
 * by the invalidation function, ordered by the stream's token, used only when their table incarnation is the
 * epoch's) and the readers' own fills (trusted only within `maxAgeSeconds` of their table read, stored for the L1
 * bound). The catalog goes through here too (`getItem` of `#catalog`), so a fleet cold start reads it from the L2.
 */
import type { Deadline } from './deadline';
import { PromptCacheL2, withTimeout } from './l2';
import type { Counters } from './stats';
import type { ItemReader, Loaded, TableItemReader, Token } from './store';
import { fromItem, Item } from '../schema/ddb-codec';
import { parseVersionKey } from '../schema/keys';
import {
  compareTokens, decodeFillValue, decodeStreamValue, DynamoJsonItem, encodeFillValue, fromDynamoJson, l2FillKey, l2FillTtlSeconds,
  l2ItemKey, toDynamoJson,
} from '../schema/l2';

export type { Loaded, Token } from './store';

export interface SharedOptions {
  readonly l2: PromptCacheL2 | undefined;
  readonly l2TimeoutMs: number;
  /** Longest wait for the L2's first connection (not counted in `l2TimeoutMs`). */
  readonly l2ConnectTimeoutMs: number;
  /** How long a fill counts as fresh after its table read. */
  readonly maxAgeMs: number;
  /** With `maxAgeMs`, how long a fill is stored (the L1 bound). */
  readonly staleWhileRevalidateMs: number;
  /** The table incarnation of the epoch last read; `undefined` when unknown (then no stream value is used). */
  readonly incarnation?: () => string | undefined;
  /** Resolves when the epoch has been read once (or failed); stream values wait for it (bounded by both L2 timeouts). */
  readonly epochReady?: () => Promise<void>;
}

/**
 * The cache tier in front of the table: wraps the core's `TableItemReader` (it never subclasses a class of the core, so
 * a tier loaded from the reader layer shares the core's error classes: the table's `PromptStoreError` reaches the read
 * path as the core's own).
 */
export class CacheFirstReader implements ItemReader {
  private readonly l2: PromptCacheL2 | undefined;
  /**
   * When this reader's start-up budget ends (`performance.now()`): `undefined` until its first L2 read, 0 once over.
   * See {@link l2CallTimeoutMs}.
   */
  private startupEndsAt: number | undefined;

  private readonly tableName: string;

  constructor(
    private readonly table: TableItemReader,
    private readonly stats: Counters,
    private readonly shared: SharedOptions,
  ) {
    this.l2 = shared.l2;
    this.tableName = table.tableName;
  }

  deadline(): Deadline {
    return this.table.deadline();
  }

  compareTokens(a: Token, b: Token): number {
    return compareTokens(a, b);
  }

  /**
   * The bound on an L2 read made now: `l2TimeoutMs`, or, during the reader's start-up (the first
   * `l2ConnectTimeoutMs`, 1 s by default, from its first L2 read), until the start-up ends. A container's first round
   * trips cost what later ones do not (its first TLS records, the server's first commands on a new connection, the
   * reply parser's first runs), more so on a host where others start beside it: at the defaults, 2–3 of 50 readers
   * starting at once on 2 cores read all their prompts from the table when those round trips had 100 ms each
   * (bench/cache-fleet.bench.ts). After the start-up, a cache that stops answering costs `l2TimeoutMs` per call.
   * The start-up's clock starts at the first read, not at construction: a function initialised long before its
   * first invocation (provisioned concurrency, or a fleet whose containers wait for one another) gets it too.
   */
  l2CallTimeoutMs(): number {
    const timeoutMs = this.shared.l2TimeoutMs;
    const endsAt = this.startupEndsAt;
    if (endsAt === 0) return timeoutMs;
    const now = performance.now();
    if (endsAt === undefined) {
      this.startupEndsAt = now + this.shared.l2ConnectTimeoutMs;
      return Math.max(this.shared.l2ConnectTimeoutMs, timeoutMs);
    }
    if (endsAt - now > timeoutMs) return endsAt - now;
    this.startupEndsAt = 0; // over: one comparison from now on
    return timeoutMs;
  }

  /** An L2 call bounded by {@link l2CallTimeoutMs}. */
  l2Call<T>(call: () => Promise<T>): Promise<T> {
    return withTimeout(call, this.l2CallTimeoutMs());
  }

  get hasL2(): boolean {
    return this.l2 !== undefined;
  }

  get writeThrough(): boolean {
    return this.l2?.writeThrough === true;
  }

  /**
   * L2 (a stream value of the current incarnation, else a fresh fill), else the table (then the L2 is filled in
   * the background); `undefined` when the table has no item.
   */
  async read(promptId: string, sortKey: string, deadline: Deadline, skipL2 = false): Promise<Loaded | undefined> {
    if (this.l2 !== undefined && !skipL2) {
      const shared = await this.readShared(promptId, sortKey);
      if (shared !== undefined) return shared;
    }
    const fetchedAt = Date.now();
    const raw = await this.table.getRawItem(promptId, sortKey, deadline);
    if (raw === undefined) return undefined;
    const item = fromItem(raw);
    if (this.l2 !== undefined) {
      const inc = this.l2.writeThrough === true ? this.shared.incarnation?.() ?? null : null;
      this.fill(promptId, sortKey, raw, fetchedAt, inc);
    }
    return { item, fetchedAt, source: 'table', fromL2: false };
  }

  /**
   * The L2's usable value of an item, `undefined` when it holds none (absent, another incarnation, a fill older
   * than `maxAgeMs`, another format, failing, slow). `streamOnly`: the stream value alone (epoch re-validation).
   */
  async readShared(promptId: string, sortKey: string, count = true, streamOnly = false): Promise<Loaded | undefined> {
    const l2 = this.l2!;
    if (l2.isTripped === true) {
      this.stats.l2Errors += (l2.writeThrough === true ? 1 : 0) + (streamOnly ? 0 : 1);
      return undefined;
    }
    try {
      if (l2.ready !== undefined) await withTimeout(() => l2.ready!(), this.shared.l2ConnectTimeoutMs);
    } catch {
      this.stats.l2Errors++;
      return undefined;
    }
    const get = (key: string) => this.l2Call(() => l2.get(key)).catch(() => {
      this.stats.l2Errors++;
      return undefined;
    });
    const [rawStream, rawFill] = await Promise.all([
      l2.writeThrough === true ? get(l2ItemKey(this.tableName, promptId, sortKey)) : undefined,
      streamOnly ? undefined : get(l2FillKey(this.tableName, promptId, sortKey)),
    ]);
    if (rawStream == null && rawFill == null) {
      if (count) this.stats.l2Misses++;
      return undefined;
    }
    // A value is used only with the epoch's incarnation, waited for only now that the L2 answered with one: a cache that
    // failed (the breaker open) or holds nothing costs no wait for the epoch's first read. That read went out at
    // construction, before these GETs, so an L2 that answered them has answered it too (or is about to).
    const incarnation = l2.writeThrough === true ? await this.incarnation() : undefined;
    const now = Date.now();
    const stream = rawStream === undefined || rawStream === null ? undefined : decodeStreamValue(rawStream, promptId, sortKey);
    if (stream !== undefined && stream.inc === incarnation) {
      const item = stream.item === null ? null : decodeItem(stream.item);
      if (item !== undefined) {
        if (count) this.stats.l2Hits++;
        return { item: item ?? undefined, token: { inc: stream.inc, seq: stream.seq }, fetchedAt: now, source: 'stream', fromL2: true };
      }
    }
    const fill = rawFill === undefined || rawFill === null ? undefined : decodeFillValue(rawFill, promptId, sortKey, now);
    const lineage = l2.writeThrough === true ? incarnation ?? null : null;
    // Only immutable version items are trusted whatever the fill's age; pointers and labels within maxAgeMs.
    if (fill !== undefined && fill.inc === lineage && (parseVersionKey(sortKey) !== undefined || now < fill.fetchedAt + this.shared.maxAgeMs)) {
      const item = decodeItem(fill.item);
      if (item != null) {
        if (count) this.stats.l2Hits++;
        return { item, fetchedAt: fill.fetchedAt, source: 'fill', fromL2: true };
      }
    }
    if (count) this.stats.l2Misses++;
    return undefined;
  }

  /** The incarnation of the epoch, after its first read (bounded as that read is: the first connection, one call). */
  private async incarnation(): Promise<string | undefined> {
    if (this.shared.epochReady !== undefined) {
      await withTimeout(this.shared.epochReady, this.shared.l2ConnectTimeoutMs + this.l2CallTimeoutMs()).catch(() => undefined);
    }
    return this.shared.incarnation?.();
  }

  /** Shares a table read with every other reader for the L1 bound; in the background, failures only counted. */
  private fill(promptId: string, sortKey: string, raw: Item, fetchedAt: number, inc: string | null): void {
    const l2 = this.l2!;
    const ttlSeconds = l2FillTtlSeconds(this.shared.maxAgeMs, this.shared.staleWhileRevalidateMs);
    if (ttlSeconds < 1) return;
    if (l2.isTripped === true) {
      this.stats.l2Errors++;
      return;
    }
    const key = l2FillKey(this.tableName, promptId, sortKey);
    let value: string;
    try {
      value = encodeFillValue({ inc, fetchedAt, item: toDynamoJson(raw) });
    } catch {
      return;
    }
    withTimeout(() => l2.set(key, value, ttlSeconds), this.shared.l2TimeoutMs).catch(() => { this.stats.l2Errors++; });
  }
}

/** An L2 item as a plain object; `undefined` when it holds attribute values no DynamoDB item can (a forged value). */
function decodeItem(item: DynamoJsonItem): Record<string, unknown> | undefined {
  try {
    return fromItem(fromDynamoJson(item) as Item);
  } catch {
    return undefined;
  }
}

