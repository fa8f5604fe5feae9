import * as path from 'node:path';
import { Lazy } from 'aws-cdk-lib';
import { FIXTURE_PROMPTS, tempDirectory } from './util';
import { PromptSource } from '../../src';

describe('PromptSource.bedrock', () => {
  test.each([0, -1, 10.5, 11])('throws if maxRequestsPerSecond is %d', (maxRequestsPerSecond) => {
    // WHEN / THEN
    expect(() => PromptSource.bedrock({ maxRequestsPerSecond })).toThrow(
      `\`maxRequestsPerSecond\` must be greater than 0 and at most 10, got ${maxRequestsPerSecond}. `
      + 'Bedrock allows 10 prompt requests per second per account and Region, shared by every caller');
  });

  test('accepts the whole quota and fractions of a request per second', () => {
    // WHEN / THEN
    expect(() => PromptSource.bedrock({ maxRequestsPerSecond: 10 })).not.toThrow();
    expect(() => PromptSource.bedrock({ maxRequestsPerSecond: 0.5 })).not.toThrow();
  });

  test('throws if promptIds is empty', () => {
    // WHEN / THEN
    expect(() => PromptSource.bedrock({ promptIds: [] }))
      .toThrow('`promptIds` must list at least one prompt id, got []. Omit `promptIds` to serve every prompt');
  });

  test('throws if promptIds holds an ARN instead of an id', () => {
    // GIVEN
    const arn = 'arn:aws:bedrock:eu-west-1:123456789012:prompt/PROMPT0001';
    // WHEN / THEN
    expect(() => PromptSource.bedrock({ promptIds: [arn] })).toThrow(
      `\`promptIds\` must hold Bedrock prompt ids (10 letters or digits), got '${arn}'. `
      + 'Pass the id (the last part of the prompt ARN), not the ARN or the name');
  });

  test('throws if promptIds is a list token', () => {
    // GIVEN
    const promptIds = Lazy.list({ produce: () => ['PROMPT0001'] });
    // WHEN / THEN
    expect(() => PromptSource.bedrock({ promptIds })).toThrow(
      /^`promptIds` must be a list written in the app, so each prompt's ARN can be scoped, got .*\. Its entries may be tokens, such as `CfnPrompt.attrId`$/);
  });

  test('accepts prompt ids only known at deploy time', () => {
    // WHEN / THEN
    expect(() => PromptSource.bedrock({ promptIds: [Lazy.string({ produce: () => 'PROMPT0001' })] })).not.toThrow();
  });
});

describe('PromptSource.fromDirectory', () => {
  test('throws if the directory does not exist', () => {
    // GIVEN
    const missing = path.join(FIXTURE_PROMPTS, 'missing');
    // WHEN / THEN
    expect(() => PromptSource.fromDirectory(missing)).toThrow(
      `\`PromptSource.fromDirectory(path)\` must be an existing directory, got '${missing}'. `
      + 'Create it, or pass the folder that holds your prompt files (relative paths start at the CDK app\'s working directory)');
  });

  test('throws if the path is a file', () => {
    // GIVEN
    const file = path.join(FIXTURE_PROMPTS, 'greeting.md');
    // WHEN / THEN
    expect(() => PromptSource.fromDirectory(file))
      .toThrow(`\`PromptSource.fromDirectory(path)\` must be a directory, got '${file}'. Pass the folder that holds this file`);
  });

  test('throws if the directory holds no prompt file the sync would read', () => {
    // GIVEN
    const directory = tempDirectory({ 'README.md': '# prompts', 'notes.txt': 'todo', '_draft.md': 'later', '.hidden.md': 'x' });
    // WHEN / THEN
    expect(() => PromptSource.fromDirectory(directory)).toThrow(
      `\`PromptSource.fromDirectory(path)\` must contain at least one .md, .yaml, .yml, .json prompt file, got '${directory}'. `
      + 'Add a prompt file such as greeting.md (README.md and names starting with \'.\' or \'_\' do not count)');
  });

  test.each(['p.json', 'p.yaml', 'p.yml', 'p.md', 'nested/p.MD'])('accepts a directory holding only %s', (file) => {
    // GIVEN
    const directory = tempDirectory({ [file]: file.endsWith('.json') ? '{"text": "hi"}' : 'text: hi' });
    // WHEN / THEN
    expect(() => PromptSource.fromDirectory(directory)).not.toThrow();
  });
});
