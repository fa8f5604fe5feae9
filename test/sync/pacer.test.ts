import { backoffDelay, DEFAULT_MAX_DELAY_MS, RateLimiter, retryWithBackoff } from '../../src/write/pacer';

beforeEach(() => {
  jest.useFakeTimers();
});

afterEach(() => {
  jest.useRealTimers();
});

/** Starts `count` concurrent acquires and returns, once all are granted, the fake time of each grant. */
async function grantTimes(limiter: RateLimiter, count: number): Promise<number[]> {
  const start = performance.now();
  const times: number[] = [];
  const all = Promise.all(Array.from({ length: count }, () => limiter.acquire().then(() => times.push(performance.now() - start))));
  await jest.runAllTimersAsync();
  await all;
  return times;
}

describe('RateLimiter', () => {
  test('spaces concurrent callers evenly at the sustained rate, in call order', async () => {
    // GIVEN
    const limiter = new RateLimiter({ ratePerSecond: 5 });
    // WHEN
    const times = await grantTimes(limiter, 6);
    // THEN
    expect(times).toEqual([0, 200, 400, 600, 800, 1000]);
  });

  test('lets a burst start back to back after an idle period, but never more than the burst', async () => {
    // GIVEN
    const limiter = new RateLimiter({ ratePerSecond: 10, burst: 3 });
    await grantTimes(limiter, 3);
    // WHEN: idle long enough to refill far more than the bucket holds
    await jest.advanceTimersByTimeAsync(5_000);
    const times = await grantTimes(limiter, 5);
    // THEN
    expect(times).toEqual([0, 0, 0, 100, 200]);
  });

  test('rejects a rate or burst it cannot honour', () => {
    // THEN
    expect(() => new RateLimiter({ ratePerSecond: 0 })).toThrow(RangeError);
    expect(() => new RateLimiter({ ratePerSecond: Number.NaN })).toThrow(RangeError);
    expect(() => new RateLimiter({ ratePerSecond: 5, burst: 0.5 })).toThrow(RangeError);
  });
});

describe('backoffDelay', () => {
  test('draws from [0, base * 2^(retry-1)), capped at maxDelayMs', () => {
    // GIVEN
    const highest = () => 0.999999;
    const options = { baseDelayMs: 100, maxDelayMs: 1_000, random: highest };
    // THEN
    expect(backoffDelay(1, options)).toBe(99);
    expect(backoffDelay(3, options)).toBe(399);
    expect(backoffDelay(5, options)).toBe(999);
    expect(backoffDelay(1_000, options)).toBe(999);
    expect(backoffDelay(4, { ...options, random: () => 0 })).toBe(0);
    expect(backoffDelay(100, { random: highest })).toBeLessThan(DEFAULT_MAX_DELAY_MS);
    expect(() => backoffDelay(0)).toThrow(RangeError);
  });
});

describe('retryWithBackoff', () => {
  const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
  const isRetryable = (e: unknown) => e === throttled;

  test('retries retryable errors after the jittered delays until the operation succeeds', async () => {
    // GIVEN
    const attempts: number[] = [];
    const delays: number[] = [];
    const operation = async (attempt: number) => {
      attempts.push(attempt);
      if (attempt < 3) throw throttled;
      return 'done';
    };
    // WHEN
    const result = retryWithBackoff(operation, {
      maxAttempts: 5,
      isRetryable,
      baseDelayMs: 100,
      random: () => 0.5,
      onRetry: (_e, _retry, delayMs) => delays.push(delayMs),
    });
    await jest.advanceTimersByTimeAsync(149);
    const attemptsBeforeSecondDelayEnds = attempts.length;
    await jest.runAllTimersAsync();
    // THEN
    await expect(result).resolves.toBe('done');
    expect(attempts).toEqual([1, 2, 3]);
    expect(delays).toEqual([50, 100]);
    expect(attemptsBeforeSecondDelayEnds).toBe(2);
  });

  test('rethrows the last error once maxAttempts attempts failed', async () => {
    // GIVEN
    let calls = 0;
    // WHEN
    const result = retryWithBackoff(async () => { calls++; throw throttled; }, { maxAttempts: 4, isRetryable });
    const settled = expect(result).rejects.toBe(throttled);
    await jest.runAllTimersAsync();
    // THEN
    await settled;
    expect(calls).toBe(4);
  });

  test('rethrows a non-retryable error at once', async () => {
    // GIVEN
    const denied = new Error('AccessDenied');
    let calls = 0;
    // WHEN
    const result = retryWithBackoff(async () => { calls++; throw denied; }, { maxAttempts: 4, isRetryable });
    // THEN
    await expect(result).rejects.toBe(denied);
    expect(calls).toBe(1);
    expect(jest.getTimerCount()).toBe(0);
  });
});
