/** render() of TEXT and CHAT prompts read from DynamoDB Local. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { chatContent, publish, textContent } from './fixtures';
import { ChatPrompt, PromptClient, PromptRenderError, PromptServingError, TextPrompt, render } from '../../src/runtime';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

let ddb: DynamoDBClient;
let table: string;
let prompts: PromptClient;

beforeAll(async () => {
  ddb = localDynamoDBClient();
  table = await createServingTable(ddb);
  await publish(ddb, table, 'text', 1, textContent('Dear {{ name }}, your order {{order.id}} ships in {{days}} days. {{name}}!'));
  await publish(ddb, table, 'chat', 1, chatContent('You support {{product}}.', ['Hi, I am {{name}}.', '{{question}}']));
  prompts = new PromptClient({ tableName: table, dynamoDBClient: ddb });
});

afterAll(async () => {
  await deleteTable(ddb, table);
  ddb.destroy();
});

async function text(): Promise<TextPrompt> {
  const prompt = await prompts.getPrompt('text');
  if (prompt.templateType !== 'TEXT') throw new Error('expected TEXT');
  return prompt;
}

async function chat(): Promise<ChatPrompt> {
  const prompt = await prompts.getPrompt('chat');
  if (prompt.templateType !== 'CHAT') throw new Error('expected CHAT');
  return prompt;
}

test('TEXT: fills every placeholder, spaces inside braces allowed, numbers printed', async () => {
  // WHEN
  const out = render(await text(), { 'name': 'Ana', 'order.id': 'A-17', 'days': 3 });
  // THEN
  expect(out).toBe('Dear Ana, your order A-17 ships in 3 days. Ana!');
});

test('TEXT: values are inserted verbatim, never scanned for placeholders again', async () => {
  // WHEN
  const out = render(await text(), { 'name': '{{days}}', 'order.id': '$&', 'days': 1 });
  // THEN
  expect(out).toBe('Dear {{days}}, your order $& ships in 1 days. {{days}}!');
});

/** The error `fn` throws. */
function thrown(fn: () => unknown): PromptRenderError {
  try {
    fn();
  } catch (e) {
    return e as PromptRenderError;
  }
  throw new Error('expected a throw');
}

test('TEXT: throws PromptRenderError naming every missing variable', async () => {
  // GIVEN
  const prompt = await text();
  // WHEN
  const error = thrown(() => render(prompt, { name: 'Ana', days: null }));
  // THEN
  expect(error).toBeInstanceOf(PromptRenderError);
  expect(error.name).toBe('PromptRenderError');
  expect(error.message).toBe("cannot render prompt 'text' version 1: missing variables 'order.id', 'days'");
  expect(error.missingVariables).toEqual(['order.id', 'days']);
  expect(error.version).toBe(1);
});

test('TEXT: inherited object properties are not values', async () => {
  // GIVEN
  await publish(ddb, table, 'proto', 1, textContent('{{constructor}} {{toString}}'));
  const prompt = await prompts.getPrompt('proto');
  // THEN
  expect(thrown(() => render(prompt, {})).missingVariables).toEqual(['constructor', 'toString']);
});

test('CHAT: fills system and messages, returning new arrays and leaving the prompt unchanged', async () => {
  // GIVEN
  const prompt = await chat();
  // WHEN
  const out = render(prompt, { product: 'Widgets', name: 'Ana', question: 'Where is my order?' });
  // THEN
  expect(out).toEqual({
    system: [{ text: 'You support Widgets.' }],
    messages: [
      { role: 'user', content: [{ text: 'Hi, I am Ana.' }] },
      { role: 'user', content: [{ text: 'Where is my order?' }] },
    ],
  });
  expect(prompt.messages[0]).toEqual({ role: 'user', content: [{ text: 'Hi, I am {{name}}.' }] });
});

test('CHAT: throws PromptRenderError naming every missing variable across system and messages', async () => {
  // GIVEN
  const prompt = await chat();
  // WHEN
  const error = thrown(() => render(prompt, { name: 'Ana' }));
  // THEN
  expect(error).toBeInstanceOf(PromptRenderError);
  expect(error.missingVariables).toEqual(['product', 'question']);
});

