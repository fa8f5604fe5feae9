import { L2UnavailableError, loadRedis, redisLoadError } from '../../src/runtime/valkey';

test('node-redis missing from the function: a clear error naming the fix, never thrown at a read', async () => {
  // GIVEN a function without node-redis (a module name that cannot be resolved stands in for it)
  // WHEN the adapter tries to load it twice
  const first = loadRedis('redis-not-installed-here');
  await expect(first).rejects.toThrow(L2UnavailableError);
  // THEN the error names the fix (the reader layer, or node-redis beside the bundle); the ERROR line and the metric
  // are the client's, once per client (test/deployed/loud-failure.test.ts)
  await expect(first).rejects.toThrow(/reader layer.*nodeModules: \['redis'\]/);
  await expect(loadRedis('redis-not-installed-here')).rejects.toThrow(/cannot be loaded/);
  expect(redisLoadError()?.message).toMatch(/cannot be loaded/);
});

test('node-redis present: the module is loaded at run time and cached', async () => {
  const a = await loadRedis();
  expect(typeof a.createClient).toBe('function');
  expect(await loadRedis()).toBe(a);
});
