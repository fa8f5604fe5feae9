/**
 * The invalidation function fed by DynamoDB Local's stream, for the Python fleet bench (bench/python/bench_fleet.py):
 * the template's event source mapping played by test/support/stream-poller.ts (its filter criteria applied), the
 * invalidation handler (src/invalidation/invalidation.lambda.ts, node-redis) loaded in this process with the
 * environment the construct gives it, writing through to a plain redis-server (no TLS, no ACL user, no cluster).
 *
 *   npx tsx bench/python/stream-relay.ts <dynamodb endpoint> <stream ARN> <table> <cache host:port> [pollMs=250]
 *
 * Prints `{"ready":true}` once the handler is loaded, then one JSON line per delivery
 * (`{"delivered":n,"at":epoch ms}`); polls the stream every `pollMs` (Lambda polls a shard four times a second) until
 * its stdin closes.
 */
import { STREAM_FILTER_PATTERN } from '../../src/invalidation/filter';
import { Env } from '../../src/schema';
import { StreamPoller } from '../../test/support/stream-poller';

async function main(): Promise<void> {
  const [endpoint, streamArn, table, cacheEndpoint, pollMs = '250'] = process.argv.slice(2);
  if (!endpoint || !streamArn || !table || !cacheEndpoint) {
    throw new Error('usage: stream-relay.ts <dynamodb endpoint> <stream ARN> <table> <cache host:port> [pollMs]');
  }
  Object.assign(process.env, {
    [Env.tableName]: table,
    [Env.cacheEndpoint]: cacheEndpoint,
    [Env.cacheTls]: 'false',
    [Env.cacheAuth]: 'none',
    [Env.cacheCluster]: 'false',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
  });
  // Loaded after the environment is set: the handler reads it and opens its connection at module scope.
  const { handler } = await import('../../src/invalidation/invalidation.lambda.js');
  const poller = new StreamPoller({ streamArn, endpoint, filterPattern: STREAM_FILTER_PATTERN, invoke: (e) => handler(e as never) });
  let open = true;
  process.stdin.on('end', () => { open = false; });
  process.stdin.resume();
  console.log(JSON.stringify({ ready: true }));
  while (open) {
    const delivered = await poller.drain().catch((err) => {
      console.error(String(err));
      return 0;
    });
    if (delivered > 0) console.log(JSON.stringify({ delivered, at: Date.now() }));
    await new Promise((resolve) => setTimeout(resolve, Number(pollMs)));
  }
  poller.close();
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
