/**
 * Cache-safe CHAT rendering: two renders with different variables serialise to the same bytes up to
 * and including the last cache point before the first variable, and those bytes are the stored template's; key order
 * is kept exactly. The prompt comes from a real prompt file (the directory source's parser), through DynamoDB Local.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { publish } from './fixtures';
import { ChatPrompt, PromptClient, render } from '../../src/runtime';
import { parsePromptFile } from '../../src/sync/sources/directory';
import { createServingTable, deleteTable, localDynamoDBClient } from '../support/table';

const FILE = [
  'system:',
  '  - text: You answer questions about the handbook below. Cite its sections.',
  '    zeta: kept in this order',
  '    alpha: 1',
  '  - cachePoint: { type: default }',
  'messages:',
  '  - role: user',
  '    content:',
  '      - "Handbook (long, fixed): {not a placeholder} ... section 1 ... section 99"',
  '      - cachePoint: { type: default }',
  '      - "Customer {{customer}} asks: {{question}}"',
  '  - role: assistant',
  '    content: "Noted."',
  '',
].join('\n');

let ddb: DynamoDBClient;
let table: string;
let prompt: ChatPrompt;

beforeAll(async () => {
  ddb = localDynamoDBClient();
  table = await createServingTable(ddb);
  const parsed = parsePromptFile('handbook.yaml', 'handbook', Buffer.from(FILE));
  await publish(ddb, table, 'handbook', 1, parsed.content);
  const read = await new PromptClient({ tableName: table, dynamoDBClient: ddb }).getPrompt('handbook');
  if (read.templateType !== 'CHAT') throw new Error('expected CHAT');
  prompt = read;
});

afterAll(async () => {
  await deleteTable(ddb, table);
  ddb.destroy();
});

/** The Converse request as the SDK serialises it: system before messages. */
const request = (r: { system: unknown; messages: unknown }) => JSON.stringify({ system: r.system, messages: r.messages });

test('everything up to the last cache point before the first variable is byte-identical across renders and equals the template', () => {
  // GIVEN the stored template, serialised the same way, and where its first variable and the cache point before it sit
  const template = request({ system: prompt.system, messages: prompt.messages });
  const firstVariable = template.indexOf('{{');
  const lastCachePoint = template.lastIndexOf('{"cachePoint":{"type":"default"}}', firstVariable);
  const cut = lastCachePoint + '{"cachePoint":{"type":"default"}}'.length;
  expect(lastCachePoint).toBeGreaterThan(0);
  // WHEN
  const a = request(render(prompt, { customer: 'Ana', question: 'Where is section 4?' }));
  const b = request(render(prompt, { customer: 'Bo {{question}}', question: '\u{1F600}'.repeat(1000) }));
  // THEN
  expect(a.slice(0, cut)).toBe(template.slice(0, cut));
  expect(b.slice(0, cut)).toBe(template.slice(0, cut));
  expect(a.slice(cut)).not.toBe(b.slice(cut));
  expect(b).toContain('Customer Bo {{question}} asks: ');
});

/** Every object's keys, in order, depth first. */
function keyOrder(value: unknown, out: string[][] = []): string[][] {
  if (Array.isArray(value)) {
    for (const v of value) keyOrder(v, out);
  } else if (value !== null && typeof value === 'object') {
    out.push(Object.keys(value));
    for (const v of Object.values(value)) keyOrder(v, out);
  }
  return out;
}

test('key order is exactly the served copy\'s, in every object of system and messages', () => {
  // WHEN
  const out = render(prompt, { customer: 'Ana', question: 'q' });
  // THEN (DynamoDB maps do not keep the file's key order; render keeps the order of the copy it renders, and the
  // AWS SDK writes Converse shapes in its own member order, so the request bytes do not depend on it)
  expect(keyOrder(out.system)).toEqual(keyOrder(prompt.system));
  expect(keyOrder(out.messages)).toEqual(keyOrder(prompt.messages));
  expect(JSON.stringify(out.system)).toBe(JSON.stringify(prompt.system));
});