test('served prompts are frozen: one caller cannot change what the next is served', async () => {
  // GIVEN
  const prompt = await chat();
  // THEN
  expect(() => { (prompt.messages as unknown[]).push('x'); }).toThrow(TypeError);
  expect(() => { (prompt.system[0] as { text: string }).text = 'x'; }).toThrow(TypeError);
});

describe('values JSON cannot carry (the fixtures cannot either)', () => {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  class Custom { readonly x = 1; }
  test.each([
    ['NaN', Number.NaN], ['Infinity', Number.POSITIVE_INFINITY], ['-Infinity', Number.NEGATIVE_INFINITY], ['a bigint', BigInt(1)],
    ['a function', () => 'x'], ['a symbol', Symbol('x')], ['a Date', new Date(0)], ['a Map', new Map()], ['an object', { k: 1 }],
    ['an array', [1]], ['a class instance', new Custom()],
  ])('%s is an invalid value', async (_what, value) => {
    // GIVEN
    const prompt = await text();
    // WHEN
    // `as never`: what untyped code (or a cast) can pass; the type refuses it at compile time
    const error = thrown(() => render(prompt, { 'name': value as never, 'order.id': 'A', 'days': 1 }));
    // THEN
    expect(error.invalid).toEqual(['name']);
    expect(error.missing).toEqual([]);
  });

  test.each([
    ['NaN inside', { x: Number.NaN }], ['a Date inside', { d: new Date(0) }], ['a cycle', cycle], ['a class instance', new Custom()],
    ['a function inside', [() => 1]],
  ])('%s: invalid even for a JSON variable', async (_what, value) => {
    // GIVEN
    const prompt = await text();
    // WHEN
    const error = thrown(() => render(prompt, { 'name': value as never, 'order.id': 'A', 'days': 1 }, { jsonVariables: ['name'] }));
    // THEN
    expect(error.invalid).toEqual(['name']);
  });

  test('a JSON variable with an undefined member drops it (as JSON.stringify does)', async () => {
    // GIVEN
    const prompt = await text();
    // WHEN
    const out = render(prompt, { 'name': { b: 1, a: undefined } as never, 'order.id': 'A', 'days': 1 }, { jsonVariables: ['name'] });
    // THEN
    expect(out).toBe('Dear {"b":1}, your order A ships in 1 days. {"b":1}!');
  });

  test('a JSON variable with a sparse array renders its holes as null (as JSON.stringify does, and Python\'s None)', async () => {
    // GIVEN
    const prompt = await text();
    // eslint-disable-next-line no-sparse-arrays
    const sparse = [1, , 2, [, 'x'], { k: [,] }];
    // WHEN
    const out = render(prompt, { 'name': sparse as never, 'order.id': 'A', 'days': 1 }, { jsonVariables: ['name'] });
    // THEN valid JSON, the same text as JSON.stringify gives
    const expected = '[1,null,2,[null,"x"],{"k":[null]}]';
    expect(JSON.stringify(sparse)).toBe(expected);
    expect(out).toBe(`Dear ${expected}, your order A ships in 1 days. ${expected}!`);
  });
});

test('render is a function of the module: the prompt has no render method, and anything but a prompt is refused naming the fix', async () => {
  // GIVEN a served prompt
  const prompt = await text();
  // THEN it carries no render method (a reader that never renders bundles none of it)
  expect((prompt as unknown as { render?: unknown }).render).toBeUndefined();
  // AND render refuses what getPrompt did not return
  for (const notAPrompt of [undefined, null, {}, 'text']) {
    expect(() => render(notAPrompt as unknown as TextPrompt, {})).toThrow(PromptServingError);
    expect(() => render(notAPrompt as unknown as TextPrompt, {})).toThrow('render(prompt, variables) takes a prompt `getPrompt` returned as its first argument');
  }
});
