import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { newServingTable } from './util';
import { PromptCache, PromptServingTable, PromptServingTableProps, ServerlessPromptCacheOptions } from '../../src';

/** A stack with a two-zone VPC (private subnets with egress, one NAT) in a fixed environment. */
export function newCacheStack(): { app: App; stack: Stack; vpc: ec2.Vpc } {
  const app = new App();
  const stack = new Stack(app, 'Stack', { env: { account: '123456789012', region: 'eu-west-1' } });
  const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 2, natGateways: 1 });
  return { app, stack, vpc };
}

/** A serving table with a serverless cache in `vpc`. */
export function newCachedTable(stack: Stack, vpc: ec2.IVpc, cacheOptions: Partial<ServerlessPromptCacheOptions> = {},
  props: Partial<PromptServingTableProps> = {}): PromptServingTable {
  return newServingTable(stack, { cache: PromptCache.serverless({ vpc, ...cacheOptions }), ...props });
}

/** A Lambda function, in `vpc` when given. */
export function newFunction(stack: Stack, id: string, vpc?: ec2.IVpc): lambda.Function {
  return new lambda.Function(stack, id, {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('exports.handler = async () => null;'),
    vpc,
  });
}

/** The logical id of the one resource of `type` whose logical id contains `fragment`. */
export function logicalId(template: Template, type: string, fragment: string): string {
  const ids = Object.keys(template.findResources(type)).filter((id) => id.includes(fragment));
  expect(ids).toHaveLength(1);
  return ids[0];
}
