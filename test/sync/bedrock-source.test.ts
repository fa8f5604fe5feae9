import {
  BedrockAgentClient,
  GetPromptCommand,
  ListPromptsCommand,
  paginateListPrompts,
  PromptVariant,
  ThrottlingException,
} from '@aws-sdk/client-bedrock-agent';
import { checksum } from '../../src/schema';
import { SourceReadError } from '../../src/sync/errors';
import { BedrockPromptSource, BedrockPromptSourceOptions } from '../../src/sync/sources/bedrock';
import { BedrockStandIn, MAX_NUMBERED_VERSIONS, STAND_IN_REGION } from '../support/bedrock-stand-in';
import { CallCounter } from '../support/call-counter';

/** Timestamps come from this clock; tests move it forward to order edits and versions. */
let now: number;
let standIn: BedrockStandIn;
let client: BedrockAgentClient;
let counter: CallCounter;

beforeEach(async () => {
  now = Date.parse('2025-03-01T10:00:00.000Z');
  standIn = new BedrockStandIn({ clock: () => now });
  await standIn.start();
  counter = new CallCounter();
  client = counter.attach(standIn.client({ maxAttempts: 1 }));
});

afterEach(async () => {
  client.destroy();
  await standIn.stop();
});

function tick(ms = 1_000): string {
  now += ms;
  return new Date(now).toISOString();
}

/** A reader paced far above the stand-in's quota unless a test says otherwise, to keep tests quick. */
function reader(options: Partial<BedrockPromptSourceOptions> = {}): BedrockPromptSource {
  return new BedrockPromptSource({ client, maxRequestsPerSecond: 1_000, ...options });
}

function textVariant(text: string, extra: Partial<PromptVariant> = {}): PromptVariant {
  return {
    name: 'main',
    templateType: 'TEXT',
    templateConfiguration: { text: { text, inputVariables: [{ name: 'name' }] } },
    modelId: 'anthropic.claude-3-haiku-20240307-v1:0',
    ...extra,
  };
}

function textPrompt(text: string): string {
  return standIn.createPrompt({ name: 'greeting', variants: [textVariant(text)] });
}

/** Fills the stand-in's one-second window for `operation` with unpaced calls. */
async function exhaustQuota(operation: 'ListPrompts' | 'GetPrompt', id: string): Promise<void> {
  const raw = standIn.client({ maxAttempts: 1 });
  const command = () => (operation === 'ListPrompts' ? new ListPromptsCommand({}) : new GetPromptCommand({ promptIdentifier: id }));
  await Promise.all(Array.from({ length: 10 }, () => raw.send(command() as any)));
  raw.destroy();
}

