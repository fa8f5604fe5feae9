/** Options: defaults, environment overrides and the errors that name the bad input. */
import { EnvVars, PromptClient, PromptServingError } from '../../src/runtime';
import { resolveOptions } from '../../src/runtime/options';
import { Env } from '../../src/schema/env';

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

test('EnvVars names each option\'s variable as the type declares it, the table name\'s as the wire contract does', () => {
  expect(EnvVars).toEqual({
    tableName: Env.tableName,
    maxAgeSeconds: 'PROMPT_SERVING_MAX_AGE_SECONDS',
    maxEntries: 'PROMPT_SERVING_MAX_ENTRIES',
    notFoundMaxAgeSeconds: 'PROMPT_SERVING_NOT_FOUND_MAX_AGE_SECONDS',
    staleWhileRevalidateSeconds: 'PROMPT_SERVING_STALE_WHILE_REVALIDATE_SECONDS',
    staleIfErrorSeconds: 'PROMPT_SERVING_STALE_IF_ERROR_SECONDS',
    catalogMaxAgeSeconds: 'PROMPT_SERVING_CATALOG_MAX_AGE_SECONDS',
    requestTimeoutMs: 'PROMPT_SERVING_REQUEST_TIMEOUT_MS',
    maxAttempts: 'PROMPT_SERVING_MAX_ATTEMPTS',
    l2TimeoutMs: 'PROMPT_SERVING_L2_TIMEOUT_MS',
    l2ConnectTimeoutMs: 'PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS',
    epochPollIntervalMs: 'PROMPT_SERVING_EPOCH_POLL_INTERVAL_MS',
  });
  expect(Object.isFrozen(EnvVars)).toBe(true);
});
