/**
 * Reads single items from the serving table: one eventually consistent `GetItem` per read, bounded by a
 * deadline, retried with jittered exponential backoff when DynamoDB throttles or the network blips.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BatchGetItemCommand, DescribeEndpointsCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PromptStoreError } from './errors';
import type { Counters } from './stats';
import { fromItem, Item } from '../schema/ddb-codec';
import { PARTITION_KEY, SORT_KEY } from '../schema/keys';
import { isTransient } from '../schema/retryable';

/** First retry waits up to this long (full jitter: a uniform draw from 0 to the cap of the attempt). */
export const BACKOFF_BASE_MS = 50;
/** No retry waits longer than this. */
export const BACKOFF_MAX_MS = 1000;

/**
 * Why a read's deadline aborted it: one value for every deadline (an abort without a reason, as
 * `AbortSignal.timeout` does, builds a `DOMException` each time, and every deadline fires).
 */
const TIMED_OUT = new DOMException('The read did not finish within requestTimeoutMs', 'TimeoutError');
/** Deadlines due within this long of each other are aborted by one timer (so a deadline may fire up to this late). */
const DEADLINE_GRANULARITY_MS = 5;

/**
 * Read deadlines, all of one duration, so they expire in the order they were made: one `AbortController` each and
 * one timer for the whole queue, instead of `AbortSignal.timeout` (a timer, a weak reference and an exception per
 * read: about a fifth of a miss's own CPU). Measured with `performance.now()`, which a test faking `Date` leaves alone.
 */
class Deadlines {
  private queue: { readonly controller: AbortController; readonly at: number }[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly durationMs: number) {}

  next(): AbortSignal {
    const controller = new AbortController();
    this.queue.push({ controller, at: performance.now() + this.durationMs });
    if (this.timer === undefined) this.arm(this.durationMs);
    return controller.signal;
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(() => this.expire(), delayMs);
    this.timer.unref(); // never keeps a process alive, as AbortSignal.timeout does not
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    const queue = this.queue;
    while (this.head < queue.length && queue[this.head].at <= now) queue[this.head++].controller.abort(TIMED_OUT);
    if (this.head === queue.length) {
      this.queue = [];
      this.head = 0;
      return;
    }
    if (this.head > 1024) {
      this.queue = queue.slice(this.head);
      this.head = 0;
    }
    this.arm(Math.max(this.queue[this.head].at - now, DEADLINE_GRANULARITY_MS));
  }
}

export class TableItemReader {
  /** Reads asked for in this tick, by deadline: flushed together. */
  private readonly pending = new Map<AbortSignal, Pending[]>();
  private readonly deadlines: Deadlines;

  constructor(
    private readonly client: DynamoDBClient,
    readonly tableName: string,
    private readonly requestTimeoutMs: number,
    private readonly maxAttempts: number,
    private readonly counters: Counters,
  ) {
    this.deadlines = new Deadlines(requestTimeoutMs);
  }

  /**
   * Resolves the SDK client's credentials and Region now, without a request, so the first table read does not
   * wait for them: a reader the L2 serves makes that first read exactly when the cache fails. Never rejects.
   */
  warmUp(): Promise<void> {
    const config = this.client.config;
    return Promise.all([config.credentials?.(), config.region?.()]).then(() => {
      // The rest of a first request's CPU (the SDK's lazily loaded parts, endpoint resolution, signing, the HTTP
      // handler): one request run through the client's middleware with its signal already aborted, which the HTTP
      // handler rejects before anything is sent. Not a table operation: nothing reaches DynamoDB.
      const aborted = new AbortController();
      aborted.abort();
      return this.client.send(new DescribeEndpointsCommand({}), { abortSignal: aborted.signal });
    }).then(() => undefined, () => undefined);
  }

  /** A deadline `requestTimeoutMs` from now, for one read or several sharing one budget. */
  deadline(): AbortSignal {
    return this.deadlines.next();
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
