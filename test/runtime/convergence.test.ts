/**
 * The cache converges on the table, property-based: whatever sequence of syncs, activations, repairs that restart `revision`, hand
 * edits (revision removed or lowered, content changed at the same revision), deletions, removed rows, catalog
 * rewrites, table deletions and re-creations under the same name, shuffled, duplicated, late and repeated stream
 * deliveries happens — once the stream is drained, the L2 and every reader (two Node PromptClients and a Python
 * PromptClient, sharing one TLS cluster-mode redis-server with the library's ACL users) serve exactly the table's
 * pointer and catalog. Real parts: DynamoDB Local and its stream, redis-server, the write-through engine.
 *
 * `CONVERGENCE_SEED` and `CONVERGENCE_RUNS` replay or lengthen a run (the seed is printed); bench/convergence.bench.ts
 * is the long run.
 */
import * as fc from 'fast-check';
import { Case, opArbitrary, World } from './convergence-harness';

const SEED = Number(process.env.CONVERGENCE_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.CONVERGENCE_RUNS ?? 12);

let world: World;

beforeAll(async () => {
  world = await World.start();
  // eslint-disable-next-line no-console
  console.log(`convergence: seed ${SEED}, ${RUNS} cases (replay with CONVERGENCE_SEED=${SEED})`);
}, 60_000);

afterAll(async () => {
  await world?.stop();
});

test('once the stream is drained, the L2 and every reader (Node and Python) serve exactly the table\'s pointer and catalog', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArbitrary, { minLength: 1, maxLength: 25 }), async (ops) => {
      const c = new Case(world, world.nextTable());
      try {
        await c.create();
        for (const op of ops) await c.apply(op);
        const result = await c.converge();
        if (!result.ok) {
          throw new Error(`not converged: expected ${JSON.stringify(result.expected)}, readers served ${JSON.stringify(result.got)}\n`
            + `operations:\n${c.trace.join('\n')}`);
        }
      } finally {
        await c.close();
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
}, 600_000);
