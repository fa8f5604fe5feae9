/** Options: defaults, environment overrides and the errors that name the bad input. */
import { EnvVars, PromptClient, PromptServingError } from '../../src/runtime';
import { resolveOptions } from '../../src/runtime/options';

test('the table name comes from PROMPT_SERVING_TABLE_NAME when not given', () => {
  expect(resolveOptions({}, { PROMPT_SERVING_TABLE_NAME: 'prompts' }).tableName).toBe('prompts');
});

test('throws naming PROMPT_SERVING_TABLE_NAME when there is no table name', () => {
  expect(() => resolveOptions({}, {})).toThrow(PromptServingError);
  expect(() => resolveOptions({}, {})).toThrow(/PROMPT_SERVING_TABLE_NAME/);
});

test('the constructor applies the same rule', () => {
  const saved = process.env[EnvVars.tableName];
  delete process.env[EnvVars.tableName];
  try {
    expect(() => new PromptClient()).toThrow(/pass `tableName` or set the PROMPT_SERVING_TABLE_NAME environment variable/);
  } finally {
    if (saved !== undefined) process.env[EnvVars.tableName] = saved;
  }
});

test('defaults apply, in milliseconds', () => {
  expect(resolveOptions({ tableName: 't' }, {})).toEqual({
    tableName: 't',
    maxAgeMs: 60_000,
    maxEntries: 1000,
    notFoundMaxAgeMs: 10_000,
    staleWhileRevalidateMs: 60_000,
    staleIfErrorMs: 3_600_000,
    catalogMaxAgeMs: 60_000,
    requestTimeoutMs: 2000,
    maxAttempts: 3,
    l2TimeoutMs: 100,
    l2ConnectTimeoutMs: 1000,
    epochPollIntervalMs: 500,
  });
});

test('environment variables override defaults; options override both', () => {
  const env = { PROMPT_SERVING_MAX_AGE_SECONDS: '5', PROMPT_SERVING_MAX_ENTRIES: '10', PROMPT_SERVING_REQUEST_TIMEOUT_MS: '500' };
  expect(resolveOptions({ tableName: 't' }, env)).toMatchObject({ maxAgeMs: 5000, maxEntries: 10, requestTimeoutMs: 500 });
  expect(resolveOptions({ tableName: 't', maxAgeSeconds: 1 }, env)).toMatchObject({ maxAgeMs: 1000 });
});

test('a bad environment value is reported with the variable name and value', () => {
  expect(() => resolveOptions({ tableName: 't' }, { PROMPT_SERVING_MAX_AGE_SECONDS: 'soon' }))
    .toThrow('PROMPT_SERVING_MAX_AGE_SECONDS="soon" must be a number of at least 0, got NaN');
});

test('a bad option is reported with the option name', () => {
  expect(() => resolveOptions({ tableName: 't', maxEntries: 0 }, {})).toThrow('`maxEntries` must be a number of at least 1, got 0');
});
