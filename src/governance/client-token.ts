/**
 * Idempotent moves: a move request carrying a client token writes, in the same transaction as the move and its
 * audit record, a token item under the reserved partition {@link CLIENT_TOKENS_ID} keyed by a digest of (caller,
 * token), holding a digest of the request and the move's answer. The write is conditioned on no live item for that
 * key, so two racing copies of a request commit at most one move; a retry reads the item first and answers the
 * committed move's result (`replayed: true`) without moving. Items count as live for
 * {@link CLIENT_TOKEN_WINDOW_SECONDS} (`expires_at`, which DynamoDB's TTL also removes when `auditRetention` turns it on).
 */
import { createHash } from 'node:crypto';
import { GetItemCommand, type DynamoDBClient, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { ReleaseError, ReleaseErrorCode } from './errors';
import { PARTITION_KEY, SORT_KEY } from '../schema';
import { Item, fromItem, toItem } from '../schema/ddb-codec';
import { CLIENT_TOKEN_WINDOW_SECONDS, type ReleaseAnswer } from '../schema/release-api';

/** Partition of the client-token items (reserved: starts with `#`, never a prompt id, no `CURRENT` row). */
export const CLIENT_TOKENS_ID = '#client-tokens';

export const ClientTokenAttr = {
  requestDigest: 'request_digest',
  answer: 'answer',
  expiresAt: 'expires_at',
} as const;

/** One move's idempotency: who asked, with which token, for which request. */
export interface Idempotency {
  readonly actor: string;
  readonly clientToken: string;
  /** The request without its token (any JSON). */
  readonly request: unknown;
}

function key(i: Idempotency): Item {
  const digest = createHash('sha256').update(`${i.actor}\u0000${i.clientToken}`, 'utf8').digest('hex');
  return { [PARTITION_KEY]: { S: CLIENT_TOKENS_ID }, [SORT_KEY]: { S: digest } };
}

function requestDigest(request: unknown): string {
  return createHash('sha256').update(JSON.stringify(request), 'utf8').digest('hex');
}

/**
 * The answer of the move this token already committed (within the window), or `undefined` when none did. Throws
 * `ClientTokenReused` when the caller used the token for a different request.
 */
export async function committedAnswer(client: DynamoDBClient, tableName: string, i: Idempotency, nowMs: number): Promise<ReleaseAnswer | undefined> {
  const out = await client.send(new GetItemCommand({ TableName: tableName, Key: key(i), ConsistentRead: true }));
  if (!out.Item) return undefined;
  const item = fromItem(out.Item);
  const expiresAt = item[ClientTokenAttr.expiresAt];
  if (typeof expiresAt !== 'number' || expiresAt * 1000 <= nowMs) return undefined;
  if (item[ClientTokenAttr.requestDigest] !== requestDigest(i.request)) {
    throw new ReleaseError(ReleaseErrorCode.clientTokenReused,
      `client token '${i.clientToken}' was used by this caller for another request within the last ${CLIENT_TOKEN_WINDOW_SECONDS / 3600} hours: `
      + 'send one token per intent (a new one for a new move)', { clientToken: i.clientToken });
  }
  try {
    return { ...JSON.parse(String(item[ClientTokenAttr.answer])) as ReleaseAnswer, replayed: true };
  } catch {
    return undefined;
  }
}

/** The transaction member recording that this token's move committed with `answer` (fails if a live one exists). */
export function clientTokenPut(tableName: string, i: Idempotency, answer: ReleaseAnswer, nowMs: number): TransactWriteItem {
  return {
    Put: {
      TableName: tableName,
      Item: {
        ...key(i),
        ...toItem({
          [ClientTokenAttr.requestDigest]: requestDigest(i.request),
          [ClientTokenAttr.answer]: JSON.stringify(answer),
          [ClientTokenAttr.expiresAt]: Math.floor(nowMs / 1000) + CLIENT_TOKEN_WINDOW_SECONDS,
        }),
      },
      ConditionExpression: 'attribute_not_exists(#pk) OR #exp <= :now',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#exp': ClientTokenAttr.expiresAt },
      ExpressionAttributeValues: { ':now': { N: String(Math.floor(nowMs / 1000)) } },
    },
  };
}
