/**
 * Why src/ddb-codec.ts is not `@aws-sdk/util-dynamodb`: the cases where the SDK's `marshall` / `unmarshall`
 * differ from what prompt content (JSON) needs, each run against the real package next to ours. If the SDK
 * changes so a case no longer differs, the matching test fails and the choice can be revisited.
 */
import { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { fromItem, toItem } from '../src/schema/ddb-codec';

describe('numbers beyond 2^53 (valid JSON numbers, e.g. in inference_config or additional model fields)', () => {
  const content = { inference_config: { maxTokens: 1e300, seed: 2 ** 60 } };

  test('the SDK refuses to marshall them, so the prompt could not sync', () => {
    expect(() => marshall(content)).toThrow(/greater than Number\.MAX_SAFE_INTEGER/);
  });

  test('ours writes them as JSON.parse gave them and reads back the same numbers', () => {
    const item = toItem(content);
    expect(item.inference_config).toEqual({ M: { maxTokens: { N: '1e+300' }, seed: { N: '1152921504606847000' } } });
    expect(fromItem(item)).toEqual(content);
  });

  test('reading a long integer: the SDK gives a BigInt that JSON.stringify cannot serialize; ours a number', () => {
    const item: Record<string, AttributeValue> = { n: { N: '123456789012345678901' } };
    expect(typeof unmarshall(item).n).toBe('bigint');
    expect(() => JSON.stringify(unmarshall(item))).toThrow(/BigInt/);
    expect(JSON.stringify(fromItem(item))).toBe('{"n":123456789012345680000}');
  });
});

test('sets: the SDK returns Set objects (JSON.stringify renders them as {}); ours returns lists', () => {
  const item: Record<string, AttributeValue> = { tags: { SS: ['a', 'b'] }, sizes: { NS: ['1', '2'] } };
  expect(JSON.stringify(unmarshall(item))).toBe('{"tags":{},"sizes":{}}');
  expect(fromItem(item)).toEqual({ tags: ['a', 'b'], sizes: [1, 2] });
});

test('undefined list members: the SDK drops them (later members move); ours keeps the position as NULL', () => {
  const value = { list: ['a', undefined, 'c'] };
  expect(marshall(value, { removeUndefinedValues: true }).list).toEqual({ L: [{ S: 'a' }, { S: 'c' }] });
  expect(toItem(value).list).toEqual({ L: [{ S: 'a' }, { NULL: true }, { S: 'c' }] });
});

test('where both agree (strings, numbers, booleans, null, lists, maps, binary), they produce the same items', () => {
  const value = { s: 'x', n: 1.5, b: true, z: null, l: [1, 'two'], m: { k: [] }, bin: new Uint8Array([1, 2]), gone: undefined };
  expect(toItem(value)).toEqual(marshall(value, { removeUndefinedValues: true }));
  expect(fromItem(toItem(value))).toEqual(unmarshall(marshall(value, { removeUndefinedValues: true })));
});
