import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { newServingTable, newStack } from './util';
import { IPromptServingTable, PromptServingTable } from '../../src';

const READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'];
const OTHER_ACCOUNT_ARN = 'arn:aws:dynamodb:eu-west-1:111122223333:table/prompts-prod';
/** The ARN CDK builds for a table name in the test stack's account and Region. */
const LOCAL_ARN = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':dynamodb:eu-west-1:123456789012:table/prompts-prod']] };

function reader(stack: Stack): lambda.Function {
  return new lambda.Function(stack, 'Reader', {
    runtime: lambda.Runtime.NODEJS_22_X, handler: 'index.handler', code: lambda.Code.fromInline('exports.handler = async () => {}'),
  });
}

function readerStatements(stack: Stack): unknown[] {
  const policies = Template.fromStack(stack).findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: Match.stringLikeRegexp('^ReaderServiceRole') }] } });
  return Object.values(policies).flatMap((p: any) => p.Properties.PolicyDocument.Statement);
}

describe('PromptServingTable.fromTableName / fromTableAttributes', () => {
  test('addReader on a table imported by name grants exactly the read actions and sets the table name; nothing else is created', () => {
    // GIVEN
    const stack = newStack();
    const fn = reader(stack);
    // WHEN
    const prompts: IPromptServingTable = PromptServingTable.fromTableName(stack, 'Prompts', 'prompts-prod');
    const grant = prompts.addReader(fn);
    // THEN
    expect(grant.success).toBe(true);
    expect(readerStatements(stack)).toEqual([{
      Effect: 'Allow',
      Action: READ_ACTIONS,
      Resource: LOCAL_ARN,
    }]);
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::Lambda::Function', { Environment: { Variables: { PROMPT_SERVING_TABLE_NAME: 'prompts-prod' } } });
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 0);
    template.resourceCountIs('AWS::DynamoDB::Table', 0);
    expect(prompts.tableName).toBe('prompts-prod');
  });

  test('a table in another account, by ARN, with its key: read actions on that ARN plus kms:Decrypt on the key', () => {
    // GIVEN
    const stack = newStack();
    const role = new iam.Role(stack, 'ReaderServiceRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    const key = kms.Key.fromKeyArn(stack, 'Key', 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab');
    // WHEN
    const prompts = PromptServingTable.fromTableAttributes(stack, 'Prompts', { tableArn: OTHER_ACCOUNT_ARN, encryptionKey: key });
    prompts.grantRead(role);
    // THEN
    expect(readerStatements(stack)).toEqual([
      { Effect: 'Allow', Action: READ_ACTIONS, Resource: OTHER_ACCOUNT_ARN },
      { Effect: 'Allow', Action: 'kms:Decrypt', Resource: key.keyArn },
    ]);
    expect(prompts.tableName).toBe('prompts-prod');
  });

  test('a scoped read grant on an imported table carries the same LeadingKeys condition, catalog included', () => {
    const stack = newStack();
    const fn = reader(stack);
    PromptServingTable.fromTableName(stack, 'Prompts', 'prompts-prod').addReader(fn, { promptIds: ['summarize'] });
    expect(readerStatements(stack)).toEqual([expect.objectContaining({
      Action: READ_ACTIONS,
      Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['summarize', '#catalog'] } },
    })]);
  });

  test('another stack of the same app reads the table the construct made, through its name (a stack export)', () => {
    // GIVEN
    const app = new App();
    const env = { account: '123456789012', region: 'eu-west-1' };
    const owner = new Stack(app, 'Owner', { env });
    const made = newServingTable(owner, { tableName: 'prompts-prod' });
    const consumer = new Stack(app, 'Consumer', { env });
    // WHEN
    PromptServingTable.fromTableName(consumer, 'Prompts', made.tableName).addReader(reader(consumer));
    // THEN
    expect(readerStatements(consumer)).toEqual([expect.objectContaining({
      Action: READ_ACTIONS,
      Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':dynamodb:eu-west-1:123456789012:table/', { 'Fn::ImportValue': expect.stringMatching(/^Owner:ExportsOutputRefPromptsTable/) }]] },
    })]);
  });

  test('throws without a name or an ARN', () => {
    expect(() => PromptServingTable.fromTableAttributes(newStack(), 'Prompts', {}))
      .toThrow('`PromptServingTableAttributes` must give `tableName` or `tableArn`, got neither');
  });

  test('the construct itself is an IPromptServingTable with the same grant', () => {
    const stack = newStack();
    const prompts: IPromptServingTable = newServingTable(stack);
    expect(prompts.tableArn).toBe((prompts as PromptServingTable).table.tableArn);
  });
});
