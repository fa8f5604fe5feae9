import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { PromptServingTable, PromptServingTableProps, PromptSource } from '../../src';

/** A small prompts-as-code directory checked into the repository. */
export const FIXTURE_PROMPTS = path.join(__dirname, 'fixtures', 'prompts');

/** A stack in a fixed environment, so ARNs in assertions are predictable. */
export function newStack(): Stack {
  return new Stack(new App(), 'Stack', { env: { account: '123456789012', region: 'eu-west-1' } });
}

/** A `PromptServingTable` with a Bedrock source unless `props` say otherwise. */
export function newServingTable(stack: Stack, props: Partial<PromptServingTableProps> = {}): PromptServingTable {
  return new PromptServingTable(stack, 'Prompts', { source: PromptSource.bedrock(), ...props });
}

/** Synthesizes a default `PromptServingTable` with `props` and returns the template. */
export function synth(props: Partial<PromptServingTableProps> = {}): Template {
  const stack = newStack();
  newServingTable(stack, props);
  return Template.fromStack(stack);
}

/** A fresh temporary directory holding `files` (relative path → content). */
export function tempDirectory(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-serving-'));
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content);
  }
  return dir;
}

/** The one resource of `type` in the template, failing unless there is exactly one. */
export function onlyResource(template: Template, type: string): { Properties: Record<string, any>; [key: string]: any } {
  const resources = Object.values(template.findResources(type));
  expect(resources).toHaveLength(1);
  return resources[0] as { Properties: Record<string, any> };
}
