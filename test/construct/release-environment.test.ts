/**
 * The grants `grantRelease` records live in the release function's environment, which Lambda limits to 4 KB: too
 * many fail at synth with the fix, and a principal's grants are recorded once.
 */
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { newServingTable, newStack } from './util';

function scopesOf(template: Template, stack: ReturnType<typeof newStack>): unknown {
  const fns = template.findResources('AWS::Lambda::Function');
  const id = Object.keys(fns).find((k) => k.startsWith('PromptsGovernanceReleaseFunction'))!;
  return stack.resolve(fns[id].Properties.Environment.Variables.PROMPT_SERVING_RELEASE_SCOPES);
}

test('40 label-scoped grants to 40 roles fail at synth naming grantRelease, the size, the 4 KB limit and the fix', () => {
  // GIVEN
  const stack = newStack();
  const prompts = newServingTable(stack, { governance: {} });

  // WHEN
  for (let i = 0; i < 40; i++) {
    prompts.grantRelease(new iam.Role(stack, `Team${i}Releaser`, { assumedBy: new iam.AccountRootPrincipal() }), { labels: [`team-${i}`] });
  }

  // THEN
  expect(() => Template.fromStack(stack)).toThrow(
    /`grantRelease`: the release function's environment would be about \d{4} bytes with the 40 grants it records \(40 scoped by label, each naming its grantee's ARN\), over Lambda's limit of 4 KB \(4096 bytes\), so the deploy would fail\. Record fewer principals: grant the labels to one role that the callers assume/);
});

test('a role ARN is counted at its deployed length: 30 roles with short names fit, 30 with 60-character names do not', () => {
  // GIVEN
  const withNames = (name: (i: number) => string): ReturnType<typeof newStack> => {
    const stack = newStack();
    const prompts = newServingTable(stack, { governance: {} });
    // WHEN
    for (let i = 0; i < 30; i++) {
      prompts.grantRelease(new iam.Role(stack, `R${i}`, { assumedBy: new iam.AccountRootPrincipal(), roleName: name(i) }), { labels: ['production'] });
    }
    return stack;
  };

  // THEN
  expect(() => Template.fromStack(withNames((i) => `r-${i}`))).not.toThrow();
  expect(() => Template.fromStack(withNames((i) => `release-manager-${i}`.padEnd(60, 'x')))).toThrow(/over Lambda's limit of 4 KB/);
});

test('a principal granted one label per call is recorded once, with every label', () => {
  // GIVEN
  const stack = newStack();
  const prompts = newServingTable(stack, { governance: {} });
  const pipeline = iam.Role.fromRoleArn(stack, 'Pipeline', 'arn:aws:iam::123456789012:role/pipeline');

  // WHEN
  for (let i = 0; i < 40; i++) prompts.grantRelease(pipeline, { labels: [`team-${i}`] });
  prompts.grantRelease(pipeline);
  prompts.grantRelease(pipeline);

  // THEN
  const labels = Array.from({ length: 40 }, (_, i) => `team-${i}`);
  expect(JSON.parse(scopesOf(Template.fromStack(stack), stack) as string)).toEqual([
    { principal: 'arn:aws:iam::123456789012:role/pipeline', labels },
    { principal: 'arn:aws:iam::123456789012:role/pipeline', labels: '*' },
  ]);
});
