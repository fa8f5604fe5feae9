/**
 * Cache-tier fleet benchmark: 100 PromptClients (one per simulated Lambda instance, each with its own SDK client
 * and its own cache connection) sharing one redis-server (cluster mode, one node: the serverless stand-in),
 * with and without the tier, side by side in one run against DynamoDB Local started here. The L2 is kept by the
 * BUNDLED invalidation handler fed from DynamoDB Local's stream by a poller polling every 100 ms.
 *
 *   npx projen bundle && npx tsx bench/cache-fleet.bench.ts
 *
 * Prints a markdown report (copied into docs/BENCHMARKS.md). About a minute on 2 cores.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { STREAM_FILTER_PATTERN } from '../src/invalidation/filter';
import { Prompt, PromptClient } from '../src/runtime';
import { ValkeyL2 } from '../src/runtime/valkey';
import { Env } from '../src/schema';
import { createStreamTable } from '../test/invalidation/cache-fixture';
import { publish, textContent, writeCatalog } from '../test/runtime/fixtures';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { startLambda } from '../test/support/lambda-runner';
import { startRedisServer } from '../test/support/redis-server';
import { StreamPoller } from '../test/support/stream-poller';
import { localDynamoDBClient } from '../test/support/table';

const FLEET = 100;
const KEYS = ['#catalog/CURRENT', 'greeting/CURRENT'];
const FETCHES_PER_CLIENT = 1000;

/** Counts table reads per key (GetItem and each key of a BatchGetItem) with timestamps, and sums consumed read units. */
class TableMeter {
  readonly reads: { key: string; at: number }[] = [];
  readUnits = 0;
  attach(client: DynamoDBClient): DynamoDBClient {
    client.middlewareStack.add((next, context) => async (args) => {
      const input = args.input as Record<string, any>;
      const keys = context.commandName === 'GetItemCommand' ? [input.Key]
        : context.commandName === 'BatchGetItemCommand' ? Object.values(input.RequestItems).flatMap((r: any) => r.Keys) : [];
      for (const k of keys) this.reads.push({ key: `${k.prompt_id.S}/${k.version.S}`, at: performance.now() });
      if (keys.length > 0) input.ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const consumed = (out.output as any).ConsumedCapacity;
      for (const c of Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) this.readUnits += c.CapacityUnits ?? 0;
      return out;
    }, { step: 'initialize', name: 'tableMeter' });
    return client;
  }
  perKey(since = 0): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.reads) if (r.at >= since) out[r.key] = (out[r.key] ?? 0) + 1;
    return out;
  }
  /** Most reads of one key inside any 1-second window. */
  peakPerKeyPerSecond(): number {
    let peak = 0;
    for (const key of new Set(this.reads.map((r) => r.key))) {
      const times = this.reads.filter((r) => r.key === key).map((r) => r.at).sort((a, b) => a - b);
      for (let i = 0, j = 0; j < times.length; j++) {
        while (times[j] - times[i] > 1000) i++;
        peak = Math.max(peak, j - i + 1);
      }
    }
    return peak;
  }
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

