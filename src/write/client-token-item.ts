/**
 * The client-token item of an idempotent move (the release path's; see src/governance/client-token.ts): under the
 * reserved partition {@link CLIENT_TOKENS_ID}, keyed by a digest of (caller, token), holding a digest of the request
 * and the move's answer, live for {@link CLIENT_TOKEN_WINDOW_SECONDS}. Its write is a member of the move's own
 * transaction, conditioned on no live item for that key, so two racing copies of a request commit at most one move.
 */
import { createHash } from 'node:crypto';
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { PARTITION_KEY, SORT_KEY } from '../schema';
import { Item, toItem } from '../schema/ddb-codec';
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

/** The key of the token item of (caller, token). */
export function clientTokenKey(i: Idempotency): Item {
  const digest = createHash('sha256').update(`${i.actor}\u0000${i.clientToken}`, 'utf8').digest('hex');
  return { [PARTITION_KEY]: { S: CLIENT_TOKENS_ID }, [SORT_KEY]: { S: digest } };
}

/** What a token item holds of its request, to tell a retry from another request under the same token. */
export function requestDigest(request: unknown): string {
  return createHash('sha256').update(JSON.stringify(request), 'utf8').digest('hex');
}

/** The transaction member recording that this token's move committed with `answer` (fails if a live one exists). */
export function clientTokenPut(tableName: string, i: Idempotency, answer: ReleaseAnswer, nowMs: number): TransactWriteItem {
  return {
    Put: {
      TableName: tableName,
      Item: {
        ...clientTokenKey(i),
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
