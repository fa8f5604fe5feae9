/**
 * The Node side of the labels and rollout conformance fixtures (test/conformance/fixtures/labels.json, rollout.json);
 * python/tests/test_labels.py runs the same cases against the Python client.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promptFromLabelItem } from '../../src/runtime/labels';
import { chooseArm, RolloutState } from '../../src/runtime/rollout';
import { labelNameProblem, parseRollout, rolloutArm, rolloutBucket } from '../../src/schema';

const load = (name: string) => JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'conformance', 'fixtures', name), 'utf8'));
type Case = { name: string; [key: string]: any };
const LABELS = load('labels.json') as { names: Case[]; reads: Case[] };
const ROLLOUT = load('rollout.json') as { vectors: any[]; arms: any[]; shareCounts: any[]; maps: Case[] };
const named = (cases: Case[]) => cases.map((c) => [c.name, c] as [string, Case]);

test.each(named(LABELS.names))('label name: %s', (_name, c) => {
  expect(labelNameProblem(c.label) ?? null).toBe(c.problem);
});

test.each(named(LABELS.reads))('label read: %s', (_name, c) => {
  const served = promptFromLabelItem(c.item, c.label);
  if (c.notFound !== undefined) {
    expect(served).toBeUndefined();
    return;
  }
  let prompt = served!.prompt;
  const parsed = c.item.rollout === undefined ? undefined : parseRollout(c.item.rollout);
  if (parsed?.spec !== undefined) {
    expect(chooseArm(c.item.prompt_id, c.label, undefined, parsed.spec.percentBp)).toBe('A');
    prompt = new RolloutState(parsed.spec, c.label, prompt).armA;
  }
  const e = c.expect;
  expect({ id: prompt.id, version: prompt.version, label: prompt.label, sourceDeleted: prompt.sourceDeleted, rollout: prompt.rollout ?? null })
    .toEqual({ id: e.id, version: e.version, label: e.label, sourceDeleted: e.sourceDeleted, rollout: e.rollout });
  if (e.checksum !== undefined) expect(prompt.checksum).toBe(e.checksum);
  expect(prompt.content).toEqual(e.content);
});

test('rollout vectors: buckets, arms at several shares, share counts over 10000 keys', () => {
  expect(ROLLOUT.vectors.length).toBeGreaterThanOrEqual(50);
  for (const v of ROLLOUT.vectors) expect([v, rolloutBucket(v.promptId, v.label, v.key)]).toEqual([v, v.bucket]);
  for (const a of ROLLOUT.arms) expect([a, rolloutArm(rolloutBucket(a.promptId, a.label, a.key), a.percentBp)]).toEqual([a, a.arm]);
  for (const c of ROLLOUT.shareCounts) {
    const onB = Array.from({ length: 10000 }, (_, k) => rolloutBucket(c.promptId, c.label, `user-${k}`)).filter((b) => b < c.percentBp).length;
    expect(onB).toBe(c.armB);
  }
});

test.each(named(ROLLOUT.maps))('rollout map: %s', (_name, c) => {
  const parsed = parseRollout(c.map);
  if (c.problem !== undefined) expect(parsed).toEqual({ problem: c.problem });
  else expect(parsed).toEqual({ spec: c.spec });
});

test('surface.json: a labeled prompt carries the listed fields, and its rollout the listed ones, in order', () => {
  const surface = load('surface.json').labels as { promptFields: string[]; rolloutFields: string[] };
  const item = { ...LABELS.reads[0].item, rollout: { rollout_id: 'r', candidate_version: 2, candidate_checksum: LABELS.reads[0].item.checksum, percent_bp: 10 } };
  const served = promptFromLabelItem(item, 'production')!.prompt;
  const armA = new RolloutState(parseRollout(item.rollout).spec!, 'production', served).armA;
  for (const field of surface.promptFields) expect(Object.keys(armA)).toContain(field);
  expect(Object.keys(armA.rollout!)).toEqual(surface.rolloutFields);
});
