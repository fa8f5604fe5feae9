import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { newServingTable, newStack, synth, tempDirectory } from './util';
import { PromptSource } from '../../src';

const GOOD = { 'greeting.md': 'Hello {{name}}' };

describe('prompt files are checked at synth', () => {
  test('a file that does not parse fails synth, naming the file and the reason', () => {
    // GIVEN
    const dir = tempDirectory({ ...GOOD, 'broken.yaml': 'text: [unclosed\n' });
    // THEN
    expect(() => PromptSource.fromDirectory(dir)).toThrow(/1 prompt file\(s\) cannot be synced:\n {2}broken\.yaml: .*(Flow sequence|unclosed|Missing)/i);
  });

  test('every bad file is listed, each with its own reason; good files are not', () => {
    // GIVEN
    const dir = tempDirectory({
      ...GOOD,
      'bad-type.yaml': 'template_type: VOICE\ntext: hi\n',
      'empty-chat.json': '{"messages": []}',
      'twin.yaml': 'id: greeting\ntext: again\n',
    });
    // WHEN
    let message = '';
    try {
      PromptSource.fromDirectory(dir);
    } catch (err) {
      message = (err as Error).message;
    }
    // THEN
    expect(message).toContain('3 prompt file(s) cannot be synced');
    expect(message).toContain('bad-type.yaml: `template_type` must be TEXT or CHAT, got "VOICE"');
    expect(message).toContain('empty-chat.json: a CHAT prompt needs a non-empty `messages` list');
    expect(message).toContain('twin.yaml: prompt id "greeting" is already used by greeting.md');
    expect(message).not.toMatch(/^ {2}greeting\.md/m);
    expect(message).toContain('npx cdk-prompt-serving validate');
    expect(message).toContain('`allowInvalidPromptFiles: true`');
  });

  test('an oversized prompt fails synth with the item limit', () => {
    // GIVEN
    const dir = tempDirectory({ ...GOOD, 'huge.md': 'x'.repeat(410 * 1024) });
    // THEN
    expect(() => PromptSource.fromDirectory(dir)).toThrow(/huge\.md: item is \d+ bytes, over DynamoDB's 409600-byte/);
  });

  test('allowInvalidPromptFiles deploys the rest and warns once per bad file', () => {
    // GIVEN
    const dir = tempDirectory({ ...GOOD, 'broken.json': '{ nope' });
    const stack = newStack();
    // WHEN
    newServingTable(stack, { source: PromptSource.fromDirectory(dir, { allowInvalidPromptFiles: true }) });
    // THEN
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('broken\\.json: .*allowInvalidPromptFiles'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0].entry.data).toMatch(/\[ack: cdk-prompt-serving:invalidPromptFile\]/);
  });

  test('a valid directory synthesizes without warnings about prompt files', () => {
    const dir = tempDirectory(GOOD);
    const stack = newStack();
    newServingTable(stack, { source: PromptSource.fromDirectory(dir) });
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('invalidPromptFile'))).toEqual([]);
    expect(synth({ source: PromptSource.fromDirectory(dir) }).resourceCountIs('AWS::Lambda::LayerVersion', 1)).toBeUndefined();
  });
});

describe('a prompt file cannot set an attribute the table, the release path or the readers give meaning to', () => {
  test.each([
    ['rollout', 'rollout:\n  candidate_version: 2\n  percent_bp: 10000'],
    ['expires_at', 'expires_at: 1'],
    ['source_deleted_at', 'source_deleted_at: "2026-01-01T00:00:00Z"'],
    ['label', 'label: production'],
  ])('front matter setting `%s` fails synth, naming the file and the key', (key, yaml) => {
    // GIVEN
    const dir = tempDirectory({ ...GOOD, 'hostile.md': `---\n${yaml}\n---\nHello {{name}}` });
    // THEN
    expect(() => PromptSource.fromDirectory(dir)).toThrow(new RegExp(`1 prompt file\\(s\\) cannot be synced:\\n {2}hostile\\.md: the key \`${key}\` is reserved`));
  });

  test('with allowInvalidPromptFiles, the file is left out with a warning naming the file and the key', () => {
    // GIVEN
    const dir = tempDirectory({ ...GOOD, 'hostile.yaml': 'text: Hi\nmovedBy: me\n' });
    const stack = newStack();
    // WHEN
    newServingTable(stack, { source: PromptSource.fromDirectory(dir, { allowInvalidPromptFiles: true }) });
    // THEN
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('hostile\\.yaml: the key `movedBy` \\(a spelling of `moved_by`\\) is reserved'))).toHaveLength(1);
  });
});
