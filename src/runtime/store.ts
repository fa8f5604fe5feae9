/**
 * Reads single items from the serving table: one eventually consistent `GetItem` per read, bounded by a
 * deadline, retried with jittered exponential backoff when DynamoDB throttles or the network blips.
 */
import { BatchGetItemCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { Deadline, Deadlines, TIMED_OUT } from './deadline';
import { PromptStoreError } from './errors';
import type { Counters } from './stats';
import { fromItem, Item } from '../schema/ddb-codec';
import { PARTITION_KEY, SORT_KEY } from '../schema/keys';
import { isTransient } from '../schema/retryable';

/** A stream value's ordering token (the cache tier's, tiers.ts). */
export interface Token {
  readonly inc: string;
  readonly seq: string;
}

/** An item and where it came from. */
export interface Loaded {
  /** The item as a plain object (numbers as numbers, binary as `Uint8Array`); `undefined`: the stream says the row was removed. */
  readonly item: Record<string, unknown> | undefined;
  /** The stream value's token (stream values only). */
  readonly token?: Token;
  /** When it was read from the table (epoch ms, never in the future); for a stream value, when the L2 was read. */
  readonly fetchedAt: number;
  readonly source: 'stream' | 'fill' | 'table';
  /** Convenience: `source !== 'table'`. */
  readonly fromL2: boolean;
}

/**
 * What the read path and the catalog read items through: the table alone (`TableItemReader`), or the cache tier in
 * front of it (tiers.ts), loaded only when a reader has one.
 */
export interface ItemReader {
  /** A deadline `requestTimeoutMs` from now, for one read or several sharing one budget. */
  deadline(): Deadline;
  /** The item, or `undefined` when the table has none; `skipL2`: past the cache tier. Throws `PromptStoreError`. */
  read(promptId: string, sortKey: string, deadline: Deadline, skipL2?: boolean): Promise<Loaded | undefined>;
  /** The stream value of an item (the epoch's re-validation; cache tier only). */
  readShared?(promptId: string, sortKey: string, count?: boolean, streamOnly?: boolean): Promise<Loaded | undefined>;
  /** Orders two stream tokens (cache tier only: only its copies carry one). */
  compareTokens?(a: Token, b: Token): number;
}

/** First retry waits up to this long (full jitter: a uniform draw from 0 to the cap of the attempt). */
export const BACKOFF_BASE_MS = 50;
/** No retry waits longer than this. */
export const BACKOFF_MAX_MS = 1000;

export class TableItemReader implements ItemReader {
  /** Reads asked for in this tick, by deadline: flushed together. */
  private readonly pending = new Map<Deadline, Pending[]>();
  private readonly deadlines: Deadlines;

  /**
   * The SDK commands this reader sends (`GetItem`, `BatchGetItem`), from the SDK copy of its client: the cache tier
   * (loaded from the reader layer, which may resolve another copy of the SDK) warms their path with them (cache-tier.ts).
   */
  readonly commands = [GetItemCommand, BatchGetItemCommand] as const;

  constructor(
    private readonly client: DynamoDBClient,
    readonly tableName: string,
    private readonly requestTimeoutMs: number,
    private readonly maxAttempts: number,
    private readonly counters: Counters,
  ) {
    this.deadlines = new Deadlines(requestTimeoutMs);
  }

  /** A deadline `requestTimeoutMs` from now, for one read or several sharing one budget. */
  deadline(): Deadline {
    return this.deadlines.next();
  }

  /** The item from the table (a reader without the cache tier). */
  async read(promptId: string, sortKey: string, deadline: Deadline): Promise<Loaded | undefined> {
    const fetchedAt = Date.now();
    const raw = await this.getRawItem(promptId, sortKey, deadline);
    return raw === undefined ? undefined : { item: fromItem(raw), fetchedAt, source: 'table', fromL2: false };
  }

  /**
   * The item `{promptId, sortKey}` as DynamoDB returned it (attribute values), or `undefined`; throws
   * `PromptStoreError`. Reads asked for in the same tick under the same deadline go out as one `BatchGetItem`
   * (a cold read's pointer and `#catalog`: one round trip, not two); a lone read is one `GetItem`.
   */
  getRawItem(promptId: string, sortKey: string, deadline = this.deadline()): Promise<Item | undefined> {
    let batch = this.pending.get(deadline);
    if (batch === undefined) {
      batch = [];
      this.pending.set(deadline, batch);
      queueMicrotask(() => {
        const requests = this.pending.get(deadline)!;
        this.pending.delete(deadline);
        void this.flush(requests, deadline);
      });
    }
    return new Promise((resolve, reject) => batch!.push({ promptId, sortKey, resolve, reject }));
  }

  private async flush(requests: Pending[], deadline: Deadline): Promise<void> {
    if (requests.length === 1) {
      // A lone read (every warm miss): one GetItem, no key map.
      const [r] = requests;
      try {
        r.resolve(await this.getOne(r.promptId, r.sortKey, deadline));
      } catch (err) {
        r.reject(err);
      }
      return;
    }
    const keys = new Map<string, Pending[]>();
    for (const r of requests) {
      const key = `${r.promptId}\u0000${r.sortKey}`;
      const waiting = keys.get(key);
      if (waiting === undefined) keys.set(key, [r]); else waiting.push(r);
    }
    try {
      const found = keys.size === 1
        ? new Map([[keys.keys().next().value!, await this.getOne(requests[0].promptId, requests[0].sortKey, deadline)]])
        : await this.getMany([...keys.values()].map(([r]) => r), deadline);
      for (const [key, waiting] of keys) for (const r of waiting) r.resolve(found.get(key));
    } catch (err) {
      for (const r of requests) r.reject(err);
    }
  }

  private async getOne(promptId: string, sortKey: string, deadline: Deadline): Promise<Item | undefined> {
    const input = {
      TableName: this.tableName,
      Key: { [PARTITION_KEY]: { S: promptId }, [SORT_KEY]: { S: sortKey } },
    };
    const answer = await this.retrying(`GetItem ${promptId}/${sortKey}`, deadline,
      (abortSignal) => this.client.send(new GetItemCommand(input), { abortSignal }));
    return answer.Item;
  }

  /** One `BatchGetItem` of up to 100 keys; unprocessed keys are asked again (with backoff) within the deadline. */
  private async getMany(requests: Pending[], deadline: Deadline): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    let keys: Item[] = requests.map((r) => ({ [PARTITION_KEY]: { S: r.promptId }, [SORT_KEY]: { S: r.sortKey } }));
    const what = `BatchGetItem ${requests.map((r) => `${r.promptId}/${r.sortKey}`).join(', ')}`;
    while (keys.length > 0) {
      const answer = await this.retrying(what, deadline, (abortSignal) => this.client.send(new BatchGetItemCommand({
        RequestItems: { [this.tableName]: { Keys: keys } },
      }), { abortSignal }));
      for (const item of answer.Responses?.[this.tableName] ?? []) {
        found.set(`${item[PARTITION_KEY]?.S}\u0000${item[SORT_KEY]?.S}`, item);
      }
      keys = (answer.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as Item[];
      if (keys.length > 0) {
        this.counters.retries++;
        await deadline.wait(Math.random() * BACKOFF_BASE_MS * 2).catch((err: unknown) => {
          throw this.failure(what, err, deadline);
        });
      }
    }
    return found;
  }

  /** Sends with the retry policy: throttling and transient errors retried with jittered backoff, within `deadline`. */
  private async retrying<T>(what: string, deadline: Deadline, send: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        if (deadline.expired) throw TIMED_OUT;
        this.counters.storeReads++;
        return await send(deadline.requestSignal());
      } catch (err) {
        if (deadline.expired || attempt >= this.maxAttempts || !isRetryable(err)) throw this.failure(what, err, deadline);
        this.counters.retries++;
        const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt);
        try {
          await deadline.wait(Math.random() * cap);
        } catch {
          throw this.failure(what, err, deadline);
        }
      }
    }
  }

  private failure(request: string, cause: unknown, deadline: Deadline): PromptStoreError {
    if (cause instanceof PromptStoreError) return cause;
    this.counters.storeErrors++;
    const what = `${request} on table ${this.tableName}`;
    const why = deadline.expired
      ? `timed out after ${this.requestTimeoutMs} ms`
      : `failed: ${(cause as Error)?.name ?? 'Error'}: ${(cause as Error)?.message ?? String(cause)}`;
    return new PromptStoreError(`${what} ${why}`, { cause });
  }
}

interface Pending {
  readonly promptId: string;
  readonly sortKey: string;
  resolve(item: Item | undefined): void;
  reject(err: unknown): void;
}

/** What the house retries (src/schema/retryable.ts: throttling, a 5xx, no answer), or an error the SDK marks retryable. */
function isRetryable(err: unknown): boolean {
  return isTransient(err) || (err as { $retryable?: unknown } | undefined)?.$retryable !== undefined;
}
