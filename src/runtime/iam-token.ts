/**
 * The ElastiCache IAM auth token (AWS's documented scheme): a SigV4 query-presigned `GET` of
 * `http://<cache name>/?Action=connect&User=<user id>` (plus `ResourceType=ServerlessCache` for a serverless
 * cache), service `elasticache`, valid 900 s, sent without the scheme as the password. Built with `node:crypto`
 * alone (no SDK signer in the bundle); byte-identical to botocore's `SigV4QueryAuth` (test/runtime/iam-token.test.ts).
 */
import { createHash, createHmac } from 'node:crypto';

/** Lifetime of a token; ElastiCache rejects longer ones. A token only needs to be valid when a connection authenticates. */
export const IAM_TOKEN_EXPIRES_SECONDS = 900;

/** AWS credentials (the Lambda execution role's, from the environment or the SDK's provider chain). */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface IamTokenRequest {
  /** The cache (serverless cache or replication group) name: the host the token is signed for. */
  readonly cacheName: string;
  /** The ElastiCache user id. */
  readonly userId: string;
  readonly region: string;
  readonly credentials: AwsCredentials;
  /** Adds `ResourceType=ServerlessCache`. */
  readonly serverless: boolean;
  /** @default - now */
  readonly date?: Date;
}

/** The token: `<cache name>/?Action=connect&User=…&X-Amz-…&X-Amz-Signature=…`. */
export function iamAuthToken(request: IamTokenRequest): string {
  const { cacheName, userId, region, credentials, serverless } = request;
  const stamp = (request.date ?? new Date()).toISOString().replace(/[-:]|\.\d{3}/g, ''); // 20260101T000000Z
  const day = stamp.slice(0, 8);
  const scope = `${day}/${region}/elasticache/aws4_request`;
  const operation: [string, string][] = [['Action', 'connect'], ['User', userId]];
  if (serverless) operation.push(['ResourceType', 'ServerlessCache']);
  const auth: [string, string][] = [
    ['X-Amz-Algorithm', 'AWS4-HMAC-SHA256'],
    ['X-Amz-Credential', `${credentials.accessKeyId}/${scope}`],
    ['X-Amz-Date', stamp],
    ['X-Amz-Expires', String(IAM_TOKEN_EXPIRES_SECONDS)],
    ['X-Amz-SignedHeaders', 'host'],
  ];
  if (credentials.sessionToken) auth.push(['X-Amz-Security-Token', credentials.sessionToken]);
  const params = [...operation, ...auth];
  const canonicalQuery = params.map(([k, v]) => [encode(k), encode(v)])
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`).join('&');
  const canonicalRequest = ['GET', '/', canonicalQuery, `host:${cacheName}`, '', 'host', sha256Hex('')].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', stamp, scope, sha256Hex(canonicalRequest)].join('\n');
  let key: Buffer = hmac(`AWS4${credentials.secretAccessKey}`, day);
  for (const part of [region, 'elasticache', 'aws4_request']) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(stringToSign).digest('hex');
  const query = params.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&');
  return `${cacheName}/?${query}&X-Amz-Signature=${signature}`;
}

/** RFC 3986 percent-encoding, everything but `A-Z a-z 0-9 - _ . ~` (as SigV4 and botocore encode). */
function encode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}
