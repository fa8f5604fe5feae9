/**
 * The seam between the core client and the cache tier (src/runtime/tier.ts): a store passed bare as `l2` is refused
 * naming `cacheTier`, and a reader layer whose tier speaks another protocol (a layer of another release) is never
 * called: one ERROR line, `l2Unavailable` counted, and reads go to the table.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PromptCacheL2, PromptClient, PromptServingError } from '../../src/runtime';
import { TIER_PROTOCOL } from '../../src/runtime/tier';

const dynamoDBClient = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
afterAll(() => dynamoDBClient.destroy());

test('a store passed bare as l2 is refused, naming cacheTier', () => {
  const store: PromptCacheL2 = { get: async () => undefined, set: async () => undefined };
  expect(() => new PromptClient({ tableName: 't', dynamoDBClient, l2: store as never })).toThrow(PromptServingError);
  expect(() => new PromptClient({ tableName: 't', dynamoDBClient, l2: store as never }))
    .toThrow("`l2` takes the cache tier over your store: `l2: cacheTier(store)`, with `cacheTier` from 'cdk-prompt-serving/runtime'");
});

describe('a reader layer of another release', () => {
  const saved = { ...process.env };
  const tierFromEnvironment = jest.fn();

  beforeEach(() => {
    jest.resetModules();
    // The layer's module as `loadAdapter` finds it beside the client (no layer on the path here): another protocol.
    jest.doMock('../../src/runtime/cache-layer', () => ({ TIER_PROTOCOL: 999, tierFromEnvironment }));
    process.env.PROMPT_SERVING_TABLE_NAME = 'skewed';
    process.env.PROMPT_SERVING_CACHE_ENDPOINT = '127.0.0.1:6379';
    process.env.PROMPT_SERVING_CACHE_AUTH = 'none';
  });

  afterEach(() => {
    jest.dontMock('../../src/runtime/cache-layer');
    process.env = { ...saved };
  });

  test('is never called: one ERROR line naming the fix, l2Unavailable counted, no L2', async () => {
    // GIVEN stdout captured
    const lines: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      // WHEN a client is made with the cache environment set
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const runtime = require('../../src/runtime') as typeof import('../../src/runtime');
      const prompts = new runtime.PromptClient({ dynamoDBClient });
      // THEN the layer's tier was not called, and the reason is one line with the metric
      expect(tierFromEnvironment).not.toHaveBeenCalled();
      expect(prompts.stats().l2Unavailable).toBe(1);
      expect(lines).toHaveLength(1);
      const line = JSON.parse(lines[0]);
      expect(line.level).toBe('ERROR');
      expect(line.message).toContain(`speaks protocol 999 and this client ${TIER_PROTOCOL}: attach the layer of this client's cdk-prompt-serving version`);
      expect(line.ReaderCacheUnavailable).toBe(1);
      await prompts.close();
    } finally {
      write.mockRestore();
    }
  });
});
