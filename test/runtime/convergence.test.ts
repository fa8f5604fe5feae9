/**
 * Issue 13 item 1, property-based: whatever sequence of syncs, activations, repairs that restart `revision`, hand
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
import { Case, IDS, Op, World } from './convergence-harness';

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

export const opArbitrary: fc.Arbitrary<Op> = (() => {
  const id = fc.constantFrom(...IDS);
  return fc.oneof(
    { weight: 5, arbitrary: id.map((i) => ({ kind: 'sync' as const, id: i })) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('activate' as const), id, back: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 2, arbitrary: id.map((i) => ({ kind: 'repair' as const, id: i })) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('handEdit' as const), id, edit: fc.constantFrom('removeRevision' as const, 'lowerRevision' as const, 'sameRevisionNewContent' as const),
      }),
    },
    { weight: 1, arbitrary: id.map((i) => ({ kind: 'delete' as const, id: i })) },
    { weight: 1, arbitrary: id.map((i) => ({ kind: 'removeRow' as const, id: i })) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('catalog' as const), revision: fc.constantFrom('next' as const, 'restart' as const, 'absent' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('recreate' as const), drainFirst: fc.boolean() }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('deliver' as const),
        order: fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 12 }),
        duplicates: fc.array(fc.nat(50), { maxLength: 4 }),
        batch: fc.integer({ min: 1, max: 10 }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'lateOldStream' as const }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('redeliverOld' as const), picks: fc.array(fc.nat(200), { minLength: 1, maxLength: 5 }) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), reader: fc.integer({ min: 0, max: 2 }), id }) },
  );
})();

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