describe('Bedrock stand-in, through the real SDK', () => {
  test('ListPrompts pages DRAFT summaries with nextToken', async () => {
    // GIVEN
    const ids = Array.from({ length: 25 }, (_, i) => standIn.createPrompt({ name: `p${i}`, variants: [textVariant('x')] }));
    // WHEN
    const seen: string[] = [];
    for await (const page of paginateListPrompts({ client, pageSize: 10 }, {})) {
      seen.push(...page.promptSummaries!.map((s) => `${s.id}@${s.version}`));
    }
    // THEN
    expect(seen).toEqual(ids.map((id) => `${id}@DRAFT`));
    expect(counter.count('ListPrompts')).toBe(3);
  });

  test('ListPrompts of one prompt shows its draft and each numbered version with their own timestamps', async () => {
    // GIVEN
    const id = textPrompt('v1');
    const created = new Date(now);
    const v1At = tick();
    standIn.createVersion(id);
    const editedAt = tick();
    standIn.updateDraft(id, { variants: [textVariant('v2')] });
    // WHEN
    const out = await client.send(new ListPromptsCommand({ promptIdentifier: id }));
    // THEN
    expect(out.promptSummaries!.map((s) => [s.version, s.arn, s.createdAt, s.updatedAt])).toEqual([
      ['DRAFT', `arn:aws:bedrock:us-east-1:123456789012:prompt/${id}`, created, new Date(editedAt)],
      ['1', `arn:aws:bedrock:us-east-1:123456789012:prompt/${id}:1`, new Date(v1At), new Date(v1At)],
    ]);
  });

  test('answers unknown prompts with ResourceNotFoundException and keeps at most 10 versions', async () => {
    // GIVEN
    const id = textPrompt('x');
    for (let i = 0; i < MAX_NUMBERED_VERSIONS; i++) standIn.createVersion(id);
    // THEN
    await expect(client.send(new GetPromptCommand({ promptIdentifier: 'NOSUCHID00' })))
      .rejects.toMatchObject({ name: 'ResourceNotFoundException', $metadata: { httpStatusCode: 404 } });
    await expect(client.send(new GetPromptCommand({ promptIdentifier: id, promptVersion: '11' })))
      .rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    expect(() => standIn.createVersion(id)).toThrow(/ServiceQuotaExceededException/);
  });

  test('throttles each operation past 10 requests/second with ThrottlingException, counting both', async () => {
    // GIVEN
    const id = textPrompt('x');
    // WHEN
    const gets = await Promise.allSettled(Array.from({ length: 12 }, () => client.send(new GetPromptCommand({ promptIdentifier: id }))));
    const list = await client.send(new ListPromptsCommand({}));
    // THEN
    const rejected = gets.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason);
    expect(rejected).toHaveLength(2);
    expect(rejected[0]).toBeInstanceOf(ThrottlingException);
    expect(rejected[0].$metadata.httpStatusCode).toBe(429);
    expect(list.promptSummaries).toHaveLength(1);
    expect(standIn.stats()).toEqual({ served: { GetPrompt: 10, ListPrompts: 1 }, throttled: { GetPrompt: 2, ListPrompts: 0 } });
  });

  test('is reachable through AWS_ENDPOINT_URL_BEDROCK_AGENT', async () => {
    // GIVEN
    textPrompt('x');
    const saved = process.env.AWS_ENDPOINT_URL_BEDROCK_AGENT;
    process.env.AWS_ENDPOINT_URL_BEDROCK_AGENT = standIn.endpoint;
    try {
      const fromEnv = new BedrockAgentClient({ region: STAND_IN_REGION, credentials: { accessKeyId: 'a', secretAccessKey: 's' } });
      // WHEN
      const out = await fromEnv.send(new ListPromptsCommand({}));
      fromEnv.destroy();
      // THEN
      expect(out.promptSummaries).toHaveLength(1);
    } finally {
      if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_BEDROCK_AGENT;
      else process.env.AWS_ENDPOINT_URL_BEDROCK_AGENT = saved;
    }
  });
});

describe('BedrockPromptSource.list', () => {
  test('pages through every prompt, 1000 per ListPrompts call', async () => {
    // GIVEN
    for (let i = 0; i < 1_001; i++) textPrompt(`p${i}`);
    // WHEN
    const listing = await reader().list();
    // THEN
    expect(listing.prompts).toHaveLength(1_001);
    expect(listing.prompts[0].revision).toBe('latest:2025-03-01T10:00:00.000Z');
    expect(listing.failures).toEqual([]);
    expect(counter.count('ListPrompts')).toBe(2);
  });

  test('with promptIds lists each id on its own, leaving out missing ones', async () => {
    // GIVEN
    const a = textPrompt('a');
    tick();
    const b = textPrompt('b');
    textPrompt('not selected');
    // WHEN
    const listing = await reader({ promptIds: [a, 'MISSING000', b], version: 'DRAFT' }).list();
    // THEN
    expect(listing).toEqual({
      prompts: [
        { id: a, revision: 'draft:2025-03-01T10:00:00.000Z', changedAt: '2025-03-01T10:00:00.000Z' },
        { id: b, revision: 'draft:2025-03-01T10:00:01.000Z', changedAt: '2025-03-01T10:00:01.000Z' },
      ],
      failures: [],
    });
    expect(counter.count('ListPrompts')).toBe(3);
  });

  test('with promptIds reports an id it could not list as a failure, not as deleted', async () => {
    // GIVEN
    const a = textPrompt('a');
    await exhaustQuota('ListPrompts', a);
    // WHEN
    const listing = await reader({ promptIds: [a], maxAttempts: 1 }).list();
    // THEN
    expect(listing.prompts).toEqual([]);
    expect(listing.failures).toEqual([{ id: a, reason: expect.stringMatching(/^ThrottlingException/) }]);
  });

  test('rejects prompt ids Bedrock cannot have', () => {
    // THEN
    expect(() => reader({ promptIds: ['arn:aws:bedrock:us-east-1:123456789012:prompt/ABCDEFGHIJ'] })).toThrow(RangeError);
  });
});

