/**
 * Which AWS SDK failures are worth retrying, in one place for every part that calls AWS (the sync, the admin
 * API, the runtime client). Only a failure a later attempt can get past counts: throttling, a server error,
 * no answer at all. An answer that came back and cannot be used (a malformed body, a value DynamoDB rejects,
 * a 4xx) fails the same way every time, so the sync reports it rather than retrying it into the dead-letter
 * queue.
 */

/** Errors of a call that got no answer at all (a later attempt may get one). */
const NETWORK_ERROR_NAMES: ReadonlySet<string> = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'NetworkingError']);
const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH',
]);
/** Service error names that mean "slow down" (Bedrock, DynamoDB). */
export const THROTTLING_ERROR_NAMES: ReadonlySet<string> = new Set([
  'ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded',
]);
/** Service error names that mean "try again" (Bedrock, DynamoDB): throttling, server-side failures, transaction races. */
const TRANSIENT_ERROR_NAMES: ReadonlySet<string> = new Set([
  ...THROTTLING_ERROR_NAMES, 'InternalServerError', 'InternalServerException', 'ServiceUnavailableException',
  'TransactionConflictException', 'TransactionInProgressException',
]);

/** A throttling error by name, or any answer with HTTP status 429. */
export function isThrottling(error: unknown): boolean {
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } } | undefined;
  return THROTTLING_ERROR_NAMES.has(String(e?.name)) || e?.$metadata?.httpStatusCode === 429;
}

/** Throttling, a server error (5xx) or a network failure: a later attempt may succeed. */
export function isTransient(error: unknown): boolean {
  if (isThrottling(error)) return true;
  const e = error as { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: number } } | undefined;
  if (TRANSIENT_ERROR_NAMES.has(String(e?.name))) return true;
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined) return status >= 500;
  return NETWORK_ERROR_NAMES.has(String(e?.name)) || NETWORK_ERROR_CODES.has(String(e?.code));
}
