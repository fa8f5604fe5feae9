/**
 * One Bedrock request budget for every sync at once (see docs/adr/0002-one-bedrock-budget.md).
 *
 * Each sync invocation paces its own calls, but a burst of change events starts many invocations, and
 * their rates add up. This limiter keeps the budget in the serving table itself: one small item holding the
 * time of the next free call slot (a token bucket in its "generic cell rate algorithm" form, burst 1), shared
 * by every invocation. Callers of one invocation that wait at the same time take their slots together, `n`
 * slots (`span` = n × interval) in one conditional `UpdateItem`:
 *
 * 1. busy bucket: `next_slot_at = next_slot_at + span` if `now <= next_slot_at <= now + maxQueue` (atomic, so
 *    concurrent takers never collide; the slots start at the value before the increment);
 * 2. idle, new or corrupt bucket: `next_slot_at = now + span` if it is absent, not a number, `< now`, or beyond
 *    any queue the algorithm can build (`> now + maxQueue`, see {@link maxQueueMs}): the slots start now;
 * 3. if the condition failed (the bucket turned busy, or idle, in between), the other one.
 *
 * The taker tries first the case its own last write makes likely, so an invocation alone on the budget makes
 * exactly one write per take, and a take serves every caller waiting: at most one write per Bedrock call.
 * The caller then sleeps until its slot. Starts are spaced `1000 / ratePerSecond` ms apart across all
 * invocations, so no one-second window sees more than `ratePerSecond` (+1 at its closed edge) Bedrock calls.
 */
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { Attr, BUDGET_ID, BUDGET_SORT_KEY, PARTITION_KEY, SORT_KEY } from '../schema';
import { sleep } from './pacer';
import { MAX_CLOCK_SKEW_MS } from './pointer-state';

/** What paces a source's calls: the local token bucket or this shared one. */
export interface CallLimiter {
  /** Resolves when the caller may start one call. */
  acquire(): Promise<void>;
}

/** Attempts at taking slots before giving up (each attempt is one conditional UpdateItem). */
const MAX_TAKE_ATTEMPTS = 10;
/** Milliseconds in a second. */
const MS_PER_SECOND = 1000;
/**
 * Most sync invocations that can plausibly queue on the budget at once: AWS Lambda's default concurrency
 * for a whole account and Region. With {@link MAX_SLOTS_PER_TAKE}, it bounds how far ahead a legitimate
 * queue can reach (see {@link maxQueueMs}).
 */
export const MAX_CONCURRENT_SYNCS = 1000;
/**
 * Most slots one invocation reserves in one write (its callers waiting at that moment; the engine runs
 * `DEFAULT_SYNC_CONCURRENCY` = 8 prompts at once). An invocation has at most one take in flight, so it never
 * holds more slots than this ahead of time.
 */
export const MAX_SLOTS_PER_TAKE = 16;
/**
 * How far the clocks of two hosts may differ and still be believed (the same limit the pointer's
 * `source_read_at` and the claims use). A slot written by a clock ahead by more reads as corrupt and is reset.
 */
export const BUDGET_CLOCK_SKEW_MS = MAX_CLOCK_SKEW_MS;
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

/**
 * Furthest ahead of a caller's clock that `next_slot_at` can legitimately be, for a bucket spaced `intervalMs`:
 * every plausible invocation ({@link MAX_CONCURRENT_SYNCS}) holding a full take ({@link MAX_SLOTS_PER_TAKE}),
 * plus the clock skew allowed between hosts. At the default 5 calls/second that is about 59 minutes: a queue
 * that long is obeyed; anything beyond (a hand edit, a host whose clock is off by more, `1E+125`) is not
 * possible by this algorithm and is reset by the next taker rather than obeyed (it would stop every sync).
 */
export function maxQueueMs(intervalMs: number): number {
  return MAX_CONCURRENT_SYNCS * MAX_SLOTS_PER_TAKE * intervalMs + BUDGET_CLOCK_SKEW_MS;
}

