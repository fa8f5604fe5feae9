import { Duration } from 'aws-cdk-lib';
import { invalidProp, isUnresolved } from '../private/errors';
import type { PromptCacheOptions } from '../prompt-cache-options';

/** Lambda's event source mapping limits for DynamoDB streams. */
export const MAX_INVALIDATION_BATCH_SIZE = 10_000;
export const MAX_INVALIDATION_RETRY_ATTEMPTS = 10_000;
export const MIN_INVALIDATION_MAX_RECORD_AGE = Duration.minutes(1);
export const MAX_INVALIDATION_MAX_RECORD_AGE = Duration.days(7);

/** ElastiCache names (serverless cache names, replication group ids): lowercase, hyphens between, 1 to 40. */
const CACHE_NAME = /^[a-z](?:[a-z0-9]|-(?=[a-z0-9])){0,39}$/;
export const CACHE_NAME_RULE = 'be 1 to 40 lowercase letters, digits or hyphens, starting with a letter, '
  + 'without two hyphens in a row or a hyphen at the end';

export function validateCommonCacheOptions(options: PromptCacheOptions): void {
  validateWholeNumber('invalidationBatchSize', options.invalidationBatchSize, 1, MAX_INVALIDATION_BATCH_SIZE);
  validateWholeNumber('invalidationRetryAttempts', options.invalidationRetryAttempts, 0, MAX_INVALIDATION_RETRY_ATTEMPTS);
  const age = options.invalidationMaxRecordAge;
  if (age !== undefined && !isUnresolved(age)) {
    const ms = age.toMilliseconds();
    if (ms % 1000 !== 0 || ms < MIN_INVALIDATION_MAX_RECORD_AGE.toMilliseconds() || ms > MAX_INVALIDATION_MAX_RECORD_AGE.toMilliseconds()) {
      throw invalidProp('invalidationMaxRecordAge',
        `be whole seconds from ${MIN_INVALIDATION_MAX_RECORD_AGE.toHumanString()} to ${MAX_INVALIDATION_MAX_RECORD_AGE.toHumanString()}`, age,
        'Lambda keeps a stream record at most that long; an unbounded age would block the shard behind one poison record');
    }
  }
}

export function validateCacheName(prop: string, name: string | undefined): void {
  if (name !== undefined && !isUnresolved(name) && !CACHE_NAME.test(name)) {
    throw invalidProp(prop, CACHE_NAME_RULE, name);
  }
}

/** `prop` must be a whole number from `min` to `max` (inclusive) when set. */
export function validateWholeNumber(prop: string, value: number | undefined, min: number, max: number, hint?: string): void {
  if (value === undefined || isUnresolved(value)) {
    return;
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw invalidProp(prop, `be a whole number from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}`, value, hint);
  }
}
