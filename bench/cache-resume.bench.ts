/**
 * One reader, the cache SIGKILLed and restarted: when do its L2 hits resume? A reader in this process (no fleet
 * contention) on a TLS cluster-mode redis-server with the library's ACL users and IAM tokens, `maxAgeSeconds=1` so
 * that reads keep reaching the cache, reading every 100 ms; prints its counters every 500 ms.
 *
 *   npx tsx bench/cache-resume.bench.ts
 */
import { PromptClient } from '../src/runtime';
import { cacheClient, startCache } from '../test/invalidation/cache-fixture';
import { publish, textContent, writeCatalog } from '../test/runtime/fixtures';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

async function main(): Promise<void> {
  const ddb = await startDynamoDBLocal();
  process.env.DYNAMODB_LOCAL_ENDPOINT = ddb.endpoint;
  const admin = localDynamoDBClient();
  const table = await createServingTable(admin, 'resume');
  await publish(admin, table, 'a', 1, textContent('A {{x}}'));
  await writeCatalog(admin, table, ['a']);
  let redis = await startCache(table);
  const l2 = cacheClient(redis, undefined, { maxReconnects: 3, retryAfterMs: 1000, connectTimeoutMs: 1000, onError: () => undefined });
  const client = new PromptClient({ tableName: table, dynamoDBClient: localDynamoDBClient(), l2, maxAgeSeconds: 1 });
  const t0 = Date.now();
  let stop = false;
  let failed = 0;
  const loop = (async () => {
    while (!stop) {
      await client.getPrompt('a').catch(() => { failed++; });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const at = () => ((Date.now() - t0) / 1000).toFixed(1);
  const show = setInterval(() => {
    const s = client.stats();
    console.log(`${at()} s  l2Hits ${s.l2Hits}  l2Errors ${s.l2Errors}  storeReads ${s.storeReads}  failed ${failed}`);
  }, 500);
  await new Promise((r) => setTimeout(r, 3000));
  redis.process.kill('SIGKILL');
  await redis.stop();
  console.log(`${at()} s  cache killed`);
  await new Promise((r) => setTimeout(r, 3000));
  redis = await startCache(table, redis);
  console.log(`${at()} s  cache restarted`);
  await new Promise((r) => setTimeout(r, 6000));
  stop = true;
  await loop;
  clearInterval(show);
  await l2.close();
  await redis.stop();
  admin.destroy();
  await ddb.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
