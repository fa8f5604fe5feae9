/**
 * One Bedrock request budget for every sync at once (see docs/adr/0002-one-bedrock-budget.md).
 *
 * Each sync invocation paces its own calls, but a burst of change events starts many invocations, and
 * their rates add up. This limiter keeps the budget in the serving table itself: one small item holding the
 * time of the next free call slot (a token bucket in its "generic cell rate algorithm" form, burst 1), shared
 * by every invocation. Taking a slot is one `UpdateItem`:
 *
 * 1. busy bucket: `next_slot_at = next_slot_at + interval` if `next_slot_at >= now` (atomic, so concurrent
 *    takers never collide; the slot is the value before the increment);
 * 2. idle (or new) bucket: `next_slot_at = now + interval` if it is absent or `< now` (the slot is now);
 * 3. if both conditions failed (the bucket turned busy in between), back to 1.
 *
 * The caller then sleeps until its slot. Starts are spaced `1000 / ratePerSecond` ms apart across all
 * invocations, so no one-second window sees more than `ratePerSecond` (+1 at its closed edge) Bedrock calls.
 */
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { Attr, BUDGET_ID, BUDGET_SORT_KEY, PARTITION_KEY, SORT_KEY } from '../schema';
import { sleep } from './pacer';

/** What paces a source's calls: the local token bucket or this shared one. */
export interface CallLimiter {
  /** Resolves when the caller may start one call. */
  acquire(): Promise<void>;
}

/** Attempts at taking a slot before giving up (each attempt is one or two UpdateItem calls). */
const MAX_TAKE_ATTEMPTS = 10;
/** Milliseconds in a second. */
const MS_PER_SECOND = 1000;
/**
 * Furthest ahead a slot can legitimately be: every sync has at most a few calls waiting, so even 20 syncs
 * at 1 call/second queue for well under this. Beyond it the item was edited by hand (or by a bad clock) and
 * is reset rather than obeyed (a bucket stuck in the far future would stop every sync).
 */
const MAX_QUEUE_MS = 5 * 60_000;
/**
 * Slots are spaced this fraction wider than `1000 / ratePerSecond` ms, and a call starts at most
 * {@link LATE_FRACTION} of a slot late, so the milliseconds between a caller's slot and its request reaching
 * Bedrock (the table's answer, signing, the connection) never put `ratePerSecond + 1` requests into one
 * second as Bedrock counts them. The price: a sustained rate of `ratePerSecond / 1.1`.
 */
const SPACING_MARGIN = 0.1;
/** An idle bucket's first slot starts this far ahead, so the table's answer arrives before the slot does. */
const IDLE_LEAD_MS = 25;
/** Late slots given up in a row at most. */
const MAX_LATE_RETAKES = 2;
/** How late (as a fraction of the slot interval) a call may still start in its slot. */
const LATE_FRACTION = 0.1;

export interface SharedRateLimiterOptions {
  readonly dynamoDBClient: DynamoDBClient;
  readonly tableName: string;
  /** Call starts per second across every sync sharing the table. */
  readonly ratePerSecond: number;
  /** Clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

export class SharedRateLimiter implements CallLimiter {
  private readonly intervalMs: number;
  private readonly now: () => number;
  /** Slots taken (for reports and tests), including slots given up as too late. */
  taken = 0;
  /** When each call this limiter let through started (epoch ms), oldest first. */
  readonly starts: number[] = [];

  constructor(private readonly options: SharedRateLimiterOptions) {
    const { ratePerSecond } = options;
    if (!Number.isFinite(ratePerSecond) || ratePerSecond <= 0) {
      throw new RangeError(`ratePerSecond must be a positive number, got ${ratePerSecond}`);
    }
    this.intervalMs = Math.ceil((MS_PER_SECOND / ratePerSecond) * (1 + SPACING_MARGIN));
    this.now = options.now ?? Date.now;
  }

  async acquire(): Promise<void> {
    for (let retake = 0; ; retake++) {
      const slot = await this.take();
      this.taken++;
      const wait = slot - this.now();
      if (wait > 0) await sleep(wait);
      // A slot learnt too late (a slow table answer) is given up, not used late: a late start would share a
      // one-second window with the slots after it and could push that second over the budget. Bounded, so a
      // table slower than the slot interval cannot stall the sync (it then starts late, spaced all the same).
      const now = this.now();
      if (now - slot <= this.intervalMs * LATE_FRACTION || retake >= MAX_LATE_RETAKES) {
        this.starts.push(now);
        return;
      }
    }
  }

  /** Reserves the next free slot; returns its start time (epoch ms). */
  private async take(): Promise<number> {
    for (let attempt = 0; attempt < MAX_TAKE_ATTEMPTS; attempt++) {
      const now = this.now();
      const busy = await this.update('SET #next = #next + :interval', '#next >= :now', { ':interval': this.intervalMs, ':now': now });
      if (busy !== undefined && busy - this.intervalMs <= now + MAX_QUEUE_MS) return busy - this.intervalMs;
      const reset = busy !== undefined ? ' OR #next > :far' : '';
      const idle = await this.update('SET #next = :next', `attribute_not_exists(#next) OR NOT attribute_type(#next, :number) OR #next < :now${reset}`, {
        ':next': now + IDLE_LEAD_MS + this.intervalMs, ':now': now, ':number': 'N', ...(busy !== undefined ? { ':far': now + MAX_QUEUE_MS } : {}),
      });
      if (idle !== undefined) return now + IDLE_LEAD_MS;
    }
    throw new Error(`could not take a Bedrock request slot from the shared budget after ${MAX_TAKE_ATTEMPTS} attempts`);
  }

  /** The new `next_slot_at` after a successful update; `undefined` when the condition failed. */
  private async update(expression: string, condition: string, values: Record<string, number | string>): Promise<number | undefined> {
    try {
      const out = await this.options.dynamoDBClient.send(new UpdateItemCommand({
        TableName: this.options.tableName,
        Key: { [PARTITION_KEY]: { S: BUDGET_ID }, [SORT_KEY]: { S: BUDGET_SORT_KEY } },
        UpdateExpression: expression,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#next': Attr.nextSlotAt },
        ExpressionAttributeValues: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, typeof v === 'string' ? { S: v } : { N: String(v) }])),
        ReturnValues: 'UPDATED_NEW',
      }));
      return Number(out.Attributes?.[Attr.nextSlotAt]?.N);
    } catch (err) {
      if ((err as { name?: string }).name === 'ConditionalCheckFailedException') return undefined;
      throw err;
    }
  }
}
