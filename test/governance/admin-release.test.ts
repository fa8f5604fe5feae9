import { OPERATOR, PIPELINE, auditRows, labelRow, useGovernance } from './fixture';
import { FunctionUrlStandIn, LocalIdentity } from './function-url-stand-in';
import {
  GateDeniedError,
  PromptAdmin,
  PromptAdminError,
  PromptVersionNotFoundError,
  ReleaseForbiddenError,
  ReleaseRefusedError,
} from '../../src/admin';
import { ReleaseClient } from '../../src/admin/release-client';
import { ReleaseScope } from '../../src/governance/principal';
import { serve } from '../../src/governance/release.lambda';
import { readCurrent, syncVersions } from '../admin/fixture';
import { localDynamoDBClient } from '../support/table';

const fx = useGovernance();
const { table } = fx;

const pipelineKey: LocalIdentity = { accessKeyId: 'AKIAPIPELINE0000001', secretAccessKey: 'pipeline-secret', arn: PIPELINE };
const operatorKey: LocalIdentity = { accessKeyId: 'AKIAOPERATOR000001', secretAccessKey: 'operator-secret', arn: OPERATOR };
/** What grantRelease(pipelineRole, { labels: ['production'] }) and grantRelease(operatorRole) record. */
const GRANTS: ReleaseScope[] = [
  { principal: 'arn:aws:iam::111122223333:role/ci/ReleasePipeline', labels: ['production'] },
  { principal: 'arn:aws:iam::111122223333:role/Operator', labels: '*' },
];

let url: FunctionUrlStandIn;
beforeAll(async () => {
  url = await new FunctionUrlStandIn([pipelineKey, operatorKey], (event) => serve(event, fx.engine, GRANTS)).start();
});
afterAll(async () => {
  await url.stop();
});

function adminAs(identity: Pick<LocalIdentity, 'accessKeyId' | 'secretAccessKey'>): PromptAdmin {
  const client = localDynamoDBClient({ credentials: { accessKeyId: identity.accessKeyId, secretAccessKey: identity.secretAccessKey } });
  return new PromptAdmin({ tableName: table.tableName, dynamoDBClient: client, releaseUrl: url.url });
}

