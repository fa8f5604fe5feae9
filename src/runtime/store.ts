/**
 * Reads single items from the serving table: one eventually consistent `GetItem` per read, bounded by a
 * deadline, retried with jittered exponential backoff when DynamoDB throttles or the network blips.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { fromItem } from '../ddb-codec';
import { PromptStoreError } from './errors';
import type { Counters } from './stats';
import { PARTITION_KEY, SORT_KEY } from '../schema/keys';

/** First retry waits up to this long (full jitter: a uniform draw from 0 to the cap of the attempt). */
export const BACKOFF_BASE_MS = 50;
/** No retry waits longer than this. */
export const BACKOFF_MAX_MS = 1000;

/** DynamoDB's throttling errors. */
const THROTTLING_ERRORS: ReadonlySet<string> = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
]);

/** Node.js socket errors worth one more try (a reused keep-alive socket closed by the peer, …). */
const TRANSIENT_NETWORK_ERRORS: ReadonlySet<string> = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN',
]);

export class TableReader {
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
    const input = {
      TableName: this.tableName,
      Key: { [PARTITION_KEY]: { S: promptId }, [SORT_KEY]: { S: sortKey } },
    };
    for (let attempt = 1; ; attempt++) {
      try {
        signal.throwIfAborted();
        this.counters.storeReads++;
        const { Item } = await this.client.send(new GetItemCommand(input), { abortSignal: signal });
        return Item === undefined ? undefined : fromItem(Item);
      } catch (err) {
        if (signal.aborted || attempt >= this.maxAttempts || !isRetryable(err)) throw this.failure(promptId, sortKey, err, signal);
        this.counters.retries++;
        const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt);
        try {
          await sleep(Math.random() * cap, undefined, { signal });
        } catch {
          throw this.failure(promptId, sortKey, err, signal);
        }
      }
    }
  }

  private failure(promptId: string, sortKey: string, cause: unknown, signal: AbortSignal): PromptStoreError {
    this.counters.storeErrors++;
    const what = `GetItem ${promptId}/${sortKey} on table ${this.tableName}`;
    const why = signal.aborted
      ? `timed out after ${this.requestTimeoutMs} ms`
      : `failed: ${(cause as Error)?.name ?? 'Error'}: ${(cause as Error)?.message ?? String(cause)}`;
    return new PromptStoreError(`${what} ${why}`, { cause });
  }
}

/** Throttling, a 5xx, an error the SDK marks retryable, or a transient socket error. */
function isRetryable(err: unknown): boolean {
  const e = err as { name?: string; code?: string; $retryable?: unknown; $metadata?: { httpStatusCode?: number } };
  return THROTTLING_ERRORS.has(e?.name ?? '')
    || e?.$retryable !== undefined
    || (e?.$metadata?.httpStatusCode ?? 0) >= 500
    || TRANSIENT_NETWORK_ERRORS.has(e?.code ?? '');
}
