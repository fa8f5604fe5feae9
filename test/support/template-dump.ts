/**
 * Jest setup (setupFilesAfterEnv): when PROMPT_SERVING_TEMPLATE_DIR is set (`npm test` sets it), every template a
 * test synthesizes with `Template.fromStack` is also written there, once per distinct content, for cfn-lint
 * (scripts/cfn-lint.sh). Without the variable, nothing changes.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';

const dir = process.env.PROMPT_SERVING_TEMPLATE_DIR;
if (dir) {
  const fromStack = Template.fromStack.bind(Template);
  Template.fromStack = (...args: Parameters<typeof Template.fromStack>): Template => {
    const template = fromStack(...args);
    const json = JSON.stringify(template.toJSON(), null, 1);
    const hash = crypto.createHash('sha256').update(json).digest('hex').slice(0, 12);
    const testFile = path.basename(expect.getState().testPath ?? 'unknown').replace(/\.test\.ts$/, '');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `ts-${testFile}-${hash}.template.json`), json);
    return template;
  };
}
