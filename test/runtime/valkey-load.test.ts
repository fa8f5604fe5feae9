import { L2UnavailableError, loadRedis } from '../../src/runtime/valkey';

test('node-redis missing from the function: a clear error naming the fix, logged once, never thrown at a read', async () => {
  // GIVEN a function bundle without node-redis (a module name that cannot be resolved stands in for it)
  const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
  // WHEN the adapter tries to load it twice
  const first = loadRedis('redis-not-installed-here');
  await expect(first).rejects.toThrow(L2UnavailableError);
  await expect(first).rejects.toThrow(/bundling: \{ nodeModules: \['redis'\] \}/);
  await expect(loadRedis('redis-not-installed-here')).rejects.toThrow(/cannot be loaded/);
  // THEN the reason is logged once, as one JSON line
  expect(warn).toHaveBeenCalledTimes(1);
  expect(JSON.parse(warn.mock.calls[0][0] as string)).toMatchObject({ level: 'WARN', logger: 'cdk-prompt-serving' });
  warn.mockRestore();
});

test('node-redis present: the module is loaded at run time and cached', async () => {
  const a = await loadRedis();
  expect(typeof a.createClient).toBe('function');
  expect(await loadRedis()).toBe(a);
});
