/**
 * Coalescing of concurrent syncs of one prompt (see docs/adr/0002-one-bedrock-budget.md).
 *
 * A burst of change events (and a reconcile running beside them) would each fetch the same prompt. Before
 * it reads the source for a prompt, a sync claims it with one conditional `PutItem` on a small claim item
 * (`#sync-claims` / SHA-256 of the id). A claim taken AFTER the change this sync is about means the
 * claimant's source read reflects that change, so this sync makes no source call of its own, but it does not
 * take the claimant's success for granted: it watches the claim (reads only) until the claimant releases it.
 *
 * - released `done`: the change is synced; this sync reports the prompt `coalesced`;
 * - released `failed` (its Bedrock read was throttled, its write failed…), or lapsed without a release (its
 *   sync crashed or timed out): this sync takes the claim over and syncs the prompt itself;
 * - still held when this sync's wait ends: when the claimant has held it for a whole coalescing wait
 *   ({@link DEFAULT_COALESCE_WAIT_MS}), it is presumed dead and this sync takes the claim over and syncs the prompt
 *   itself (a dead claimant's change is recovered, not left until its lease lapses); when the wait ended earlier
 *   (this sync's deadline), a retryable failure, so the trigger retries the change.
 *
 * A claim taken before the change (or lapsed, or failed) is taken over, so no change is ever left to a sync that
 * started too early to see it. Every number on a claim is bounded by the caller's clock: a claim stamped more
 * than {@link CLAIM_CLOCK_SKEW_MS} in the future, a lease longer than {@link MAX_CLAIM_LEASE_MS}, or a claim
 * whose numbers are not numbers cannot be written by this code and is taken over at once (it heals). Releasing
 * is an `UpdateItem` that lapses the claim and records the outcome (no `DeleteItem`: the sync's role never
 * deletes items).
 */
