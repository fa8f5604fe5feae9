import { Template } from 'aws-cdk-lib/assertions';
import { stack } from '../prompt-serving.integ';

/** Asset hashes change with every handler build; the template around them is what this snapshot pins. */
const ASSET_HASH = /[0-9a-f]{64}(\.zip)/g;

test('the integration app synthesizes to the committed snapshot', () => {
  // GIVEN / WHEN
  const template = JSON.stringify(Template.fromStack(stack).toJSON()).replace(ASSET_HASH, '<asset hash>$1');
  // THEN
  expect(JSON.parse(template)).toMatchSnapshot();
});