describe('BedrockPromptSource.fetch: content', () => {
  test('converts a TEXT prompt to the wire contract, keeping further fields, identically on every read', async () => {
    // GIVEN
    const id = standIn.createPrompt({
      name: 'greeting',
      description: 'Greets a user',
      variants: [textVariant('Hello {{name}}!', {
        inferenceConfiguration: { text: { temperature: 0.2, topP: 0.9, maxTokens: 256, stopSequences: ['END'] } },
        additionalModelRequestFields: { top_k: 50 },
        metadata: [{ key: 'team', value: 'search' }],
      })],
    });
    const updatedAt = tick();
    standIn.createVersion(id);
    const source = reader();
    // WHEN
    const first = await source.fetch(id, undefined, undefined);
    const second = await source.fetch(id, undefined, undefined);
    // THEN
    expect(first).toStrictEqual({
      kind: 'prompt',
      prompt: {
        id,
        content: {
          name: 'greeting',
          description: 'Greets a user',
          variant_name: 'main',
          template_type: 'TEXT',
          text: 'Hello {{name}}!',
          input_variables: ['name'],
          model_id: 'anthropic.claude-3-haiku-20240307-v1:0',
          inference_config: { temperature: 0.2, topP: 0.9, maxTokens: 256, stopSequences: ['END'] },
          additional_model_request_fields: { top_k: 50 },
          metadata: [{ key: 'team', value: 'search' }],
        },
        sourceVersion: '1',
        revision: 'latest:2025-03-01T10:00:00.000Z',
        updatedAt,
      },
    });
    expect(second).toStrictEqual(first);
    expect(first.kind === 'prompt' && checksum(first.prompt.content)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  test('converts a CHAT prompt, serving the default variant and keeping the others', async () => {
    // GIVEN
    const chat: PromptVariant = {
      name: 'concise',
      templateType: 'CHAT',
      templateConfiguration: {
        chat: {
          messages: [{ role: 'user', content: [{ text: 'Summarise {{doc}}' }] }],
          system: [{ text: 'Be brief.' }],
          inputVariables: [{ name: 'doc' }],
          toolConfiguration: { tools: [{ toolSpec: { name: 'lookup', inputSchema: { json: { type: 'object' } } } }] },
        },
      },
      modelId: 'amazon.nova-lite-v1:0',
    };
    const id = standIn.createPrompt({ name: 'summary', defaultVariant: 'concise', variants: [textVariant('Long {{name}}'), chat] });
    // WHEN
    const result = await reader({ version: 'DRAFT' }).fetch(id, undefined, undefined);
    // THEN
    expect(result.kind === 'prompt' && result.prompt.content).toStrictEqual({
      name: 'summary',
      variant_name: 'concise',
      template_type: 'CHAT',
      messages: [{ role: 'user', content: [{ text: 'Summarise {{doc}}' }] }],
      system: [{ text: 'Be brief.' }],
      input_variables: ['doc'],
      tool_configuration: { tools: [{ toolSpec: { name: 'lookup', inputSchema: { json: { type: 'object' } } } }] },
      model_id: 'amazon.nova-lite-v1:0',
      other_variants: [{
        name: 'main',
        templateType: 'TEXT',
        templateConfiguration: { text: { text: 'Long {{name}}', inputVariables: [{ name: 'name' }] } },
        modelId: 'anthropic.claude-3-haiku-20240307-v1:0',
      }],
    });
  });

  test('raises SourceReadError, keeping the cause, for a malformed GetPrompt answer', async () => {
    // GIVEN
    const id = textPrompt('x');
    standIn.setRawGetPromptBody(id, '{"name": "greeting", "variants": [');
    // WHEN
    const error = await reader({ version: 'DRAFT' }).fetch(id, undefined, undefined).catch((e) => e);
    // THEN
    expect(error).toBeInstanceOf(SourceReadError);
    expect(error.promptId).toBe(id);
    expect(error.cause).toBeInstanceOf(Error);
    expect(error.retryable).toBe(false);
  });

  test.each([
    ['not JSON', 'garbage'],
    ['JSON null', 'null'],
    ['a list', '[]'],
    ['variants a string', '{"name": "x", "variants": "nope"}'],
    ['a variant without a template', '{"name": "x", "variants": [{"name": "v", "templateType": "TEXT"}]}'],
    ['a malformed updatedAt', '{"name": "x", "updatedAt": "yesterday", "variants": [{"name": "v", "templateType": "TEXT", "templateConfiguration": {"text": {"text": "hi"}}}]}'],
    ['a numeric template', '{"name": "x", "updatedAt": "2026-01-01T00:00:00Z", "variants": [{"name": "v", "templateType": "TEXT", "templateConfiguration": {"text": {"text": 5}}}]}'],
    ['no updatedAt', '{"name": "x", "variants": [{"name": "v", "templateType": "TEXT", "templateConfiguration": {"text": {"text": "hi"}}}]}'],
  ])('a malformed GetPrompt body (%s) is a failure, not retryable', async (_name, body) => {
    const id = textPrompt('x');
    standIn.setRawGetPromptBody(id, body);
    const error = await reader({ version: 'DRAFT' }).fetch(id, undefined, undefined).catch((e) => e);
    expect(error).toBeInstanceOf(SourceReadError);
    expect(error.retryable).toBe(false);
  });

  test('raises SourceReadError for an unsupported template type or a missing template', async () => {
    // GIVEN
    const agent = standIn.createPrompt({ name: 'agent', variants: [{ ...textVariant('x'), templateType: 'AGENT' as any }] });
    const empty = standIn.createPrompt({ name: 'empty', variants: [{ ...textVariant('x'), templateConfiguration: { chat: { messages: [] } } }] });
    const source = reader({ version: 'DRAFT' });
    // THEN
    await expect(source.fetch(agent, undefined, undefined)).rejects.toThrow(new SourceReadError(agent, `Bedrock prompt ${agent}: unsupported templateType AGENT`));
    await expect(source.fetch(empty, undefined, undefined)).rejects.toThrow(new SourceReadError(empty, `Bedrock prompt ${empty}: its TEXT variant has no text template`));
  });
});

describe('BedrockPromptSource.fetch: versions and revisions', () => {
  test('LATEST serves the highest numbered version, DRAFT mode the draft', async () => {
    // GIVEN
    const id = textPrompt('one');
    tick();
    standIn.createVersion(id);
    standIn.updateDraft(id, { variants: [textVariant('two')] });
    tick();
    standIn.createVersion(id);
    const draftAt = tick();
    standIn.updateDraft(id, { variants: [textVariant('draft')] });
    // WHEN
    const latest = await reader().fetch(id, undefined, undefined);
    const draft = await reader({ version: 'DRAFT' }).fetch(id, undefined, undefined);
    // THEN
    expect(latest).toMatchObject({ kind: 'prompt', prompt: { sourceVersion: '2', content: { text: 'two' } } });
    expect(draft).toMatchObject({ kind: 'prompt', prompt: { sourceVersion: 'DRAFT', content: { text: 'draft' }, revision: `draft:${draftAt}`, updatedAt: draftAt } });
  });

  test('a version made after the last draft edit is caught up: its revision matches the listing', async () => {
    // GIVEN
    const id = textPrompt('one');
    tick();
    standIn.createVersion(id);
    const source = reader();
    // WHEN
    const listed = (await source.list()).prompts[0];
    const fetched = await source.fetch(id, listed, undefined);
    // THEN
    expect(fetched).toMatchObject({ kind: 'prompt', prompt: { revision: listed.revision } });
  });

  test('a draft edited after the latest version is pending; re-checks cost one ListPrompts and no GetPrompt', async () => {
    // GIVEN
    const id = textPrompt('one');
    standIn.createVersion(id);
    const editedAt = tick();
    standIn.updateDraft(id, { variants: [textVariant('unversioned edit')] });
    const source = reader();
    const listed = (await source.list()).prompts[0];
    // WHEN
    const first = await source.fetch(id, listed, undefined);
    counter.reset();
    const recheck = await source.fetch(id, listed, { sourceVersion: '1', sourceRevision: `latest:${editedAt}:pending` });
    // THEN
    expect(listed.revision).toBe(`latest:${editedAt}`);
    expect(first).toMatchObject({ kind: 'prompt', prompt: { sourceVersion: '1', content: { text: 'one' }, revision: `latest:${editedAt}:pending` } });
    expect(recheck).toEqual({ kind: 'unchanged', revision: `latest:${editedAt}:pending` });
    expect(counter.snapshot()).toEqual({ ListPrompts: 1 });
  });

  test('once the pending edit is versioned, the new version is fetched and the revision is caught up', async () => {
    // GIVEN
    const id = textPrompt('one');
    standIn.createVersion(id);
    const editedAt = tick();
    standIn.updateDraft(id, { variants: [textVariant('edit')] });
    tick();
    standIn.createVersion(id);
    // WHEN
    const result = await reader().fetch(id, undefined, { sourceVersion: '1', sourceRevision: `latest:${editedAt}:pending` });
    // THEN
    expect(result).toMatchObject({ kind: 'prompt', prompt: { sourceVersion: '2', content: { text: 'edit' }, revision: `latest:${editedAt}` } });
  });

  test('LATEST reports a prompt with no numbered version yet as not found', async () => {
    // GIVEN
    const id = textPrompt('draft only');
    // WHEN
    const result = await reader().fetch(id, undefined, undefined);
    // THEN
    expect(result).toEqual({ kind: 'not-found', reason: 'no numbered version yet' });
    expect(counter.count('GetPrompt')).toBe(0);
  });

  test('a targeted fetch of a deleted prompt is not found, in both modes', async () => {
    // GIVEN
    const id = textPrompt('x');
    standIn.createVersion(id);
    standIn.deletePrompt(id);
    // WHEN
    const latest = await reader().fetch(id, undefined, { sourceVersion: '1' });
    const draft = await reader({ version: 'DRAFT' }).fetch(id, undefined, undefined);
    // THEN
    expect(latest).toMatchObject({ kind: 'not-found' });
    expect(draft).toMatchObject({ kind: 'not-found' });
  });
});

describe('BedrockPromptSource pacing against the 10 requests/second quota', () => {
  test('at 20 req/s, 60 concurrent fetches all succeed; every throttle is retried and counted', async () => {
    // GIVEN: the SDK client keeps its default retries, so some throttles are retried inside the SDK
    const ids = Array.from({ length: 60 }, (_, i) => textPrompt(`prompt ${i}`));
    const withSdkRetries = standIn.client();
    const source = new BedrockPromptSource({ client: withSdkRetries, version: 'DRAFT', maxRequestsPerSecond: 20 });
    // WHEN
    const results = await Promise.all(ids.map((id) => source.fetch(id, undefined, undefined)));
    withSdkRetries.destroy();
    // THEN
    expect(results.map((r) => r.kind === 'prompt' && r.prompt.id)).toEqual(ids);
    const { served, throttled } = standIn.stats();
    expect(served.GetPrompt).toBe(60);
    expect(throttled.GetPrompt).toBeGreaterThan(0);
    expect(source.stats()).toEqual({ calls: { ListPrompts: 0, GetPrompt: 60 + throttled.GetPrompt }, throttles: throttled.GetPrompt });
  });

  test('the default pace (5 req/s) is never throttled where unpaced calls would be', async () => {
    // GIVEN: 11 GetPrompt calls at once, one more than the quota admits in a second
    const ids = Array.from({ length: 11 }, (_, i) => textPrompt(`prompt ${i}`));
    const source = new BedrockPromptSource({ client, version: 'DRAFT' });
    const started = performance.now();
    // WHEN
    const results = await Promise.all(ids.map((id) => source.fetch(id, undefined, undefined)));
    const elapsedMs = performance.now() - started;
    // THEN
    expect(results.map((r) => r.kind)).toEqual(ids.map(() => 'prompt'));
    expect(source.stats()).toEqual({ calls: { ListPrompts: 0, GetPrompt: 11 }, throttles: 0 });
    expect(standIn.stats().throttled).toEqual({ ListPrompts: 0, GetPrompt: 0 });
    expect(elapsedMs).toBeGreaterThanOrEqual(10 * 200 - 5); // 11 starts, 200 ms apart
  });

  test('ListPrompts and GetPrompt share one budget', async () => {
    // GIVEN
    const ids = Array.from({ length: 5 }, (_, i) => textPrompt(`prompt ${i}`));
    ids.forEach((id) => standIn.createVersion(id));
    const source = reader({ maxRequestsPerSecond: 50 });
    const started = performance.now();
    // WHEN: 5 ListPrompts + 5 GetPrompt
    await Promise.all(ids.map((id) => source.fetch(id, undefined, undefined)));
    const elapsedMs = performance.now() - started;
    // THEN: 10 starts 20 ms apart (separate budgets would need only 4 intervals)
    expect(source.stats().calls).toEqual({ ListPrompts: 5, GetPrompt: 5 });
    expect(elapsedMs).toBeGreaterThanOrEqual(9 * 20 - 5);
  });

  test('gives up after maxAttempts throttles with a SourceReadError caused by the ThrottlingException', async () => {
    // GIVEN
    const id = textPrompt('x');
    await exhaustQuota('GetPrompt', id);
    const source = reader({ version: 'DRAFT', maxAttempts: 2 });
    // WHEN
    const error = await source.fetch(id, undefined, undefined).catch((e) => e);
    // THEN
    expect(error).toBeInstanceOf(SourceReadError);
    expect(error.cause).toBeInstanceOf(ThrottlingException);
    expect(source.stats()).toEqual({ calls: { ListPrompts: 0, GetPrompt: 2 }, throttles: 2 });
  });
});