describe('the admin API through the release function URL (SigV4, verified caller)', () => {
  test('setLabel is signed, verified and audited with the caller\'s IAM principal', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    // WHEN
    const result = await adminAs(pipelineKey).setLabel('greeting', 'production', 2, { reason: 'release 2026.12' });
    // THEN
    expect(result).toMatchObject({ promptId: 'greeting', target: 'production', toVersion: 2, changed: true });
    expect(await labelRow(table, 'greeting', 'production')).toMatchObject({ version_number: 2, moved_by: PIPELINE });
    expect(await auditRows(table, 'greeting')).toEqual([expect.objectContaining({ actor: PIPELINE, reason: 'release 2026.12' })]);
  });

  test('identity fields forged in the body are ignored: only the request context counts', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one']);
    const client = localDynamoDBClient({ credentials: operatorKey });
    // WHEN
    await new ReleaseClient(url.url, client).call({
      action: 'set-label',
      promptId: 'greeting',
      label: 'staging',
      version: 1,
      actor: 'arn:aws:iam::111122223333:root',
      movedBy: 'someone-else',
      userArn: PIPELINE,
      at: '2099-01-01T00:00:00.000Z',
      requestContext: { authorizer: { iam: { userArn: PIPELINE } } },
    }, { promptId: 'greeting' });
    // THEN
    expect(await labelRow(table, 'greeting', 'staging')).toMatchObject({ moved_by: OPERATOR, moved_at: '2026-12-01T18:00:00.000Z' });
    expect((await auditRows(table, 'greeting'))[0]).toMatchObject({ actor: OPERATOR, at: '2026-12-01T18:00:00.000Z' });
  });

  test('a grant scoped to production moves production only; production is protected from everyone else', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    const pipeline = adminAs(pipelineKey);
    const operator = adminAs(operatorKey);
    // WHEN / THEN
    await expect(pipeline.setLabel('greeting', 'production', 1)).resolves.toMatchObject({ changed: true });
    await expect(pipeline.setLabel('greeting', 'staging', 1)).rejects.toThrow(
      new ReleaseForbiddenError(`${PIPELINE} may move only the labels it was granted (production), not 'staging'`));
    await expect(pipeline.moveCurrent('greeting', 1)).rejects.toThrow(ReleaseForbiddenError);
    await expect(operator.setLabel('greeting', 'production', 2)).rejects.toThrow(/label 'production' is protected/);
    await expect(operator.setLabel('greeting', 'staging', 2)).resolves.toMatchObject({ changed: true });
    await expect(operator.moveCurrent('greeting', 1, { reason: 'rollback' })).resolves.toMatchObject({ target: 'CURRENT', fromVersion: 2, toVersion: 1 });
    expect(await readCurrent(table, 'greeting')).toMatchObject({ version_number: 1, activated_by: OPERATOR });
    expect(await labelRow(table, 'greeting', 'production')).toMatchObject({ version_number: 1 });
  });

  test('a caller the URL cannot verify (unknown key, wrong secret) is refused by the URL before the function runs', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one']);
    // WHEN
    const unknown = await adminAs({ accessKeyId: 'AKIANOBODY00000001', secretAccessKey: 'x' }).setLabel('greeting', 'production', 1).catch((e: unknown) => e);
    const forged = await adminAs({ accessKeyId: pipelineKey.accessKeyId, secretAccessKey: 'guessed' }).setLabel('greeting', 'production', 1).catch((e: unknown) => e);
    // THEN
    for (const error of [unknown, forged]) {
      expect(error).toBeInstanceOf(ReleaseForbiddenError);
      expect((error as Error).message).toMatch(/refused the call \(403 Forbidden\): the caller needs lambda:InvokeFunctionUrl/);
    }
    expect(url.rejected).toBeGreaterThanOrEqual(2);
    expect(await auditRows(table, 'greeting')).toEqual([]);
  });

  test.each([
    ['a reserved label name', (a: PromptAdmin) => a.setLabel('greeting', 'current', 1), /label name 'current' is reserved/],
    ['an invalid label name', (a: PromptAdmin) => a.setLabel('greeting', 'Prod', 1), /label name "Prod" must match/],
    ['a share above 10000 bp', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 10_001 }), /`percentBp` must be a whole number of basis points from 1 to 10000 \(0.01 % to 100 %\), got 10001/],
    ['a share of 0 bp', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 0 }), /`percentBp` must be a whole number of basis points from 1 to 10000/],
    ['a share of 1e-300 bp', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 1e-300 }), /`percentBp` must be a whole number of basis points from 1 to 10000 \(0.01 % to 100 %\), got 1e-300/],
    ['a step share of 1e-300 bp', (a: PromptAdmin) => a.stepRollout('greeting', 'staging', { percentBp: 1e-300 }), /`percentBp` must be a whole number of basis points/],
    ['a share that is not a whole number of basis points', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 10.5 }), /`percentBp` must be a whole number of basis points .* got 10.5/],
    ['a share that is not a number', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: '1000' as any }), /`percentBp` must be a number, got "1000"/],
    ['a share that JSON cannot carry (NaN)', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: NaN }), /`percentBp` must be a number, got null/],
    ['no share at all', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, {}), /`percentBp` is required/],
    ['falling steps', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 5000, stepsBp: [4000] }), /`stepsBp` must rise above `percentBp` and each other: stepsBp\[0\] is 4000 bp \(40 %\) after 5000 bp \(50 %\)/],
    ['a step share of 1e-300 bp in the steps', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 10, stepsBp: [1e-300] }), /`stepsBp\[0\]` must be a whole number of basis points/],
    ['an interval under a minute', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 500, stepsBp: [1000], stepIntervalSeconds: 5 }), /`stepIntervalSeconds` must be a whole number from 60/],
    // The deprecated `percent` / `steps` (in percent) are still checked as before, and must agree with the basis points.
    ['a deprecated percent above 100', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 150 }), /`percent` must be from 0.01 to 100 \(percent\), got 150/],
    ['a deprecated percent that rounds to no share at all', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 1e-300 }), /`percent` must be from 0.01 to 100 \(percent\), got 1e-300/],
    ['a deprecated step percent that rounds to no share at all', (a: PromptAdmin) => a.stepRollout('greeting', 'staging', { percent: 1e-300 }), /`percent` must be from 0.01 to 100/],
    ['a deprecated percent finer than hundredths', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 10.005 }), /whole number of hundredths/],
    ['deprecated falling steps', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 50, steps: [40] }), /`steps` must rise above `percent`/],
    ['a share given both ways, disagreeing', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 1000, percent: 20 }),
      /`percentBp` \(1000 bp\) and the deprecated `percent` \(20 %, 2000 bp\) disagree: send `percentBp` alone/],
    ['a step share given both ways, disagreeing', (a: PromptAdmin) => a.stepRollout('greeting', 'staging', { percentBp: 5000, percent: 5 }),
      /`percentBp` \(5000 bp\) and the deprecated `percent` \(5 %, 500 bp\) disagree/],
    ['steps given both ways, disagreeing', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percentBp: 1000, stepsBp: [5000, 10_000], steps: [50, 90] }),
      /`stepsBp` \(5000, 10000 bp\) and the deprecated `steps` \(50, 90 %\) disagree: send `stepsBp` alone/],
    ['a step on a label without a rollout', (a: PromptAdmin) => a.stepRollout('greeting', 'staging'), /has no rollout in progress/],
  ])('%s is refused with the reason and nothing moves', async (_name, call, message) => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    await adminAs(operatorKey).setLabel('greeting', 'staging', 1);
    const before = await auditRows(table, 'greeting');
    // WHEN
    const error = await call(adminAs(operatorKey)).catch((e: unknown) => e);
    // THEN
    expect(error).toBeInstanceOf(ReleaseRefusedError);
    expect((error as Error).message).toMatch(message);
    expect(await auditRows(table, 'greeting')).toEqual(before);
    expect(await labelRow(table, 'greeting', 'staging')).toMatchObject({ version_number: 1, revision: 1 });
  });

  test('rollout shares are basis points on the wire and in the answer; the deprecated percent still works and names the same move', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    const operator = adminAs(operatorKey);
    await operator.setLabel('greeting', 'staging', 1);
    await operator.setLabel('greeting', 'canary', 1);
    // WHEN
    const started = await operator.startRollout('greeting', 'staging', 2, { percentBp: 250, stepsBp: [5000, 10_000] });
    const stepped = await operator.stepRollout('greeting', 'staging', { percentBp: 2500, percent: 25 });
    const old = await operator.startRollout('greeting', 'canary', 2, { percent: 10, steps: [50], clientToken: 'same-intent-1' });
    const sameIntentInBp = await operator.startRollout('greeting', 'canary', 2, { percentBp: 1000, stepsBp: [5000], clientToken: 'same-intent-1' });
    // THEN
    expect(started).toMatchObject({ action: 'rollout-start', percentBp: 250, percent: 2.5, changed: true });
    expect(stepped).toMatchObject({ action: 'rollout-step', percentBp: 2500, percent: 25 });
    expect(await labelRow(table, 'greeting', 'staging')).toMatchObject({ rollout: { percent_bp: 2500, steps_bp: [5000, 10_000] } });
    expect(old).toMatchObject({ percentBp: 1000, percent: 10 });
    expect(sameIntentInBp).toMatchObject({ percentBp: 1000, replayed: true, at: old.at });
    expect(await labelRow(table, 'greeting', 'canary')).toMatchObject({ rollout: { percent_bp: 1000, steps_bp: [5000] } });
    expect((await auditRows(table, 'greeting')).filter((r) => r.action === 'rollout-start' && r.target === 'canary')).toHaveLength(1);
  });

  test('a version that does not exist is PromptVersionNotFoundError; a gate denial is GateDeniedError', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one']);
    const operator = adminAs(operatorKey);
    // WHEN / THEN
    await expect(operator.setLabel('greeting', 'staging', 7)).rejects.toThrow(new PromptVersionNotFoundError('greeting', 7));
    fx.aws.gate = () => ({ payload: { allow: false, reason: 'no eval run for this checksum' } });
    await expect(operator.setLabel('greeting', 'staging', 1)).rejects.toThrow(GateDeniedError);
  });

  test('listAudit lists the trail newest first; listVersions and get ignore label and audit rows', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    const operator = adminAs(operatorKey);
    await operator.setLabel('greeting', 'staging', 1);
    fx.clock.ms += 1_000;
    await operator.startRollout('greeting', 'staging', 2, { percentBp: 1000, stepsBp: [5000] });
    fx.clock.ms += 1_000;
    await operator.stepRollout('greeting', 'staging');
    // (Reads go to the table: DynamoDB Local keeps tables per access key, so on the table's own client.)
    const reader = new PromptAdmin({ tableName: table.tableName, dynamoDBClient: table.client });
    // WHEN
    const audit = await reader.listAudit('greeting');
    const latest = await reader.listAudit('greeting', { limit: 1 });
    const history = await reader.listVersions('greeting');
    // THEN
    expect(audit.map((r) => [r.action, r.percentBp, r.percent])).toEqual([['rollout-step', 5000, 50], ['rollout-start', 1000, 10], ['label', undefined, undefined]]);
    expect(audit[0]).toMatchObject({ promptId: 'greeting', target: 'staging', fromVersion: 1, toVersion: 2, actor: OPERATOR, at: '2026-12-01T18:00:02.000Z' });
    expect(latest).toHaveLength(1);
    expect(history.versions.map((v) => v.versionNumber)).toEqual([1, 2]);
    expect(history.currentVersionNumber).toBe(2);
  });

  test('without a release URL the label methods say what to configure', async () => {
    const admin = new PromptAdmin({ tableName: table.tableName, dynamoDBClient: table.client });
    await expect(admin.setLabel('greeting', 'production', 1)).rejects.toThrow(PromptAdminError);
    await expect(admin.setLabel('greeting', 'production', 1)).rejects.toThrow(/needs the release function's URL: pass `releaseUrl`/);
  });
});
