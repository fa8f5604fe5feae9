/**
 * Reads single items from the serving table: one eventually consistent `GetItem` per read, bounded by a
 * deadline, retried with jittered exponential backoff when DynamoDB throttles or the network blips.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BatchGetItemCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PromptStoreError } from './errors';
import type { Counters } from './stats';
import { fromItem, Item } from '../schema/ddb-codec';
import { PARTITION_KEY, SORT_KEY } from '../schema/keys';
import { isTransient } from '../schema/retryable';

/** First retry waits up to this long (full jitter: a uniform draw from 0 to the cap of the attempt). */
export const BACKOFF_BASE_MS = 50;
/** No retry waits longer than this. */
export const BACKOFF_MAX_MS = 1000;

export class TableItemReader {
  /** Reads asked for in this tick, by deadline: flushed together. */
  private readonly pending = new Map<AbortSignal, Pending[]>();

  constructor(
    private readonly client: DynamoDBClient,
    readonly tableName: string,
    private readonly requestTimeoutMs: number,
    private readonly maxAttempts: number,
    private readonly counters: Counters,
  ) {}

  /** A deadline `requestTimeoutMs` from now, for one read or several sharing one budget. */
  deadline(): AbortSignal {
    return AbortSignal.timeout(this.requestTimeoutMs);
  }

  /** The item `{promptId, sortKey}` as a plain object, or `undefined`; throws `PromptStoreError`. */
  async getItem(promptId: string, sortKey: string, signal = this.deadline()): Promise<Record<string, unknown> | undefined> {
    const item = await this.getRawItem(promptId, sortKey, signal);
    return item === undefined ? undefined : fromItem(item);
  }

  /**
   * The item `{promptId, sortKey}` as DynamoDB returned it (attribute values), or `undefined`; throws
   * `PromptStoreError`. Reads asked for in the same tick under the same deadline go out as one `BatchGetItem`
   * (a cold read's pointer and `#catalog`: one round trip, not two); a lone read is one `GetItem`.
   */
  getRawItem(promptId: string, sortKey: string, signal = this.deadline()): Promise<Item | undefined> {
    let batch = this.pending.get(signal);
    if (batch === undefined) {
      batch = [];
      this.pending.set(signal, batch);
      queueMicrotask(() => {
        const requests = this.pending.get(signal)!;
        this.pending.delete(signal);
        void this.flush(requests, signal);
      });
    }
    return new Promise((resolve, reject) => batch!.push({ promptId, sortKey, resolve, reject }));
  }


  private async flush(requests: Pending[], signal: AbortSignal): Promise<void> {
    const keys = new Map<string, Pending[]>();
    for (const r of requests) keys.set(`${r.promptId}\u0000${r.sortKey}`, [...(keys.get(`${r.promptId}\u0000${r.sortKey}`) ?? []), r]);
    try {
      const found = keys.size === 1
        ? await this.getOne(requests[0].promptId, requests[0].sortKey, signal)
        : await this.getMany([...keys.values()].map(([r]) => r), signal);
      for (const [key, waiting] of keys) for (const r of waiting) r.resolve(found.get(key));
    } catch (err) {
      for (const r of requests) r.reject(err);
    }
  }

  private async getOne(promptId: string, sortKey: string, signal: AbortSignal): Promise<Map<string, Item>> {
    const input = {
      TableName: this.tableName,
      Key: { [PARTITION_KEY]: { S: promptId }, [SORT_KEY]: { S: sortKey } },
    };
    const answer = await this.retrying(`GetItem ${promptId}/${sortKey}`, signal,
      () => this.client.send(new GetItemCommand(input), { abortSignal: signal }));
    return new Map(answer.Item === undefined ? [] : [[`${promptId}\u0000${sortKey}`, answer.Item]]);
  }

  /** One `BatchGetItem` of up to 100 keys; unprocessed keys are asked again (with backoff) within the deadline. */
  private async getMany(requests: Pending[], signal: AbortSignal): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    let keys: Item[] = requests.map((r) => ({ [PARTITION_KEY]: { S: r.promptId }, [SORT_KEY]: { S: r.sortKey } }));
    const what = `BatchGetItem ${requests.map((r) => `${r.promptId}/${r.sortKey}`).join(', ')}`;
    while (keys.length > 0) {
      const answer = await this.retrying(what, signal, () => this.client.send(new BatchGetItemCommand({
        RequestItems: { [this.tableName]: { Keys: keys } },
      }), { abortSignal: signal }));
      for (const item of answer.Responses?.[this.tableName] ?? []) {
        found.set(`${item[PARTITION_KEY]?.S}\u0000${item[SORT_KEY]?.S}`, item);
      }
      keys = (answer.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as Item[];
      if (keys.length > 0) {
        this.counters.retries++;
        await sleep(Math.random() * BACKOFF_BASE_MS * 2, undefined, { signal }).catch((err: unknown) => {
          throw this.failure(what, err, signal);
        });
      }
    }
    return found;
  }

  /** Sends with the retry policy: throttling and transient errors retried with jittered backoff, within `signal`. */
  private async retrying<T>(what: string, signal: AbortSignal, send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        signal.throwIfAborted();
        this.counters.storeReads++;
        return await send();
      } catch (err) {
        if (signal.aborted || attempt >= this.maxAttempts || !isRetryable(err)) throw this.failure(what, err, signal);
        this.counters.retries++;
        const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt);
        try {
          await sleep(Math.random() * cap, undefined, { signal });
        } catch {
          throw this.failure(what, err, signal);
        }
      }
    }
  }

  private failure(request: string, cause: unknown, signal: AbortSignal): PromptStoreError {
    if (cause instanceof PromptStoreError) return cause;
    this.counters.storeErrors++;
    const what = `${request} on table ${this.tableName}`;
    const why = signal.aborted
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
