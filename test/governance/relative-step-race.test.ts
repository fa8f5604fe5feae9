/**
 * Two operators each asking for "the next step" of a rollout at 10 % at once: each intends 10 → 25. The loser of the
 * race must be told so (Conflict), never re-plan from 25 and step to 50.
 */
import { OPERATOR, PIPELINE, auditRows, labelRow, useGovernance } from './fixture';
import { ActivationGate } from '../../src/write/gate';
import { syncVersions } from '../admin/fixture';

const fx = useGovernance();

test('two "next step" requests racing from 10 % leave the rollout one step on, the loser told it lost', async () => {
  // GIVEN
  await syncVersions(fx.table, 'greeting', ['one', 'two']);
  await fx.engine.setLabel({ action: 'set-label', promptId: 'greeting', label: 'production', version: 1 }, PIPELINE);
  await fx.engine.startRollout({
    action: 'rollout-start', promptId: 'greeting', label: 'production', version: 2, percentBp: 1000, stepsBp: [2500, 5000], alarms: [],
  } as any, OPERATOR);
  let waiting = 0;
  let release!: () => void;
  const both = new Promise<void>((r) => { release = r; });
  const gate: ActivationGate = { check: async () => { if (++waiting >= 2) release(); await Promise.race([both, new Promise((r) => setTimeout(r, 3_000))]); return { allow: true, reason: 't' }; } };
  const engine = fx.makeEngine({ gate });
  // WHEN
  const results = await Promise.allSettled([
    engine.stepRollout({ action: 'rollout-step', promptId: 'greeting', label: 'production', clientToken: 'alice-1' }, OPERATOR),
    engine.stepRollout({ action: 'rollout-step', promptId: 'greeting', label: 'production', clientToken: 'bob-1' }, PIPELINE),
  ]);
  // THEN
  expect((await labelRow(fx.table, 'greeting', 'production'))?.rollout?.percent_bp).toBe(2500);
  expect((await auditRows(fx.table, 'greeting')).filter((r) => r.action === 'rollout-step')).toHaveLength(1);
  expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
});
