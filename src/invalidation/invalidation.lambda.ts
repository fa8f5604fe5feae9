/**
 * Invalidation function: DynamoDB stream records of `CURRENT` and label rows (filtered at the source by the event source
 * mapping) → write-through to the L2 cache by the ordering rule (src/schema/l2.ts) → one bump of the table's
 * freshness epoch per batch. Reports partial batch failures. The logic is in ./write-through.ts; this file
 * holds the connection (module scope: opened at init, one IAM token per connection, reused across invocations)
 * and node-redis, bundled into the asset.
 */
import * as redis from 'redis';
import { ValkeyWriter } from './valkey-writer';
import { BatchResult, Log, StreamRecord, writeThrough } from './write-through';
import { cacheConfigFromEnv } from '../runtime/l2-env';
import { useRedisModule } from '../runtime/valkey';
import { Env, requireEnv } from '../schema/env';

// Imported statically so that esbuild bundles node-redis into this function's asset: deployed, the function has
// nothing beside its index.js but the AWS SDK the Node.js runtime provides.
useRedisModule(redis);

const HANDLER = 'invalidation function';

const log: Log = (level, message, fields = {}) => {
  const line = JSON.stringify({ level, message, ...fields });
  if (level === 'INFO') console.log(line);
  else console.error(line);
};

const tableName = requireEnv(Env.tableName, HANDLER);
requireEnv(Env.cacheEndpoint, HANDLER);
const l2 = new ValkeyWriter({
  ...cacheConfigFromEnv(process.env, {
    // The execution role's credentials, as Lambda sets them; one token is signed per connection.
    credentials: async () => ({
      accessKeyId: requireEnv('AWS_ACCESS_KEY_ID', HANDLER),
      secretAccessKey: requireEnv('AWS_SECRET_ACCESS_KEY', HANDLER),
      sessionToken: process.env.AWS_SESSION_TOKEN,
    }),
    region: async () => requireEnv('AWS_REGION', HANDLER),
  })!,
  // Every call well inside the function's timeout; a black-holed connection is replaced, not waited on.
  commandTimeoutMs: 2000,
  onError: (err) => log('WARN', 'L2 connection error', { error: String((err as Error)?.message ?? err) }),
});

export async function handler(
  event: { Records?: StreamRecord[] }, context?: { getRemainingTimeInMillis?: () => number },
): Promise<BatchResult> {
  const records = event.Records ?? [];
  await l2.ready();
  const remaining = context?.getRemainingTimeInMillis;
  const { batchItemFailures } = await writeThrough(records, tableName, l2, log, {
    remainingMs: typeof remaining === 'function' ? () => remaining.call(context) : undefined,
    metric: (line) => console.log(JSON.stringify(line)),
  });
  return { batchItemFailures };
}
