import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { newServingTable, newStack, synth } from './util';
import { PromptServingTable } from '../../src';

describe('replicaRegions', () => {
  test('keeps a replica in each Region next to the primary in the stack\'s Region, with the stream replication uses', () => {
    // WHEN
    const template = synth({ replicaRegions: ['us-east-1', 'ap-southeast-2'] });
    // THEN
    const table = Object.values(template.findResources('AWS::DynamoDB::GlobalTable'))[0].Properties;
    const protectedReplica = (region: string) => ({
      Region: region, DeletionProtectionEnabled: true, PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    expect([...table.Replicas].sort((x: any, y: any) => x.Region.localeCompare(y.Region)))
      .toEqual(['ap-southeast-2', 'eu-west-1', 'us-east-1'].map(protectedReplica));
    expect(table.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
  });

  test('the sync still writes the primary: its role names the table in the stack\'s Region, its environment no other Region', () => {
    const template = synth({ replicaRegions: ['us-east-1'] });
    template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: Match.stringLikeRegexp('^PromptsSyncFunctionRole') }],
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Resource: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PromptsTable'), 'Arn'] } })]) },
    });
    const env = Object.values(template.findResources('AWS::Lambda::Function', { Properties: { Handler: 'index.handler' } }))[0].Properties.Environment.Variables;
    expect(Object.keys(env).filter((k) => /REGION/.test(k))).toEqual([]);
  });

  test('no replicas by default: one Region, no stream', () => {
    synth().hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      Replicas: [Match.objectLike({ Region: 'eu-west-1' })],
      StreamSpecification: Match.absent(),
    });
  });

  test('a reader in a replica Region imports the table by name and is granted its local replica', () => {
    // GIVEN
    const app = new App();
    const primary = new Stack(app, 'Primary', { env: { account: '123456789012', region: 'eu-west-1' } });
    newServingTable(primary, { tableName: 'prompts-prod', replicaRegions: ['us-east-1'] });
    const replica = new Stack(app, 'Readers', { env: { account: '123456789012', region: 'us-east-1' } });
    const fn = new lambda.Function(replica, 'Reader', {
      runtime: lambda.Runtime.NODEJS_22_X, handler: 'index.handler', code: lambda.Code.fromInline('exports.handler = async () => {}'),
    });
    // WHEN
    PromptServingTable.fromTableName(replica, 'Prompts', 'prompts-prod').addReader(fn);
    // THEN
    const template = Template.fromStack(replica);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: [{
          Effect: 'Allow',
          Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
          Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':dynamodb:us-east-1:123456789012:table/prompts-prod']] },
        }],
      },
    });
    template.hasResourceProperties('AWS::Lambda::Function', { Environment: { Variables: { PROMPT_SERVING_TABLE_NAME: 'prompts-prod' } } });
  });

  test.each<[string, () => { stack: Stack; regions: string[]; key?: boolean }, string | RegExp]>([
    ['the stack\'s own Region', () => ({ stack: newStack(), regions: ['eu-west-1'] }),
      '`replicaRegions` must not include the stack\'s own Region (eu-west-1), which holds the primary table, got \'eu-west-1\''],
    ['a Region twice', () => ({ stack: newStack(), regions: ['us-east-1', 'us-east-1'] }),
      '`replicaRegions` must name each Region once, got ["us-east-1","us-east-1"]'],
    ['something that is not a Region', () => ({ stack: newStack(), regions: ['Frankfurt'] }),
      '`replicaRegions` must hold Region names such as \'eu-central-1\', got \'Frankfurt\''],
    ['a region-agnostic stack', () => ({ stack: new Stack(new App(), 'S'), regions: ['us-east-1'] }),
      /^`replicaRegions` must be used in a stack with an explicit region/],
    ['a customer managed key', () => ({ stack: newStack(), regions: ['us-east-1'], key: true }),
      /^`replicaRegions` must be left unset when `encryptionKey` is set, got \["us-east-1"\]\. A customer managed key needs a key in every replica Region/],
  ])('throws for %s', (_, given, message) => {
    const { stack, regions, key } = given();
    const encryptionKey = key ? new kms.Key(stack, 'Key') : undefined;
    expect(() => newServingTable(stack, { replicaRegions: regions, encryptionKey })).toThrow(message);
  });
});
