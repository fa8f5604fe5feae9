/**
 * A reader scoped to some prompts (`promptIds`) of a cached table: the cache's reader user may read every key of
 * the table, so the scope would hold in DynamoDB only and the function would read every other prompt through the
 * cache. Refused at synth, naming the fix, before anything is changed.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { newCacheStack, newFunction } from './cache-util';
import { PromptCache, PromptServingTable, PromptSource } from '../../src';

describe('a prompt-scoped reader of a cached table', () => {
  test('is refused at synth, naming the function, the scope and the fix', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = new PromptServingTable(stack, 'Prompts', { source: PromptSource.bedrock(), cache: PromptCache.serverless({ vpc }) });
    const reader = newFunction(stack, 'Reader', vpc);
    // WHEN / THEN
    expect(() => prompts.addReader(reader, { promptIds: ['summarize'] })).toThrow(
      /addReader of Stack\/Reader with `promptIds` on Stack\/Prompts, which has a cache: .*every prompt of the table.*grantRead/s);
    const fn = Object.entries(Template.fromStack(stack).findResources('AWS::Lambda::Function')).find(([id]) => id.startsWith('Reader'))?.[1] as any;
    expect(fn.Properties.Environment).toBeUndefined();
    expect(fn.Properties.Layers).toBeUndefined();
  });

  test('the same scope without a cache, and an unscoped reader of a cached table, are fine', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const cached = new PromptServingTable(stack, 'Prompts', { source: PromptSource.bedrock(), cache: PromptCache.serverless({ vpc }) });
    const plain = new PromptServingTable(stack, 'Plain', { source: PromptSource.bedrock() });
    // WHEN / THEN
    expect(() => cached.addReader(newFunction(stack, 'All', vpc))).not.toThrow();
    expect(() => plain.addReader(newFunction(stack, 'Scoped', vpc), { promptIds: ['summarize'] })).not.toThrow();
  });
});