async function main(): Promise<void> {
  const ddb = await startDynamoDBLocal();
  process.env.DYNAMODB_LOCAL_ENDPOINT = ddb.endpoint;
  const admin = localDynamoDBClient();
  const { table, streamArn } = await createStreamTable(admin);
  const redis = await startRedisServer({ cluster: true });
  const fn = await startLambda('assets/invalidation/invalidation.lambda/index.js', {
    [Env.tableName]: table, [Env.cacheEndpoint]: `127.0.0.1:${redis.port}`, [Env.cacheTls]: 'false', [Env.cacheAuth]: 'none', [Env.cacheCluster]: 'true',
  });
  const stream = new StreamPoller({ streamArn, endpoint: ddb.endpoint, filterPattern: STREAM_FILTER_PATTERN, invoke: (e) => fn.invoke(e) });
  let polling = true;
  const pollLoop = (async () => {
    while (polling) {
      await stream.drain();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  await publish(admin, table, 'greeting', 1, textContent('Hello v1 {{name}}'));
  await writeCatalog(admin, table, ['greeting']);
  await new Promise((resolve) => setTimeout(resolve, 1000)); // the stream writes both through

  const report: string[] = [];
  const adapters: ValkeyL2[] = [];
  const fleet = (meter: TableMeter, withTier: boolean) => Array.from({ length: FLEET }, () => {
    const l2 = withTier ? new ValkeyL2({ host: '127.0.0.1', port: redis.port, tls: false, cluster: true }) : undefined;
    if (l2) adapters.push(l2);
    const dynamoDBClient = meter.attach(localDynamoDBClient({ maxAttempts: 1 }));
    return new PromptClient({ tableName: table, dynamoDBClient, l2, epochPollIntervalMs: 250 });
  });

  // 1. Fleet cold start: every instance initialises and serves its first request at once.
  report.push('| fleet cold start, 100 instances at once | table reads per key | peak reads of one key per second | vs 6,000/s partition limit |', '|---|---|---|---|');
  const fleets: Record<string, PromptClient[]> = {};
  for (const withTier of [false, true]) {
    const meter = new TableMeter();
    const clients = fleet(meter, withTier);
    fleets[String(withTier)] = clients;
    await Promise.all(clients.map(async (c) => { await c.preload(); await c.getPrompt('greeting'); }));
    const per = meter.perKey();
    report.push(`| ${withTier ? 'with the cache tier' : 'L1 only (no tier)'} | ${KEYS.map((k) => `${k.split('/')[0]}: ${per[k] ?? 0}`).join(', ')} | ${meter.peakPerKeyPerSecond()} | ${(meter.peakPerKeyPerSecond() / 6000 * 100).toFixed(1)} % |`);
  }

  // 2. A change at the source: time until every reader of the tiered fleet serves it, and table reads caused.
  const tiered = fleets.true;
  const meter2 = new TableMeter();
  const watchers = fleet(meter2, true);
  await Promise.all(watchers.map(async (c) => { await c.preload(); await c.getPrompt('greeting'); }));
  const since = performance.now();
  await publish(admin, table, 'greeting', 2, textContent('Hello v2 {{name}}'));
  const written = performance.now();
  const seen = await Promise.all(watchers.map(async (c) => {
    for (;;) {
      const p: Prompt = await c.getPrompt('greeting');
      if (p.version === 2) return performance.now() - written;
      if (performance.now() - written > 30_000) return Number.POSITIVE_INFINITY;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }));
  const caused = Object.values(meter2.perKey(since)).reduce((a, b) => a + b, 0);
  report.push('', '| a change at the source, 100 readers (epoch poll 250 ms, stream polled every 100 ms) | p50 | p99 | max | table reads caused |', '|---|---|---|---|---|');
  report.push(`| time from the table write until each reader serves it | ${(pct(seen, 0.5) / 1000).toFixed(2)} s | ${(pct(seen, 0.99) / 1000).toFixed(2)} s | ${(Math.max(...seen) / 1000).toFixed(2)} s | ${caused} |`);
  report.push('| L1 only: bound | — | — | maxAgeSeconds + staleWhileRevalidateSeconds (120 s by default) | 1 per key per instance |');

  // 3. Consumed read units per fetch (ReturnConsumedCapacity), extrapolated to 1M fetches.
  report.push('', `| consumed read units, ${FLEET} instances × ${FETCHES_PER_CLIENT} fetches (${FLEET * FETCHES_PER_CLIENT} fetches, one maxAgeSeconds window) | RCU measured | RCU per 1M fetches (×${1_000_000 / (FLEET * FETCHES_PER_CLIENT)}) |`, '|---|---|---|');
  const rcu = async (label: string, run: (meter: TableMeter) => Promise<void>) => {
    const meter = new TableMeter();
    await run(meter);
    report.push(`| ${label} | ${meter.readUnits} | ${meter.readUnits * 1_000_000 / (FLEET * FETCHES_PER_CLIENT)} |`);
  };
  await rcu('uncached (one GetItem per fetch)', async (meter) => {
    const client = meter.attach(localDynamoDBClient({ maxAttempts: 1 }));
    const { GetItemCommand } = await import('@aws-sdk/client-dynamodb');
    for (let i = 0; i < FLEET * FETCHES_PER_CLIENT / 100; i++) {
      await Promise.all(Array.from({ length: 100 }, () => client.send(new GetItemCommand({ TableName: table, Key: { prompt_id: { S: 'greeting' }, version: { S: 'CURRENT' } } }))));
    }
  });
  for (const withTier of [false, true]) {
    await rcu(withTier ? 'with the cache tier (fresh instances)' : 'L1 only (fresh instances)', async (meter) => {
      const clients = fleet(meter, withTier);
      await Promise.all(clients.map(async (c) => { for (let i = 0; i < FETCHES_PER_CLIENT; i++) await c.getPrompt('greeting'); }));
    });
  }
  console.log(report.join('\n'));
  void tiered;

  polling = false;
  await pollLoop;
  for (const clients of Object.values(fleets)) await Promise.all(clients.map((c) => c.close()));
  await Promise.all(adapters.map((a) => a.close()));
  stream.close();
  await fn.stop();
  await redis.stop();
  await ddb.stop();
  process.exit(0);
}

void main();
