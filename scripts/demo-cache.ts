/**
 * The demo's cache-tier part: when `redis-server` is on the machine, a fleet of 50 readers shares one
 * (cluster-mode, the serverless stand-in), the BUNDLED invalidation handler is fed from DynamoDB Local's
 * stream, a prompt changes, and the demo prints how long until every reader served it and how many table reads
 * that took. Without redis-server it says how to get it. Called from scripts/demo.ts with one line.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { STREAM_FILTER_PATTERN } from '../src/invalidation/filter';
import { cacheTier as tierOver, preload, PromptClient } from '../src/runtime';
import { ValkeyL2 } from '../src/runtime/valkey';
import { Env } from '../src/schema';
import { createStreamTable } from '../test/invalidation/cache-fixture';
import { publish, textContent, writeCatalog } from '../test/runtime/fixtures';
import { CallCounter } from '../test/support/call-counter';
import { startLambda } from '../test/support/lambda-runner';
import { startRedisServer } from '../test/support/redis-server';
import { StreamPoller } from '../test/support/stream-poller';
import { localDynamoDBClient } from '../test/support/table';

const READERS = 50;
const BUNDLE = path.resolve(__dirname, '../assets/invalidation/invalidation.lambda/index.js');

export async function cacheTier(endpoint: string): Promise<void> {
  console.log('\n== Cache tier (ElastiCache for Valkey stand-in)');
  if (!hasRedisServer()) {
    console.log('redis-server is not installed: `sudo apt-get install -y redis-server` (Debian/Ubuntu) or');
    console.log('`brew install redis` (macOS), then run `npm run demo` again to see the cache tier.');
    return;
  }
  if (!fs.existsSync(BUNDLE)) {
    console.log('the invalidation handler is not bundled yet: run `npx projen bundle` first');
    return;
  }
  const admin = localDynamoDBClient({}, endpoint);
  const { table, streamArn } = await createStreamTable(admin);
  const redis = await startRedisServer({ cluster: true });
  const fn = await startLambda(BUNDLE, {
    [Env.tableName]: table, [Env.cacheEndpoint]: `127.0.0.1:${redis.port}`, [Env.cacheTls]: 'false', [Env.cacheAuth]: 'none',
  });
  const stream = new StreamPoller({ streamArn, endpoint, filterPattern: STREAM_FILTER_PATTERN, invoke: (e) => fn.invoke(e) });
  const adapters: ValkeyL2[] = [];
  const readers: PromptClient[] = [];
  try {
    await publish(admin, table, 'welcome', 1, textContent('Welcome, {{name}}!'));
    await writeCatalog(admin, table, ['welcome']);
    await stream.drain();
    console.log(`redis-server on 127.0.0.1:${redis.port} (cluster mode, one node owning all slots); the bundled invalidation handler wrote the pointer and the catalog through`);
    const counter = new CallCounter();
    for (let i = 0; i < READERS; i++) {
      const l2 = new ValkeyL2({ host: '127.0.0.1', port: redis.port, tls: false, cluster: true, connectTimeoutMs: 5000 });
      adapters.push(l2);
      const dynamoDBClient = counter.attach(localDynamoDBClient({ maxAttempts: 1 }, endpoint));
      readers.push(new PromptClient({ tableName: table, dynamoDBClient, l2: tierOver(l2), epochPollIntervalMs: 250, l2ConnectTimeoutMs: 5000 }));
    }
    await Promise.all(readers.map(async (r) => { await preload(r); await r.getPrompt('welcome'); }));
    console.log(`${READERS} readers started cold: ${counter.count('GetItem') + counter.count('BatchGetItem')} table reads (without the tier: ${READERS * 2})`);
    counter.reset();
    await publish(admin, table, 'welcome', 2, textContent('Welcome back, {{name}}!'));
    const written = performance.now();
    await stream.drain();
    const times = await Promise.all(readers.map(async (r) => {
      while ((await r.getPrompt('welcome')).version !== 2) await new Promise((resolve) => setTimeout(resolve, 20));
      return performance.now() - written;
    }));
    console.log(`a change at the source: all ${READERS} readers served v2 within ${(Math.max(...times) / 1000).toFixed(2)} s of the table write, `
      + `with ${counter.count('GetItem') + counter.count('BatchGetItem')} table reads (without the tier: up to 120 s, 1 read per reader)`);
  } finally {
    await Promise.all(readers.map((r) => r.close()));
    await Promise.all(adapters.map((a) => a.close()));
    stream.close();
    await fn.stop();
    await redis.stop();
    admin.destroy();
  }
}

function hasRedisServer(): boolean {
  try {
    execFileSync(process.env.REDIS_SERVER_BIN ?? 'redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
