import { OPERATOR, auditRows, useGovernance } from './fixture';
import { serve } from '../../src/governance/release.lambda';
import { syncVersions } from '../admin/fixture';

const fx = useGovernance();

const event = (body: string | undefined, options: { method?: string; caller?: string | null; base64?: boolean } = {}) => ({
  body: options.base64 && body !== undefined ? Buffer.from(body).toString('base64') : body,
  isBase64Encoded: options.base64 ?? false,
  requestContext: {
    http: { method: options.method ?? 'POST' },
    ...(options.caller === null ? {} : { authorizer: { iam: { userArn: options.caller ?? OPERATOR } } }),
  },
});

describe('the release function\'s request handling', () => {
  test.each([
    ['no verified caller (a URL without AWS_IAM)', event('{}', { caller: null }), 403, 'Forbidden', /no verified caller in the request context/],
    ['an empty caller', event('{}', { caller: '' }), 403, 'Forbidden', /no verified caller/],
    ['a GET', event(undefined, { method: 'GET' }), 400, 'BadRequest', /only POST is accepted, got GET/],
    ['a body that is not JSON', event('action=set-label'), 400, 'BadRequest', /the request body is not JSON/],
    ['a JSON array', event('[]'), 400, 'BadRequest', /must be a JSON object/],
    ['an unknown action', event('{"action":"drop-table","promptId":"greeting"}'), 400, 'BadRequest', /`action` must be one of activate, set-label/],
    ['a body over 64 KiB', event(JSON.stringify({ action: 'set-label', promptId: 'greeting', label: 'x', version: 1, reason: 'r'.repeat(70_000) })), 400, 'BadRequest', /over 65536 bytes/],
    ['a version given as a string', event('{"action":"set-label","promptId":"greeting","label":"production","version":"2"}'), 400, 'BadRequest', /`version` must be a whole number from 1 to 999999, got "2"/],
    ['a reserved prompt id', event('{"action":"set-label","promptId":"#catalog","label":"production","version":1}'), 400, 'BadRequest', /prompt ids starting with '#' are reserved/],
    ['a reason that is not a string', event('{"action":"set-label","promptId":"greeting","label":"production","version":1,"reason":{"x":1}}'), 400, 'BadRequest', /`reason` must be a string/],
  ])('%s: refused with its reason, nothing written', async (_name, request, status, code, message) => {
    // GIVEN
    await syncVersions(fx.table, 'greeting', ['one']);
    fx.table.counter.reset();
    // WHEN
    const answer = await serve(request, fx.engine, []);
    // THEN
    expect(answer.statusCode).toBe(status);
    expect(answer.headers).toEqual({ 'content-type': 'application/json' });
    const body = JSON.parse(answer.body);
    expect(body.error.code).toBe(code);
    expect(body.error.message).toMatch(message);
    expect(fx.table.counter.writes()).toBe(0);
    expect(await auditRows(fx.table, 'greeting')).toEqual([]);
  });

  test('a base64 body (as function URLs deliver binary content types) is decoded', async () => {
    // GIVEN
    await syncVersions(fx.table, 'greeting', ['one']);
    // WHEN
    const answer = await serve(event('{"action":"set-label","promptId":"greeting","label":"staging","version":1}', { base64: true }), fx.engine, []);
    // THEN
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(answer.body).result).toMatchObject({ target: 'staging', toVersion: 1, changed: true });
  });

  test('a long reason is kept to 1,000 characters in the record', async () => {
    // GIVEN
    await syncVersions(fx.table, 'greeting', ['one']);
    // WHEN
    await serve(event(JSON.stringify({ action: 'set-label', promptId: 'greeting', label: 'staging', version: 1, reason: 'why '.repeat(1_000) })), fx.engine, []);
    // THEN
    const [record] = await auditRows(fx.table, 'greeting');
    expect(record.reason).toHaveLength(1_000);
    expect(record.reason.endsWith('…')).toBe(true);
  });
});

describe('who the release function lets move what', () => {
  const ALICE = 'arn:aws:iam::111122223333:user/alice';
  const scopedToStaging = [{ principal: ALICE, labels: ['staging'] }];
  const setLabel = (label: string) => JSON.stringify({ action: 'set-label', promptId: 'greeting', label, version: 1 });

  test.each([
    ['a federated user (sts:GetFederationToken), even one named like a scoped user', 'arn:aws:sts::111122223333:federated-user/alice'],
    ['the account root', 'arn:aws:iam::111122223333:root'],
    ['an ARN of no known shape', 'arn:aws:sts::111122223333:something/else'],
  ])('%s is refused with its reason, nothing written', async (_name, caller) => {
    // GIVEN
    await syncVersions(fx.table, 'greeting', ['one']);
    fx.table.counter.reset();
    // WHEN: production is not protected, so an unscoped caller could move it
    const answer = await serve(event(setLabel('production'), { caller }), fx.engine, scopedToStaging);
    // THEN
    expect(answer.statusCode).toBe(403);
    expect(JSON.parse(answer.body).error.message).toBe(
      `${caller} is neither a role session nor an IAM user: only those may use the release path (the account root and federated users are refused)`,
    );
    expect(fx.table.counter.writes()).toBe(0);
    expect(await auditRows(fx.table, 'greeting')).toEqual([]);
  });

  test('a role or user name matches its grant regardless of case; the account must match exactly', async () => {
    // GIVEN
    await syncVersions(fx.table, 'greeting', ['one']);
    const scopes = [{ principal: 'arn:aws:iam::111122223333:role/deploy/ReleasePipeline', labels: ['staging'] }, ...scopedToStaging];
    // WHEN
    const asRole = await serve(event(setLabel('production'), { caller: 'arn:aws:sts::111122223333:assumed-role/releasepipeline/build-1' }), fx.engine, scopes);
    const asUser = await serve(event(setLabel('production'), { caller: 'arn:aws:iam::111122223333:user/ALICE' }), fx.engine, scopes);
    const otherAccount = await serve(event(setLabel('staging'), { caller: 'arn:aws:iam::444455556666:user/alice' }), fx.engine, scopes);
    // THEN: both are held to their scope (staging only); the same name in another account is not the grantee
    expect(JSON.parse(asRole.body).error.message).toMatch(/may move only the labels it was granted \(staging\), not 'production'/);
    expect(JSON.parse(asUser.body).error.message).toMatch(/may move only the labels it was granted \(staging\), not 'production'/);
    expect(JSON.parse(otherAccount.body).error.message).toMatch(/label 'staging' is protected/);
  });
});
