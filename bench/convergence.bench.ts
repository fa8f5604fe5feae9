/**
 * The long run of the cache tier's convergence property (test/runtime/convergence.test.ts runs a few cases in
 * the test run): random sequences of syncs, activations, repairs that restart `revision`, hand edits, deletions,
 * removed rows, catalog rewrites, table re-creations, shuffled / duplicated / late / repeated stream deliveries,
 * with reads interleaved, against DynamoDB Local and its stream, a TLS cluster-mode redis-server with the
 * library's ACL users, the real write-through engine, two Node readers and a Python reader. After each case the
 * stream is drained and every reader must serve exactly the table's pointer and catalog.
 *
 *   npx tsx bench/convergence.bench.ts [cases=200] [seed]
 *
 * Prints: cases, operations, failures (with the first failing case's operations), and the time from the drained
 * stream until every reader agreed (p50, p99, max). Readers poll the epoch every 50 ms.
 */
import * as fc from 'fast-check';
import { Case, opArbitrary, World } from '../test/runtime/convergence-harness';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';

async function main(): Promise<void> {
  const cases = Number(process.argv[2] ?? 200);
  const seed = Number(process.argv[3] ?? Math.floor(Math.random() * 2 ** 31));
  const local = await startDynamoDBLocal();
  process.env.DYNAMODB_LOCAL_ENDPOINT = local.endpoint;
  const world = await World.start();
  const watchdog = setTimeout(() => {
    console.error('watchdog: 30 minutes passed, stopping');
    process.exit(2);
  }, 30 * 60_000);
  const times: number[] = [];
  let operations = 0;
  let failures = 0;
  let firstFailure = '';
  const started = performance.now();
  try {
    const samples = fc.sample(fc.array(opArbitrary, { minLength: 1, maxLength: 40 }), { seed, numRuns: cases });
    for (const ops of samples) {
      const c = new Case(world, world.nextTable());
      try {
        await c.create();
        for (const op of ops) await c.apply(op);
        operations += ops.length;
        const result = await c.converge();
        times.push(result.elapsedMs);
        if (!result.ok) {
          failures++;
          console.log(`failed: expected ${JSON.stringify(result.expected)}, served ${JSON.stringify(result.got)}; ${c.trace.join(' ')}`);
          firstFailure ||= `expected ${JSON.stringify(result.expected)}, served ${JSON.stringify(result.got)}\n${c.trace.join('\n')}`;
        }
      } finally {
        await c.close();
      }
    }
  } finally {
    clearTimeout(watchdog);
    await world.stop();
    await local.stop();
  }
  times.sort((a, b) => a - b);
  const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(0);
  console.log(JSON.stringify({
    seed,
    cases,
    operations,
    failures,
    convergenceMs: { p50: q(0.5), p99: q(0.99), max: q(1) },
    wallSeconds: ((performance.now() - started) / 1000).toFixed(1),
  }));
  if (failures > 0) {
    console.log(`first failing case:\n${firstFailure}`);
    process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
