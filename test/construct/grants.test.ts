import { Lazy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { newServingTable, newStack } from './util';
import { PromptServingTable } from '../../src';

const TABLE_ARN = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsTable'), 'Arn'] };
const KEY_ARN = { 'Fn::GetAtt': [Match.stringLikeRegexp('^Key'), 'Arn'] };

interface Fixture {
  readonly stack: Stack;
  readonly prompts: PromptServingTable;
  readonly role: iam.Role;
  readonly key?: kms.Key;
}

function fixture(options: { encrypted?: boolean } = {}): Fixture {
  const stack = newStack();
  const key = options.encrypted ? new kms.Key(stack, 'Key') : undefined;
  const prompts = newServingTable(stack, { encryptionKey: key });
  const role = new iam.Role(stack, 'Reader', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
  return { stack, prompts, role, key };
}

/** The statements of the policy CDK attaches to the `Reader` role. */
function expectReaderPolicy(stack: Stack, statements: unknown[]): void {
  Template.fromStack(stack).hasResourceProperties('AWS::IAM::Policy', {
    Roles: [{ Ref: Match.stringLikeRegexp('^Reader') }],
    PolicyDocument: { Statement: statements },
  });
}

describe('grantRead', () => {
  test('grants GetItem, BatchGetItem and Query on the table, and nothing else', () => {
    // GIVEN
    const { stack, prompts, role } = fixture();
    // WHEN
    const grant = prompts.grantRead(role);
    // THEN
    expect(grant.success).toBe(true);
    expectReaderPolicy(stack, [{
      Effect: 'Allow',
      Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
      Resource: TABLE_ARN,
    }]);
  });

  test('adds kms:Decrypt when the table has a customer managed key', () => {
    // GIVEN
    const { stack, prompts, role } = fixture({ encrypted: true });
    // WHEN
    prompts.grantRead(role);
    // THEN
    expectReaderPolicy(stack, [
      { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'], Resource: TABLE_ARN },
      { Effect: 'Allow', Action: 'kms:Decrypt', Resource: KEY_ARN },
    ]);
  });

  test('with promptIds, restricts the partition keys to those prompts and the catalog', () => {
    // GIVEN
    const { stack, prompts, role } = fixture();
    // WHEN
    prompts.grantRead(role, { promptIds: ['support/triage', 'summarize', 'summarize'] });
    // THEN
    expectReaderPolicy(stack, [{
      Effect: 'Allow',
      Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
      Resource: TABLE_ARN,
      Condition: {
        'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['support/triage', 'summarize', '#catalog'] },
      },
    }]);
  });

  test('throws if promptIds is empty', () => {
    // GIVEN
    const { prompts, role } = fixture();
    // WHEN / THEN
    expect(() => prompts.grantRead(role, { promptIds: [] }))
      .toThrow('`promptIds` must list at least one prompt id, got []. Omit `promptIds` to grant every prompt');
  });

  test.each(['#catalog', ''])('throws if promptIds holds the reserved or empty id %j', (id) => {
    // GIVEN
    const { prompts, role } = fixture();
    // WHEN / THEN
    expect(() => prompts.grantRead(role, { promptIds: [id] })).toThrow(
      `\`promptIds\` must hold prompt ids (1 to 1,024 bytes of UTF-8, not starting with '#'), got '${id}'. `
      + 'The catalog item #catalog is always included');
  });

  test('throws if promptIds is a list token', () => {
    // GIVEN
    const { prompts, role } = fixture();
    // WHEN / THEN
    expect(() => prompts.grantRead(role, { promptIds: Lazy.list({ produce: () => ['summarize'] }) })).toThrow(
      /^`promptIds` must be a list written in the app, so the catalog id can be added to it, got .*\. Its entries may be tokens$/);
  });

  test('sets no environment variable', () => {
    // GIVEN
    const stack = newStack();
    const prompts = newServingTable(stack);
    const fn = new lambda.Function(stack, 'Reader', {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler = async () => {}'),
    });
    // WHEN
    prompts.grantRead(fn);
    // THEN
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Code: { ZipFile: Match.anyValue() },
      Environment: Match.absent(),
    });
  });

  test('grants a principal of another account through the table\'s resource policy', () => {
    // GIVEN
    const { stack, prompts } = fixture();
    // WHEN
    prompts.grantRead(new iam.AccountPrincipal('210987654321'));
    // THEN
    Template.fromStack(stack).hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      Replicas: [Match.objectLike({
        ResourcePolicy: {
          PolicyDocument: {
            Statement: [Match.objectLike({
              Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
              Principal: { AWS: Match.anyValue() },
              Resource: '*',
            })],
          },
        },
      })],
    });
  });
});

describe('grantActivate', () => {
  test('grants GetItem, Query and PutItem on the table: what the admin API and CLI call', () => {
    // GIVEN
    const { stack, prompts, role } = fixture();
    // WHEN
    prompts.grantActivate(role);
    // THEN
    expectReaderPolicy(stack, [{
      Effect: 'Allow',
      Action: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem'],
      Resource: TABLE_ARN,
    }]);
  });

  test('adds kms:Decrypt, kms:Encrypt and kms:GenerateDataKey when the table has a customer managed key', () => {
    // GIVEN
    const { stack, prompts, role } = fixture({ encrypted: true });
    // WHEN
    prompts.grantActivate(role);
    // THEN
    expectReaderPolicy(stack, [
      Match.objectLike({ Action: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem'] }),
      { Effect: 'Allow', Action: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'], Resource: KEY_ARN },
    ]);
  });
});

describe('addReader', () => {
  test('sets PROMPT_SERVING_TABLE_NAME and grants read', () => {
    // GIVEN
    const stack = newStack();
    const prompts = newServingTable(stack);
    const fn = new lambda.Function(stack, 'Reader', {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler = async () => {}'),
    });
    // WHEN
    prompts.addReader(fn, { promptIds: ['summarize'] });
    // THEN
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Code: { ZipFile: Match.anyValue() },
      Environment: { Variables: { PROMPT_SERVING_TABLE_NAME: { Ref: Match.stringLikeRegexp('^PromptsTable') } } },
    });
    expectReaderPolicy(stack, [Match.objectLike({
      Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
      Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['summarize', '#catalog'] } },
    })]);
  });
});