export interface SharedRateLimiterOptions {
  readonly dynamoDBClient: DynamoDBClient;
  readonly tableName: string;
  /** Call starts per second across every sync sharing the table. */
  readonly ratePerSecond: number;
  /** Clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

export class SharedRateLimiter implements CallLimiter {
  /** Milliseconds between two slots. */
  readonly intervalMs: number;
  private readonly maxQueueMs: number;
  private readonly now: () => number;
  /** Slots taken (for reports and tests), including slots given up as too late. */
  taken = 0;
  /** When each call this limiter let through started (epoch ms), oldest first. */
  readonly starts: number[] = [];
  /** Callers waiting for a slot; served together by the next take. */
  private waiting: { resolve: (slot: number) => void; reject: (err: unknown) => void }[] = [];
  private draining = false;
  /** `next_slot_at` as this limiter last wrote it: the bucket is likely still busy while it is ahead. */
  private lastNext: number | undefined;

  constructor(private readonly options: SharedRateLimiterOptions) {
    const { ratePerSecond } = options;
    if (!Number.isFinite(ratePerSecond) || ratePerSecond <= 0) {
      throw new RangeError(`ratePerSecond must be a positive number, got ${ratePerSecond}`);
    }
    this.intervalMs = Math.ceil((MS_PER_SECOND / ratePerSecond) * (1 + SPACING_MARGIN));
    this.maxQueueMs = maxQueueMs(this.intervalMs);
    this.now = options.now ?? Date.now;
  }

  async acquire(): Promise<void> {
    for (let retake = 0; ; retake++) {
      const slot = await this.nextSlot();
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

  /**
   * Reserves `count` consecutive slots (1 to {@link MAX_SLOTS_PER_TAKE}) in one conditional `UpdateItem`
   * (two when its guess of busy or idle was wrong); returns the first slot's start (epoch ms), the others
   * following `intervalMs` apart.
   */
  async take(count: number): Promise<number> {
    if (!Number.isInteger(count) || count < 1 || count > MAX_SLOTS_PER_TAKE) {
      throw new RangeError(`count must be a whole number from 1 to ${MAX_SLOTS_PER_TAKE}, got ${count}`);
    }
    const span = count * this.intervalMs;
    let busyFirst = this.lastNext !== undefined && this.lastNext >= this.now();
    for (let attempt = 0; attempt < MAX_TAKE_ATTEMPTS; attempt++) {
      const now = this.now();
      const far = now + this.maxQueueMs;
      if (busyFirst) {
        // 1. Busy: append to the queue. Bounded above, so a corrupt value is never added to (1E+125 + n
        // overflows DynamoDB's 38 digits: a ValidationException) nor obeyed.
        const next = await this.update('SET #next = #next + :span', '#next >= :now AND #next <= :far', { ':span': span, ':now': now, ':far': far });
        if (next !== undefined) {
          this.lastNext = next;
          return next - span;
        }
      }
      // 2. Idle, new, or corrupt (wrong type, in the past, beyond any legitimate queue): start a new queue.
      const next = now + IDLE_LEAD_MS + span;
      const idle = await this.update('SET #next = :next', 'attribute_not_exists(#next) OR NOT attribute_type(#next, :number) OR #next < :now OR #next > :far', {
        ':next': next, ':now': now, ':far': far, ':number': 'N',
      });
      if (idle !== undefined) {
        this.lastNext = next;
        return now + IDLE_LEAD_MS;
      }
      busyFirst = true;
    }
    throw new Error(`could not take a Bedrock request slot from the shared budget after ${MAX_TAKE_ATTEMPTS} attempts`);
  }

  /** The caller's slot: callers waiting at the same time share one take (one write for all of them). */
  private nextSlot(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      // Let the callers that arrive in the same turn (the engine's workers) join this take.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, MAX_SLOTS_PER_TAKE);
        try {
          const first = await this.take(batch.length);
          batch.forEach((w, i) => w.resolve(first + i * this.intervalMs));
        } catch (err) {
          batch.forEach((w) => w.reject(err));
        }
      }
    } finally {
      this.draining = false;
    }
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
