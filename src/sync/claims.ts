/**
 * Coalescing of concurrent syncs of one prompt (see docs/adr/0002-one-bedrock-budget.md).
 *
 * A burst of change events (and a reconcile running beside them) would each fetch the same prompt. Before
 * it reads the source for a prompt, a sync claims it with one conditional `PutItem` on a small claim item
 * (`#sync-claims` / SHA-256 of the id). A live claim taken AFTER the change this sync is about means the
 * claimant's source read already reflects that change: this sync skips the prompt ("coalesced") and makes
 * no source call. A claim taken before the change (or lapsed) is taken over, so no change is ever left to a
 * sync that started too early to see it. Releasing is an `UpdateItem` that lapses the claim (no `DeleteItem`:
 * the sync's role never deletes items).
 */
import { createHash, randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { Attr, CLAIMS_ID, PARTITION_KEY, SORT_KEY } from '../schema';

/**
 * How much later than a change a claim must have been taken to cover it: clocks of Lambda hosts, CloudTrail
 * and the source differ by far less. A claim within this margin of the change does not cover it.
 */
export const CLAIM_CLOCK_MARGIN_MS = 1_000;

export interface SyncClaimsOptions {
  readonly dynamoDBClient: DynamoDBClient;
  readonly tableName: string;
  /** How long a claim holds if its sync dies without releasing it (the Lambda timeout is a good value). */
  readonly leaseMs: number;
  /** Clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

export type ClaimResult = { readonly kind: 'claimed'; readonly token: string } | { readonly kind: 'covered' };

export class SyncClaims {
  private readonly now: () => number;

  constructor(private readonly options: SyncClaimsOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Claims `id` for a sync about a change made at `changedAtMs` (epoch ms). */
  async claim(id: string, changedAtMs: number): Promise<ClaimResult> {
    const now = this.now();
    const token = randomUUID();
    try {
      await this.options.dynamoDBClient.send(new PutItemCommand({
        TableName: this.options.tableName,
        Item: {
          [PARTITION_KEY]: { S: CLAIMS_ID },
          [SORT_KEY]: { S: claimKey(id) },
          [Attr.promptId + '_claimed']: { S: id },
          [Attr.claimedAt]: { N: String(now) },
          [Attr.claimExpiresAt]: { N: String(Math.ceil((now + this.options.leaseMs) / 1000)) },
          [Attr.claimToken]: { S: token },
        },
        // Free, lapsed, or taken too early to have seen this change.
        ConditionExpression: 'attribute_not_exists(#pk) OR #exp < :nowSeconds OR #at <= :coveredBefore',
        ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#exp': Attr.claimExpiresAt, '#at': Attr.claimedAt },
        ExpressionAttributeValues: {
          ':nowSeconds': { N: String(Math.floor(now / 1000)) },
          ':coveredBefore': { N: String(Math.floor(changedAtMs + CLAIM_CLOCK_MARGIN_MS)) },
        },
      }));
      return { kind: 'claimed', token };
    } catch (err) {
      if ((err as { name?: string }).name === 'ConditionalCheckFailedException') return { kind: 'covered' };
      throw err;
    }
  }

  /** Lapses the claim if it is still this sync's. Never throws (a claim left behind lapses by itself). */
  async release(id: string, token: string): Promise<void> {
    try {
      await this.options.dynamoDBClient.send(new UpdateItemCommand({
        TableName: this.options.tableName,
        Key: { [PARTITION_KEY]: { S: CLAIMS_ID }, [SORT_KEY]: { S: claimKey(id) } },
        UpdateExpression: 'SET #exp = :zero',
        ConditionExpression: '#token = :token',
        ExpressionAttributeNames: { '#exp': Attr.claimExpiresAt, '#token': Attr.claimToken },
        ExpressionAttributeValues: { ':zero': { N: '0' }, ':token': { S: token } },
      }));
    } catch {
      // Taken over by a later sync, or the table is unreachable: either way the claim lapses on its own.
    }
  }
}

/** Sort key of a prompt's claim: SHA-256 of the id, so any valid id fits and none can look like `CURRENT`. */
export function claimKey(id: string): string {
  return 'sha256:' + createHash('sha256').update(id, 'utf8').digest('hex');
}
