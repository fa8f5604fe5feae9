/**
 * The cache tier's real parts for tests: a serving table in DynamoDB Local with its stream on (NEW_IMAGE), a
 * redis-server with TLS, cluster mode (one node, every slot: the serverless stand-in) and the library's two ACL
 * users limited to exactly `l2ReaderAccessRules(table)` / `l2WriterAccessRules(table)`, the BUNDLED invalidation handler in its own
 * process, and a poller standing in for the event source mapping (its filter criteria included).
 */
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { STREAM_FILTER_PATTERN } from '../../src/invalidation/filter';
import { ValkeyWriter } from '../../src/invalidation/valkey-writer';
import { ValkeyConfig } from '../../src/runtime/valkey';
import { Env, l2ReaderAccessRules, l2WriterAccessRules, PARTITION_KEY, SORT_KEY } from '../../src/schema';
import { LambdaProcess, startLambda } from '../support/lambda-runner';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { StreamPoller } from '../support/stream-poller';
import { localEndpoint } from '../support/table';

export const READER = 'prompt-reader';
export const WRITER = 'prompt-invalidator';
export const BUNDLE = path.resolve(__dirname, '../../assets/invalidation/invalidation.lambda/index.js');
export const CACHE_NAME = 'prompts-cache';

/** A serving table with a NEW_IMAGE stream; returns its name and stream ARN. */
export async function createStreamTable(client: DynamoDBClient): Promise<{ table: string; streamArn: string }> {
  const table = `prompts-${randomUUID().slice(0, 8)}`;
  await client.send(new CreateTableCommand({
    TableName: table,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: PARTITION_KEY, AttributeType: 'S' }, { AttributeName: SORT_KEY, AttributeType: 'S' }],
    KeySchema: [{ AttributeName: PARTITION_KEY, KeyType: 'HASH' }, { AttributeName: SORT_KEY, KeyType: 'RANGE' }],
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
  }));
  const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
  return { table, streamArn: Table!.LatestStreamArn! };
}

/**
 * redis-server as the cache: TLS, one-node cluster, users with the library's access rules. The users take any
 * password (`nopass`): redis-server cannot check an IAM token, so the clients sign and send real ones and the
 * ACL still limits keys and commands exactly as ElastiCache's access strings do.
 */
export function startCache(table: string, previous?: RedisServer): Promise<RedisServer> {
  return startRedisServer({
    tls: true,
    cluster: true,
    certsFrom: previous,
    users: [
      { name: READER, password: 'unused', rules: `nopass ${l2ReaderAccessRules(table)}` },
      { name: WRITER, password: 'unused', rules: `nopass ${l2WriterAccessRules(table)}` },
    ],
  });
}

/** The environment the construct gives the invalidation function (IAM auth, TLS, cluster). */
export function handlerEnv(table: string, cache: RedisServer): Record<string, string> {
  return {
    [Env.tableName]: table,
    [Env.cacheEndpoint]: `localhost:${cache.port}`,
    [Env.cacheTls]: 'true',
    [Env.cacheAuth]: 'iam',
    [Env.cacheUser]: WRITER,
    [Env.cacheName]: CACHE_NAME,
    [Env.cacheCluster]: 'true',
    AWS_ACCESS_KEY_ID: 'AKIDLOCAL',
    AWS_SECRET_ACCESS_KEY: 'local-secret',
    AWS_SESSION_TOKEN: 'local-session',
    NODE_EXTRA_CA_CERTS: path.join(cache.certDir!, 'ca.crt'),
  };
}

export function startHandler(table: string, cache: RedisServer): Promise<LambdaProcess> {
  return startLambda(BUNDLE, handlerEnv(table, cache));
}

export function poller(streamArn: string, invoke: LambdaProcess['invoke'], options: { batchSize?: number; maxRetries?: number } = {}): StreamPoller {
  return new StreamPoller({
    streamArn, endpoint: localEndpoint(), filterPattern: STREAM_FILTER_PATTERN, invoke: (e) => invoke(e), ...options,
  });
}

/** The adapter as a reader (or writer) of `cache`: IAM auth with fake credentials, TLS trusting the test CA, cluster mode. */
export function cacheClient(cache: RedisServer, user = READER, extra: Partial<ValkeyConfig> = {}): ValkeyWriter {
  return new ValkeyWriter({
    host: 'localhost',
    port: cache.port,
    tls: true,
    ca: cache.ca,
    cluster: true,
    iam: {
      cacheName: CACHE_NAME,
      userId: user,
      serverless: true,
      region: async () => 'us-east-1',
      credentials: async () => ({ accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret', sessionToken: 'local-session' }),
    },
    connectTimeoutMs: 2000,
    maxReconnects: 2,
    retryAfterMs: 100,
    ...extra,
  });
}
