import { Token } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type { Construct } from 'constructs';
import { invalidProp } from '../private/errors';
import type { PromptCacheOptions } from '../prompt-cache-options';

/** A cache's endpoints span at least this many Availability Zones, so losing one zone keeps the tier up. */
export const MIN_CACHE_AVAILABILITY_ZONES = 2;

/** The cache's subnets: the user's selection, or the VPC's private ones; checked to be private and in ≥ 2 zones. */
export function selectCacheSubnets(options: PromptCacheOptions): { selection: ec2.SubnetSelection; subnets: ec2.SelectedSubnets } {
  const { vpc } = options;
  const selection: ec2.SubnetSelection = options.vpcSubnets ?? {
    subnetType: vpc.privateSubnets.length > 0 ? ec2.SubnetType.PRIVATE_WITH_EGRESS : ec2.SubnetType.PRIVATE_ISOLATED,
  };
  let subnets: ec2.SelectedSubnets;
  try {
    subnets = vpc.selectSubnets(selection);
  } catch (cause) {
    throw new Error(`\`vpcSubnets\` must select private subnets of \`vpc\`, got none: ${(cause as Error).message}. `
      + 'Give the VPC private or isolated subnets in at least two Availability Zones, or pass `vpcSubnets`', { cause });
  }
  const publicIds = new Set(vpc.publicSubnets.map((s) => s.subnetId));
  const exposed = subnets.subnets.filter((s) => publicIds.has(s.subnetId)).map((s) => s.subnetId);
  if (exposed.length > 0) {
    throw invalidProp('vpcSubnets', 'select private or isolated subnets only', exposed,
      'A cache in a public subnet is one routing mistake away from the internet');
  }
  const zones = new Set(subnets.subnets.map((s) => s.availabilityZone));
  const countable = subnets.subnets.length > 0 && !Token.isUnresolved(subnets.subnets.map((s) => s.subnetId));
  if (countable && zones.size < MIN_CACHE_AVAILABILITY_ZONES) {
    throw invalidProp('vpcSubnets', `select subnets in at least ${MIN_CACHE_AVAILABILITY_ZONES} Availability Zones`,
      `${subnets.subnets.length} subnet(s) in ${zones.size} zone(s)`,
      'Give the VPC private subnets in two or more zones (`new ec2.Vpc(this, \'Vpc\', { maxAzs: 2 })`) or select more subnets');
  }
  return { selection: { subnets: subnets.subnets }, subnets };
}

/** The cache's own security group: no ingress rule (readers and the invalidation function are added by group). */
export function createCacheSecurityGroup(scope: Construct, vpc: ec2.IVpc): ec2.SecurityGroup {
  return new ec2.SecurityGroup(scope, 'SecurityGroup', {
    vpc,
    description: 'Prompt cache: ingress only from readers and the invalidation function, added by security group',
    allowAllOutbound: false,
  });
}

/** Construct id of the gateway endpoint a cache adds under its table's `Cache` construct. */
const GATEWAY_ENDPOINT_ID = 'DynamoDbEndpoint';

/**
 * The optional DynamoDB gateway endpoint readers in private subnets need to reach the table. A route table takes
 * one gateway endpoint per service, so at synth it is refused when another DynamoDB gateway endpoint (another
 * cached table's, or the app's own) serves one of the same route tables.
 */
export function addDynamoDbGatewayEndpoint(scope: Construct, options: PromptCacheOptions, subnets: ec2.SubnetSelection): void {
  if (!options.dynamoDbGatewayEndpoint) return;
  const endpoint = new ec2.GatewayVpcEndpoint(scope, GATEWAY_ENDPOINT_ID, {
    vpc: options.vpc,
    service: ec2.GatewayVpcEndpointAwsService.DYNAMODB,
    subnets: [subnets],
  });
  endpoint.node.addValidation({ validate: () => sharedRouteTableProblems(endpoint) });
}

/** Every other DynamoDB gateway endpoint of the app that serves one of `endpoint`'s route tables, as errors. */
function sharedRouteTableProblems(endpoint: ec2.GatewayVpcEndpoint): string[] {
  const own = endpoint.node.defaultChild as ec2.CfnVPCEndpoint;
  const ownRouteTables = new Set(own.routeTableIds ?? []);
  const problems: string[] = [];
  for (const other of endpoint.node.root.node.findAll()) {
    if (!(other instanceof ec2.CfnVPCEndpoint) || other === own || !isDynamoDbGateway(other) || other.vpcId !== own.vpcId) continue;
    const shared = (other.routeTableIds ?? []).filter((id) => ownRouteTables.has(id));
    if (shared.length === 0) continue;
    problems.push(`\`dynamoDbGatewayEndpoint\` of the cache of ${tableOf(endpoint)} would add a second DynamoDB gateway endpoint to `
      + `${shared.length} route table(s) that ${describeEndpoint(other)} already serves, and a route table takes one per service. `
      + 'Set `dynamoDbGatewayEndpoint: true` on one cache of this VPC only (the endpoint serves every table in the Region), '
      + 'or leave it off when the VPC has one');
  }
  return problems;
}

function isDynamoDbGateway(endpoint: ec2.CfnVPCEndpoint): boolean {
  // CloudFormation's default type is Gateway.
  return (endpoint.vpcEndpointType ?? ec2.VpcEndpointType.GATEWAY) === ec2.VpcEndpointType.GATEWAY && typeof endpoint.serviceName === 'string'
    && (endpoint.serviceName === ec2.GatewayVpcEndpointAwsService.DYNAMODB.name || endpoint.serviceName.endsWith('.dynamodb'));
}

/** The serving table a cache's gateway endpoint belongs to: `<table>/Cache/DynamoDbEndpoint` → `<table>`. */
function tableOf(endpoint: Construct): string {
  return endpoint.node.scope!.node.scope!.node.path;
}

function describeEndpoint(cfn: ec2.CfnVPCEndpoint): string {
  const endpoint = cfn.node.scope!;
  const holder = endpoint.node.scope;
  const isCacheEndpoint = endpoint.node.id === GATEWAY_ENDPOINT_ID && holder?.node.id === 'Cache';
  return isCacheEndpoint ? `the cache of ${tableOf(endpoint)} (its \`dynamoDbGatewayEndpoint\`)` : `the endpoint ${endpoint.node.path}`;
}
