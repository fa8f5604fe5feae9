/**
 * Integration app: `PromptServingTable` in the two shapes people deploy.
 *
 * - `BedrockPrompts`: Bedrock Prompt Management as the source, alarms paging an SNS topic, a dashboard, and a
 *   reader function wired with `addReader`.
 * - `DirectoryPrompts`: prompts-as-code from test/construct/fixtures/prompts, a customer managed key, an hourly
 *   reconcile, a reader scoped to two prompts and a rollback (activate) role.
 * - `CachedPrompts`: the same prompts behind a serverless Valkey cache (capped) in an isolated two-zone VPC with
 *   a DynamoDB gateway endpoint, and a reader in that VPC wired with `addReader`.
 *
 * Deploy it with `npx cdk deploy --app 'npx ts-node -P tsconfig.dev.json test/prompt-serving.integ.ts'`.
 * test/construct/integ.test.ts pins its template in a snapshot (asset hashes normalised).
 */
import * as path from 'node:path';
import { App, Duration, Size, Stack } from 'aws-cdk-lib';
import * as cloudwatch_actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { PromptCache, PromptServingTable, PromptSource } from '../src';

export const app = new App();
// A customer managed key needs a known Region; Bedrock Prompt Management is available in us-east-1.
export const stack = new Stack(app, 'PromptServingInteg', { env: { region: 'us-east-1' } });

const pager = new sns.Topic(stack, 'Pager', { enforceSSL: true });
const bedrockPrompts = new PromptServingTable(stack, 'BedrockPrompts', {
  source: PromptSource.bedrock(),
  alarmActions: [new cloudwatch_actions.SnsAction(pager)],
  createDashboard: true,
});
const reader = new lambda.Function(stack, 'Reader', {
  runtime: lambda.Runtime.NODEJS_22_X,
  handler: 'index.handler',
  code: lambda.Code.fromInline('exports.handler = async () => process.env.PROMPT_SERVING_TABLE_NAME;'),
});
bedrockPrompts.addReader(reader);

const key = new kms.Key(stack, 'PromptsKey', { enableKeyRotation: true });
const directoryPrompts = new PromptServingTable(stack, 'DirectoryPrompts', {
  source: PromptSource.fromDirectory(path.join(__dirname, 'construct', 'fixtures', 'prompts')),
  encryptionKey: key,
  syncSchedule: Duration.hours(1),
});
const scopedReader = new iam.Role(stack, 'TriageReader', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
directoryPrompts.grantRead(scopedReader, { promptIds: ['greeting', 'support/triage'] });
const operator = new iam.Role(stack, 'PromptOperator', { assumedBy: new iam.AccountRootPrincipal() });
directoryPrompts.grantActivate(operator);

// No NAT gateway: the cache, the invalidation function and the reader need only the cache and DynamoDB.
const vpc = new ec2.Vpc(stack, 'Vpc', {
  maxAzs: 2,
  natGateways: 0,
  subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }],
});
const cachedPrompts = new PromptServingTable(stack, 'CachedPrompts', {
  source: PromptSource.fromDirectory(path.join(__dirname, 'construct', 'fixtures', 'prompts')),
  cache: PromptCache.serverless({ vpc, dynamoDbGatewayEndpoint: true, maxDataStorage: Size.gibibytes(1), maxEcpuPerSecond: 5_000 }),
});
const cachedReader = new lambda.Function(stack, 'CachedReader', {
  runtime: lambda.Runtime.NODEJS_22_X,
  handler: 'index.handler',
  code: lambda.Code.fromInline('exports.handler = async () => process.env.PROMPT_SERVING_CACHE_ENDPOINT;'),
  vpc,
});
cachedPrompts.addReader(cachedReader);

if (require.main === module) {
  app.synth();
}
