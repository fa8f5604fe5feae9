/**
 * Idempotent moves: a move request carrying a client token writes, in the same transaction as the move and its
 * audit record, a token item (src/write/client-token-item.ts: under the reserved partition `#client-tokens`, keyed
 * by a digest of caller and token, holding a digest of the request and the move's answer). The write is
 * conditioned on no live item for that key, so two racing copies of a request commit at most one move; a retry
 * reads the item first ({@link committedAnswer}) and answers the committed move's result (`replayed: true`) without
 * moving. Items count as live for {@link CLIENT_TOKEN_WINDOW_SECONDS} (`expires_at`, which DynamoDB's TTL also
 * removes when `auditRetention` turns it on).
 */
import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ReleaseError, ReleaseErrorCode } from './errors';
import { fromItem } from '../schema/ddb-codec';
import { CLIENT_TOKEN_WINDOW_SECONDS, type ReleaseAnswer } from '../schema/release-api';
import { ClientTokenAttr, Idempotency, clientTokenKey, requestDigest } from '../write/client-token-item';


/**
 * The answer of the move this token already committed (within the window), or `undefined` when none did. Throws
 * `ClientTokenReused` when the caller used the token for a different request.
 */
export async function committedAnswer(client: DynamoDBClient, tableName: string, i: Idempotency, nowMs: number): Promise<ReleaseAnswer | undefined> {
  const out = await client.send(new GetItemCommand({ TableName: tableName, Key: clientTokenKey(i), ConsistentRead: true }));
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
