import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { FIXTURE_PROMPTS, newServingTable, onlyResource, synth, tempDirectory } from './util';
import { PromptSource } from '../../src';

function fingerprintOf(directory: string): string {
  return onlyResource(synth({ source: PromptSource.fromDirectory(directory) }), 'Custom::PromptSync').Properties.ContentFingerprint;
}

describe('PromptSource.fromDirectory', () => {
  test('tells the sync function to read the directory at /opt/prompts', () => {
    // WHEN
    const template = synth({ source: PromptSource.fromDirectory(FIXTURE_PROMPTS) });
    // THEN
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          PROMPT_SERVING_SOURCE: 'directory',
          PROMPT_SERVING_SOURCE_OPTIONS: '{"path":"/opt/prompts"}',
        }),
      },
      Layers: [{ Ref: Match.stringLikeRegexp('^PromptsPromptsLayer') }],
    });
  });

  test('ships exactly the prompt files, under prompts/ in the layer', () => {
    // GIVEN
    const directory = tempDirectory({
      'greeting.md': 'Hello {{name}}',
      'support/triage.yaml': 'text: Triage {{ticket}}',
      'README.md': '# not a prompt',
      'notes.txt': 'not a prompt',
      '.draft.md': 'hidden',
      '_partials/footer.md': 'skipped',
    });
    const app = new App();
    const stack = new Stack(app, 'Stack');
    newServingTable(stack, { source: PromptSource.fromDirectory(directory) });
    // WHEN
    const assembly = app.synth();
    const assetPaths = fs.readdirSync(assembly.directory)
      .filter((entry) => entry.startsWith('asset.'))
      .map((entry) => path.join(assembly.directory, entry))
      .filter((dir) => fs.existsSync(path.join(dir, 'prompts')));
    // THEN
    expect(assetPaths).toHaveLength(1);
    const [assetPath] = assetPaths;
    expect(fs.readdirSync(assetPath)).toEqual(['prompts']);
    expect(fs.readdirSync(path.join(assetPath, 'prompts')).sort()).toEqual(['greeting.md', 'support']);
    expect(fs.readdirSync(path.join(assetPath, 'prompts', 'support'))).toEqual(['triage.yaml']);
  });

  test('fingerprints the content into the deploy-time sync, so a changed directory re-syncs', () => {
    // GIVEN
    const before = fingerprintOf(tempDirectory({ 'greeting.md': 'Hello {{name}}' }));
    // WHEN
    const after = fingerprintOf(tempDirectory({ 'greeting.md': 'Hi {{name}}' }));
    // THEN
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(after).not.toEqual(before);
  });

  test('the fingerprint depends on file names as well as content', () => {
    // WHEN
    const greeting = fingerprintOf(tempDirectory({ 'greeting.md': 'Hello {{name}}' }));
    const welcome = fingerprintOf(tempDirectory({ 'welcome.md': 'Hello {{name}}' }));
    // THEN
    expect(welcome).not.toEqual(greeting);
  });

  test('the fingerprint ignores files the sync does not read and where the directory is', () => {
    // WHEN
    const plain = fingerprintOf(tempDirectory({ 'greeting.md': 'Hello {{name}}' }));
    const withExtras = fingerprintOf(tempDirectory({
      'greeting.md': 'Hello {{name}}',
      'README.md': 'docs',
      '.DS_Store': 'x',
      '_draft.md': 'later',
    }));
    // THEN
    expect(withExtras).toEqual(plain);
  });

  test('needs no Bedrock permissions and no CloudTrail rule', () => {
    // WHEN
    const template = synth({ source: PromptSource.fromDirectory(FIXTURE_PROMPTS) });
    // THEN
    template.resourceCountIs('AWS::IAM::Policy', 1);
    template.resourceCountIs('AWS::Events::Rule', 1);
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(15 minutes)' });
  });

  test('the deploy-time sync names the directory source', () => {
    // WHEN
    const template = synth({ source: PromptSource.fromDirectory(FIXTURE_PROMPTS) });
    // THEN
    template.hasResourceProperties('Custom::PromptSync', {
      Source: 'directory',
      SourceOptions: '{"path":"/opt/prompts"}',
      ContentFingerprint: Match.stringLikeRegexp('^[0-9a-f]{64}$'),
    });
  });

  test('a relative path starts at the working directory', () => {
    // GIVEN
    const relative = path.relative(process.cwd(), FIXTURE_PROMPTS);
    // WHEN
    const fromRelative = fingerprintOf(relative);
    // THEN
    expect(fromRelative).toEqual(fingerprintOf(FIXTURE_PROMPTS));
  });
});
