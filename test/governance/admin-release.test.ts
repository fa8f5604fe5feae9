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
    ['a percent above 100', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 150 }), /`percent` must be from 0.01 to 100 \(percent\), got 150/],
    ['a percent that rounds to no share at all', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 1e-300 }), /`percent` must be from 0.01 to 100 \(percent\), got 1e-300/],
    ['a step percent that rounds to no share at all', (a: PromptAdmin) => a.stepRollout('greeting', 'staging', { percent: 1e-300 }), /`percent` must be from 0.01 to 100/],
    ['a percent that is not a number', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: '10' as any }), /`percent` must be a number, got "10"/],
    ['a percent that JSON cannot carry (NaN)', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: NaN }), /`percent` must be a number, got null/],
    ['a percent finer than hundredths', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 10.005 }), /whole number of hundredths/],
    ['falling steps', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 50, steps: [40] }), /`steps` must rise above `percent`/],
    ['an interval under a minute', (a: PromptAdmin) => a.startRollout('greeting', 'staging', 2, { percent: 5, steps: [10], stepIntervalSeconds: 5 }), /`stepIntervalSeconds` must be a whole number from 60/],
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
    await operator.startRollout('greeting', 'staging', 2, { percent: 10, steps: [50] });
    fx.clock.ms += 1_000;
    await operator.stepRollout('greeting', 'staging');
    // (Reads go to the table: DynamoDB Local keeps tables per access key, so on the table's own client.)
    const reader = new PromptAdmin({ tableName: table.tableName, dynamoDBClient: table.client });
    // WHEN
    const audit = await reader.listAudit('greeting');
    const latest = await reader.listAudit('greeting', { limit: 1 });
    const history = await reader.listVersions('greeting');
    // THEN
    expect(audit.map((r) => [r.action, r.percent])).toEqual([['rollout-step', 50], ['rollout-start', 10], ['label', undefined]]);
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