import { createHash, randomUUID } from 'node:crypto';
import { DynamoDBClient, GetItemCommand, PutItemCommand, PutItemCommandInput, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { Attr, CLAIMS_ID, PARTITION_KEY, SORT_KEY } from '../schema';
import { sleep } from './pacer';
import { MAX_CLOCK_SKEW_MS } from './pointer-state';

/**
 * How much later than a change a claim must have been taken to cover it: clocks of Lambda hosts, CloudTrail
 * and the source differ by far less. A claim within this margin of the change does not cover it.
 */
export const CLAIM_CLOCK_MARGIN_MS = 1_000;
/**
 * How far ahead of the caller's clock a claim's `claimed_at` may be and still be believed (the skew limit the
 * whole sync uses). Further ahead, the claim was written by a broken clock or by hand: it is taken over.
 */
export const CLAIM_CLOCK_SKEW_MS = MAX_CLOCK_SKEW_MS;
/**
 * Longest lease a sync takes: Lambda's 15-minute maximum timeout plus the handler's finishing margin. A claim
 * expiring later than this (plus the skew limit) from the caller's now is corrupt and taken over.
 */
export const MAX_CLAIM_LEASE_MS = 16 * 60_000;
/** How long a coalescing sync watches a concurrent claimant before it reports a retryable failure. */
export const DEFAULT_COALESCE_WAIT_MS = 60_000;
/** Re-reads of a watched claim back off from this to {@link MAX_POLL_MS}. */
const FIRST_POLL_MS = 100;
const MAX_POLL_MS = 2_000;
/** Claims taken over in a row at most by one call (each loss means another sync took it in between). */
const MAX_CLAIM_ROUNDS = 20;

/** How a claimant's sync of the prompt ended. */
export type ClaimOutcome = 'done' | 'failed';

export interface SyncClaimsOptions {
  readonly dynamoDBClient: DynamoDBClient;
  readonly tableName: string;
  /**
   * How long a claim holds if its sync dies without releasing it (the Lambda timeout is a good value).
   * At most {@link MAX_CLAIM_LEASE_MS}.
   */
  readonly leaseMs: number;
  /** How long to watch a concurrent claimant before giving up with a retryable failure. @default DEFAULT_COALESCE_WAIT_MS */
  readonly coalesceWaitMs?: number;
  /** Clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

export type ClaimResult =
  /** This sync holds the claim: it reads the source and must {@link SyncClaims.release} it. */
  | { readonly kind: 'claimed'; readonly token: string }
  /** A sync that started after the change synced the prompt: nothing to do. */
  | { readonly kind: 'covered' }
  /** A sync that started after the change still holds the claim: the change is not known to be synced. */
  | { readonly kind: 'unfinished'; readonly reason: string };

export class SyncClaims {
  private readonly now: () => number;
  private readonly coalesceWaitMs: number;

  constructor(private readonly options: SyncClaimsOptions) {
    if (!Number.isFinite(options.leaseMs) || options.leaseMs <= 0 || options.leaseMs > MAX_CLAIM_LEASE_MS) {
      throw new RangeError(`leaseMs must be a positive number of milliseconds up to ${MAX_CLAIM_LEASE_MS}, got ${options.leaseMs}`);
    }
    this.now = options.now ?? Date.now;
    this.coalesceWaitMs = options.coalesceWaitMs ?? DEFAULT_COALESCE_WAIT_MS;
    if (!Number.isFinite(this.coalesceWaitMs) || this.coalesceWaitMs < 0) {
      throw new RangeError(`coalesceWaitMs must be a finite number of milliseconds, at least 0, got ${this.coalesceWaitMs}`);
    }
  }

  /**
   * Claims `id` for a sync about a change made at `changedAtMs` (epoch ms), or watches the claimant that covers
   * it until that one finishes, fails, lapses, or the wait (bounded by `deadline`, epoch ms) ends.
   */
  async claim(id: string, changedAtMs: number, deadline?: number): Promise<ClaimResult> {
    const started = this.now();
    const waitUntil = Math.min(started + this.coalesceWaitMs, deadline ?? Number.POSITIVE_INFINITY);
    let pollMs = FIRST_POLL_MS;
    let takeovers = 0;
    // Bounded: every pass either returns, sleeps towards `waitUntil`, or counts a lost takeover.
    for (;;) {
      const token = await this.tryClaim(id, changedAtMs);
      if (token !== undefined) return { kind: 'claimed', token };
      const holder = await this.read(id);
      if (holder?.outcome === 'done') return { kind: 'covered' };
      if (holder === undefined || holder.outcome !== undefined || holder.expiresAtMs < this.now()) {
        // Released as failed, lapsed, or gone since: take it over (each loss is another sync's win).
        if (++takeovers >= MAX_CLAIM_ROUNDS) {
          return { kind: 'unfinished', reason: `the claim kept changing hands (${MAX_CLAIM_ROUNDS} takeovers lost); retry` };
        }
        continue;
      }
      if (this.now() >= waitUntil) {
        // A claimant that has held the claim for a whole coalescing wait is presumed dead (one prompt's sync takes
        // seconds): its change is recovered here rather than left on the old content until its lease lapses. Two
        // syncs of one prompt are safe (every write is guarded); only the saving of a source call is lost.
        if (holder.token !== undefined && this.now() - holder.claimedAtMs >= this.coalesceWaitMs) {
          const taken = await this.takeOver(id, holder.token);
          if (taken !== undefined) return { kind: 'claimed', token: taken };
        }
        return {
          kind: 'unfinished',
          reason: `left to a concurrent sync that claimed it at ${new Date(holder.claimedAtMs).toISOString()}, after the change, `
            + `and did not finish within ${Math.round((this.now() - started) / 1000)} s; retry`,
        };
      }
      // The last sleep ends at `waitUntil`, so the check above sees the claimant's whole wait however the polls fall.
      await sleep(Math.max(0, Math.min(pollMs, waitUntil - this.now())));
      pollMs = Math.min(MAX_POLL_MS, pollMs * 2);
    }
  }

  /**
   * Lapses the claim if it is still this sync's, recording how the sync ended (a `failed` claim is taken over by
   * the syncs that were waiting on it). Never throws (a claim left behind lapses by itself).
   */
  async release(id: string, token: string, outcome: ClaimOutcome = 'done'): Promise<void> {
    try {
      await this.options.dynamoDBClient.send(new UpdateItemCommand({
        TableName: this.options.tableName,
        Key: claimItemKey(id),
        UpdateExpression: 'SET #exp = :zero, #outcome = :outcome',
        ConditionExpression: '#token = :token',
        ExpressionAttributeNames: { '#exp': Attr.claimExpiresAt, '#token': Attr.claimToken, '#outcome': Attr.claimOutcome },
        ExpressionAttributeValues: { ':zero': { N: '0' }, ':token': { S: token }, ':outcome': { S: outcome } },
      }));
    } catch {
      // Taken over by a later sync, or the table is unreachable: either way the claim lapses on its own.
    }
  }

  /** One conditional PutItem; the new claim's token, or `undefined` when a claim covering the change holds. */
  private tryClaim(id: string, changedAtMs: number): Promise<string | undefined> {
    const now = this.now();
    return this.putClaim(id, {
      ConditionExpression: [
        'attribute_not_exists(#pk)',
        // Corrupt: not numbers, stamped by a clock ahead beyond the skew limit, a lease no sync takes.
        'NOT attribute_type(#at, :number)', 'NOT attribute_type(#exp, :number)', '#at > :latestClaim', '#exp > :latestExpiry',
        // Taken too early to have seen this change.
        '#at <= :coveredBefore',
        // An outcome this code never writes (another type, another word): corrupt too.
        '(attribute_exists(#outcome) AND NOT (#outcome IN (:done, :failed)))',
        // Its sync failed, or died without a release (lapsed).
        '#outcome = :failed', '(attribute_not_exists(#outcome) AND #exp < :nowSeconds)',
      ].join(' OR '),
      ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#exp': Attr.claimExpiresAt, '#at': Attr.claimedAt, '#outcome': Attr.claimOutcome },
      ExpressionAttributeValues: {
        ':number': { S: 'N' },
        ':nowSeconds': { N: String(Math.floor(now / 1000)) },
        ':latestClaim': { N: String(now + CLAIM_CLOCK_SKEW_MS) },
        ':latestExpiry': { N: String(Math.ceil((now + MAX_CLAIM_LEASE_MS + CLAIM_CLOCK_SKEW_MS) / 1000)) },
        ':coveredBefore': { N: String(Math.floor(changedAtMs + CLAIM_CLOCK_MARGIN_MS)) },
        ':failed': { S: 'failed' },
        ':done': { S: 'done' },
      },
    }, now);
  }

  /** Takes over the claim held under `heldToken` (still held by it, unreleased); the new token, or `undefined`. */
  private takeOver(id: string, heldToken: string): Promise<string | undefined> {
    return this.putClaim(id, {
      ConditionExpression: '#token = :held AND attribute_not_exists(#outcome)',
      ExpressionAttributeNames: { '#token': Attr.claimToken, '#outcome': Attr.claimOutcome },
      ExpressionAttributeValues: { ':held': { S: heldToken } },
    });
  }

  /**
   * The one claim write: a new claim item (a fresh token, taken at `now`, lapsing after the lease) put under
   * `condition`; its token, or `undefined` when the condition failed (another sync's claim holds).
   */
  private async putClaim(
    id: string, condition: Pick<PutItemCommandInput, 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'>, now = this.now(),
  ): Promise<string | undefined> {
    const token = randomUUID();
    try {
      await this.options.dynamoDBClient.send(new PutItemCommand({
        TableName: this.options.tableName,
        Item: {
          ...claimItemKey(id),
          [Attr.promptId + '_claimed']: { S: id },
          [Attr.claimedAt]: { N: String(now) },
          [Attr.claimExpiresAt]: { N: String(Math.ceil((now + this.options.leaseMs) / 1000)) },
          [Attr.claimToken]: { S: token },
        },
        ...condition,
      }));
      return token;
    } catch (err) {
      if ((err as { name?: string }).name === 'ConditionalCheckFailedException') return undefined;
      throw err;
    }
  }

  /** The claim as it stands (a strongly consistent read, not a write). */
  private async read(id: string): Promise<{ claimedAtMs: number; expiresAtMs: number; outcome?: string; token?: string } | undefined> {
    const out = await this.options.dynamoDBClient.send(new GetItemCommand({
      TableName: this.options.tableName, Key: claimItemKey(id), ConsistentRead: true,
    }));
    if (!out.Item) return undefined;
    return {
      claimedAtMs: Number(out.Item[Attr.claimedAt]?.N),
      token: out.Item[Attr.claimToken]?.S,
      expiresAtMs: Number(out.Item[Attr.claimExpiresAt]?.N) * 1000,
      // Any outcome but `done` (a string `failed`, or garbage of any type) is one the claim is taken over from.
      outcome: out.Item[Attr.claimOutcome] === undefined ? undefined : out.Item[Attr.claimOutcome].S ?? 'corrupt',
    };
  }
}

function claimItemKey(id: string) {
  return { [PARTITION_KEY]: { S: CLAIMS_ID }, [SORT_KEY]: { S: claimKey(id) } };
}

/** Sort key of a prompt's claim: SHA-256 of the id, so any valid id fits and none can look like `CURRENT`. */
export function claimKey(id: string): string {
  return 'sha256:' + createHash('sha256').update(id, 'utf8').digest('hex');
}
