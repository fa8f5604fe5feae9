/**
 * `addReader`: a function reads one serving table (docs/adr/0006-one-table-per-reader.md). Adding it twice to
 * the same table attaches one layer and sets one environment; adding it to a second table is refused, naming both
 * tables and the fix; a second DynamoDB gateway endpoint on the same route tables is refused; an imported function
 * is refused with the fix, and an alias or version stands for its function.
 */
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { logicalId, newCacheStack, newFunction } from './cache-util';
import { newStack } from './util';
import { PromptCache, PromptServingTable, PromptSource } from '../../src';

function cachedTable(stack: Stack, id: string, vpc: ec2.IVpc, dynamoDbGatewayEndpoint = false): PromptServingTable {
  return new PromptServingTable(stack, id, { source: PromptSource.bedrock(), cache: PromptCache.serverless({ vpc, dynamoDbGatewayEndpoint }) });
}

function readerOf(template: Template, fragment = 'Reader'): Record<string, any> {
  return template.findResources('AWS::Lambda::Function')[logicalId(template, 'AWS::Lambda::Function', fragment)].Properties;
}

function policyStatements(template: Template, fragment: string): unknown[] {
  return template.findResources('AWS::IAM::Policy')[logicalId(template, 'AWS::IAM::Policy', fragment)].Properties.PolicyDocument.Statement;
}

describe('addReader twice on one table', () => {
  test('attaches the cache client layer once, sets the environment once and grants once', () => {
    // GIVEN a function added once, and the same in a second app added three times
    const template = (times: number): Template => {
      const { stack, vpc } = newCacheStack();
      const prompts = cachedTable(stack, 'Prompts', vpc);
      const reader = newFunction(stack, 'Reader', vpc);
      // WHEN
      for (let i = 0; i < times; i++) prompts.addReader(reader);
      return Template.fromStack(stack);
    };
    const once = template(1);
    const thrice = template(3);

    // THEN the template is the one a single addReader gives: one layer, one environment, one grant, one ingress rule
    expect(thrice.toJSON()).toEqual(once.toJSON());
    expect(readerOf(thrice).Layers).toEqual([{ Ref: logicalId(thrice, 'AWS::Lambda::LayerVersion', 'PromptServingCacheClientNodejs') }]);
    expect(Object.keys(readerOf(thrice).Environment.Variables).sort()).toEqual([
      'PROMPT_SERVING_CACHE_AUTH', 'PROMPT_SERVING_CACHE_CLUSTER', 'PROMPT_SERVING_CACHE_ENDPOINT', 'PROMPT_SERVING_CACHE_NAME',
      'PROMPT_SERVING_CACHE_RESOURCE_TYPE', 'PROMPT_SERVING_CACHE_TLS', 'PROMPT_SERVING_CACHE_USER', 'PROMPT_SERVING_TABLE_NAME',
    ]);
    expect(policyStatements(thrice, 'ReaderServiceRoleDefaultPolicy')).toHaveLength(2);
  });

  test('an import of the same table by the same name counts as the same table', () => {
    // GIVEN
    const stack = newStack();
    const reader = newFunction(stack, 'Reader');
    PromptServingTable.fromTableName(stack, 'A', 'prompts-prod').addReader(reader);

    // WHEN / THEN
    expect(() => PromptServingTable.fromTableName(stack, 'B', 'prompts-prod').addReader(reader)).not.toThrow();
    expect(readerOf(Template.fromStack(stack)).Environment.Variables).toEqual({ PROMPT_SERVING_TABLE_NAME: 'prompts-prod' });
  });

  test('a second call with other prompt ids adds that grant (IAM adds grants up) and nothing else', () => {
    // GIVEN
    const stack = newStack();
    const prompts = PromptServingTable.fromTableName(stack, 'Prompts', 'prompts-prod');
    const reader = newFunction(stack, 'Reader');
    prompts.addReader(reader, { promptIds: ['a'] });

    // WHEN
    prompts.addReader(reader, { promptIds: ['b'] });

    // THEN
    const statements = policyStatements(Template.fromStack(stack), 'ReaderServiceRoleDefaultPolicy') as any[];
    expect(statements.map((s) => s.Condition['ForAllValues:StringEquals']['dynamodb:LeadingKeys'])).toEqual([
      expect.arrayContaining(['a']), expect.arrayContaining(['b']),
    ]);
  });
});

