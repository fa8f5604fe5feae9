/**
 * The admin API's reading of the release function's answers: one parser (schema/release-api.ts) for every shape,
 * structured error details instead of numbers read out of messages, and one client token per intent, reused on
 * every retry of a call that got no answer.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MalformedReleaseAnswerError, PromptAdmin, PromptVersionNotFoundError, ReleaseRefusedError } from '../../src/admin';
import { formatRelease } from '../../src/cli/format';
import { parseReleaseAnswer } from '../../src/schema/release-api';
import { localDynamoDBClient } from '../support/table';

interface Canned { readonly status: number; readonly body: string }

/** A release function URL on loopback answering `answers` in turn (the last one again after that); bodies kept. */
async function cannedUrl(answers: Canned[]): Promise<{ url: string; bodies: any[]; close(): Promise<void> }> {
  const bodies: any[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      const a = answers[Math.min(bodies.length - 1, answers.length - 1)];
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(a.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function admin(url: string): PromptAdmin {
  return new PromptAdmin({ tableName: 'unused', dynamoDBClient: localDynamoDBClient({ region: 'us-east-1' }), releaseUrl: url });
}

const moved = { promptId: 'greeting', target: 'production', action: 'label', toVersion: 2, changed: true, at: '2026-12-02T06:00:00.000Z' };

test.each(['"ok"', '5', 'true', 'null', '[]', '{"result":"ok"}', '{"result":{"promptId":"greeting"}}'])(
  'a 200 answer %s is a MalformedReleaseAnswerError naming what was wrong, never a TypeError', async (body) => {
    // GIVEN
    const url = await cannedUrl([{ status: 200, body }]);
    try {
      // WHEN
      const error = await admin(url.url).setLabel('greeting', 'production', 2).catch((e: unknown) => e);
      // THEN
      expect(error).toBeInstanceOf(MalformedReleaseAnswerError);
      expect((error as Error).message).toMatch(/not a release answer: the answer/);
      expect(url.bodies).toHaveLength(1); // an answer came: not retried
    } finally {
      await url.close();
    }
  });

test('the parser names the shape it got', () => {
  expect(parseReleaseAnswer(200, '5')).toEqual({ kind: 'malformed', problem: 'the answer (200) is 5, not a JSON object' });
  expect(parseReleaseAnswer(200, '{"result":null}')).toEqual({ kind: 'malformed', problem: 'the answer\'s `result` is null, not an object' });
  expect(parseReleaseAnswer(200, JSON.stringify({ result: moved }))).toEqual({ kind: 'result', result: moved });
  expect(parseReleaseAnswer(404, JSON.stringify({ error: { code: 'VersionNotFound', message: 'm', detail: { promptId: 'p', version: 7 } } })))
    .toEqual({ kind: 'error', error: { code: 'VersionNotFound', message: 'm', detail: { promptId: 'p', version: 7 } } });
});

test('a missing version is read from the error\'s detail, not from its message', async () => {
  // GIVEN: a message that names another number than the detail
  const url = await cannedUrl([{ status: 404, body: JSON.stringify({ error: { code: 'VersionNotFound', message: 'version 99 of prompt x not found', detail: { promptId: 'greeting', version: 7 } } }) }]);
  try {
    // WHEN
    const error = await admin(url.url).setLabel('greeting', 'production', 3).catch((e: unknown) => e);
    // THEN
    expect(error).toBeInstanceOf(PromptVersionNotFoundError);
    expect((error as PromptVersionNotFoundError).versionNumber).toBe(7);
  } finally {
    await url.close();
  }
});

test('a refusal carries its structured detail', async () => {
  const detail = { field: 'percent', value: '1e-300', allowed: '0.01..100 in steps of 0.01' };
  const url = await cannedUrl([{ status: 400, body: JSON.stringify({ error: { code: 'BadRequest', message: 'no', detail } }) }]);
  try {
    const error = await admin(url.url).startRollout('greeting', 'production', 3, { percent: 1e-300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReleaseRefusedError);
    expect((error as ReleaseRefusedError).detail).toEqual(detail);
  } finally {
    await url.close();
  }
});

test('a call answered DeadlineExceeded is made again with the same client token, and the replayed answer returned', async () => {
  // GIVEN: the first call's move may have committed; the second finds it did
  const url = await cannedUrl([
    { status: 504, body: JSON.stringify({ error: { code: 'DeadlineExceeded', message: 'late', detail: { call: 'write', committed: 'unknown' } } }) },
    { status: 200, body: JSON.stringify({ result: { ...moved, replayed: true } }) },
  ]);
  try {
    // WHEN
    const result = await admin(url.url).stepRollout('greeting', 'production');
    // THEN
    expect(result).toMatchObject({ changed: true, replayed: true });
    expect(url.bodies).toHaveLength(2);
    expect(url.bodies[0].clientToken).toMatch(/^[0-9a-f-]{36}$/);
    expect(url.bodies[1]).toEqual(url.bodies[0]);
  } finally {
    await url.close();
  }
});

test('two calls (two intents) send two tokens; a caller\'s own token is sent as given', async () => {
  const url = await cannedUrl([{ status: 200, body: JSON.stringify({ result: moved }) }]);
  try {
    const a = admin(url.url);
    await a.setLabel('greeting', 'production', 2);
    await a.setLabel('greeting', 'production', 2);
    await a.setLabel('greeting', 'production', 2, { clientToken: 'deploy-2026-12-02' });
    expect(new Set(url.bodies.map((b) => b.clientToken)).size).toBe(3);
    expect(url.bodies[2].clientToken).toBe('deploy-2026-12-02');
  } finally {
    await url.close();
  }
});

test('the CLI says when an answer is a replay of a committed move, and when its audit event could not be sent', () => {
  // GIVEN / WHEN
  const replayed = formatRelease({ ...moved, action: 'label', replayed: true });
  const eventLost = formatRelease({ ...moved, action: 'label', auditEvent: 'failed' });
  const plain = formatRelease({ ...moved, action: 'label', auditEvent: 'sent' });
  // THEN
  expect(replayed).toMatch(/^label 'production' of prompt 'greeting' serves version 2\.\nA retry: this move had already been made/);
  expect(eventLost).toMatch(/EventBridge event could not be sent/);
  expect(plain).toBe("label 'production' of prompt 'greeting' serves version 2.\n");
});