describe('addReader on a second table', () => {
  test('throws at synth naming the function, both tables and the fix, and changes nothing', () => {
    // GIVEN two cached tables in one VPC and a reader of the first
    const build = (): { stack: Stack; second: PromptServingTable; reader: lambda.Function } => {
      const { stack, vpc } = newCacheStack();
      const first = cachedTable(stack, 'Prompts', vpc);
      const second = cachedTable(stack, 'Other', vpc);
      const reader = newFunction(stack, 'Reader', vpc);
      first.addReader(reader);
      return { stack, second, reader };
    };
    const { stack, second, reader } = build();

    // WHEN / THEN
    expect(() => second.addReader(reader)).toThrow(
      '`addReader`: Stack/Reader already reads the serving table Stack/Prompts, so it cannot also be a reader of Stack/Other: '
      + 'a reader\'s environment (`PROMPT_SERVING_TABLE_NAME` and the cache settings) names one table. To read Stack/Other as well, '
      + 'grant it with `grantRead(fn)` on that table and pass the table\'s name to the client');
    // AND the template is the one without the refused call
    expect(Template.fromStack(stack).toJSON()).toEqual(Template.fromStack(build().stack).toJSON());
  });

  test('without a cache too: the table name is not silently replaced', () => {
    // GIVEN
    const stack = newStack();
    const reader = newFunction(stack, 'Reader');
    PromptServingTable.fromTableName(stack, 'A', 'prompts-a').addReader(reader);

    // WHEN / THEN
    expect(() => PromptServingTable.fromTableName(stack, 'B', 'prompts-b').addReader(reader)).toThrow(/already reads the serving table Stack\/A/);
    expect(readerOf(Template.fromStack(stack)).Environment.Variables).toEqual({ PROMPT_SERVING_TABLE_NAME: 'prompts-a' });
  });

  test('the documented fix works: grantRead on the second table, the name passed by the app', () => {
    // GIVEN
    const stack = newStack();
    const reader = newFunction(stack, 'Reader');
    PromptServingTable.fromTableName(stack, 'A', 'prompts-a').addReader(reader);
    const second = PromptServingTable.fromTableName(stack, 'B', 'prompts-b');

    // WHEN
    second.grantRead(reader);
    reader.addEnvironment('SECOND_PROMPTS_TABLE', second.tableName);

    // THEN
    expect(readerOf(Template.fromStack(stack)).Environment.Variables).toEqual({ PROMPT_SERVING_TABLE_NAME: 'prompts-a', SECOND_PROMPTS_TABLE: 'prompts-b' });
  });
});

describe('DynamoDB gateway endpoints', () => {
  test('a second cache asking for one on the same route tables is refused, naming the prop, both tables and the fix', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    cachedTable(stack, 'Prompts', vpc, true);

    // WHEN
    cachedTable(stack, 'Other', vpc, true);

    // THEN
    expect(() => Template.fromStack(stack)).toThrow(
      '`dynamoDbGatewayEndpoint` of the cache of Stack/Other would add a second DynamoDB gateway endpoint to 2 route table(s) that '
      + 'the cache of Stack/Prompts (its `dynamoDbGatewayEndpoint`) already serves, and a route table takes one per service. '
      + 'Set `dynamoDbGatewayEndpoint: true` on one cache of this VPC only');
  });

  test('one of two caches asking for it is fine: one endpoint', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    cachedTable(stack, 'Prompts', vpc, true);

    // WHEN
    cachedTable(stack, 'Other', vpc, false);

    // THEN
    Template.fromStack(stack).resourceCountIs('AWS::EC2::VPCEndpoint', 1);
  });

  test('an endpoint the app added itself, later, is found too', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    cachedTable(stack, 'Prompts', vpc, true);

    // WHEN
    vpc.addGatewayEndpoint('Dynamo', { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB });

    // THEN
    expect(() => Template.fromStack(stack)).toThrow(/`dynamoDbGatewayEndpoint` of the cache of Stack\/Prompts would add a second DynamoDB gateway endpoint to 2 route table\(s\) that the endpoint Stack\/Vpc\/Dynamo already serves/);
  });

  test('an S3 gateway endpoint on the same route tables is no conflict', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    cachedTable(stack, 'Prompts', vpc, true);

    // WHEN
    vpc.addGatewayEndpoint('S3', { service: ec2.GatewayVpcEndpointAwsService.S3 });

    // THEN
    Template.fromStack(stack).resourceCountIs('AWS::EC2::VPCEndpoint', 2);
  });
});

describe('what addReader accepts', () => {
  test('an imported function is refused, naming it and the fix', () => {
    // GIVEN
    const stack = newStack();
    const prompts = PromptServingTable.fromTableName(stack, 'Prompts', 'prompts-prod');
    const imported = lambda.Function.fromFunctionArn(stack, 'Imported', 'arn:aws:lambda:eu-west-1:123456789012:function:inference');

    // WHEN / THEN
    expect(() => prompts.addReader(imported)).toThrow(
      '`addReader` needs a Lambda function made in this app (`lambda.Function`, `NodejsFunction`, `PythonFunction`, or an alias or version of one) '
      + 'to set its environment and layers, got Stack/Imported (an imported function). For a function made elsewhere, grant it with `grantRead(fn)`');
  });

  test.each([
    ['an alias', (fn: lambda.Function) => new lambda.Alias(fn, 'Live', { aliasName: 'live', version: fn.currentVersion })],
    ['a version', (fn: lambda.Function) => fn.currentVersion],
  ])('%s stands for its function: environment, layer and grant on the function', (_name, of) => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    const prompts = cachedTable(stack, 'Prompts', vpc);
    const reader = newFunction(stack, 'Reader', vpc);

    // WHEN
    prompts.addReader(of(reader));

    // THEN
    const template = Template.fromStack(stack);
    const props = readerOf(template, 'Reader');
    expect(props.Layers).toHaveLength(1);
    expect(props.Environment.Variables.PROMPT_SERVING_TABLE_NAME).toEqual({ Ref: logicalId(template, 'AWS::DynamoDB::GlobalTable', 'PromptsTable') });
    expect(policyStatements(template, 'ReaderServiceRoleDefaultPolicy')).toHaveLength(2);
  });
});
