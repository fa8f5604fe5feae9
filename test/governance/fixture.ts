/**
 * Shared set-up of the governance tests: a serving table in DynamoDB Local with prompts synced by the real engine
 * (test/admin/fixture.ts), the AWS stand-ins (gate, EventBridge, CloudWatch) on loopback, and a release engine on
 * real SDK clients pointed at them, with a clock the test moves.
 */
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { AwsStandIns } from './aws-stand-ins';
import { CloudWatchAlarmStates, RolloutController } from '../../src/governance/controller';
import { ReleaseEngine } from '../../src/governance/release';
import { AUDIT_SORT_KEY_PREFIX, LABEL_SORT_KEY_PREFIX, PARTITION_KEY, SORT_KEY } from '../../src/schema';
import { fromItem } from '../../src/schema/ddb-codec';
import { AuditEvents } from '../../src/write/audit';
import { ActivationGate, LambdaActivationGate, OPEN_GATE } from '../../src/write/gate';
import { ServingTableFixture, useServingTable } from '../admin/fixture';
import { CallCounter } from '../support/call-counter';

export const PIPELINE = 'arn:aws:sts::111122223333:assumed-role/ReleasePipeline/build-42';
export const OPERATOR = 'arn:aws:sts::111122223333:assumed-role/Operator/alice';
export const CONTROLLER = 'arn:aws:iam::111122223333:role/RolloutControllerRole';
export const WATCHED_ALARMS = ['checkout-errors', 'eval-score-low'];

export interface GovernanceFixture {
  readonly table: ServingTableFixture;
  readonly aws: AwsStandIns;
  /** Counts the EventBridge, Lambda and CloudWatch clients' calls. */
  readonly awsCounter: CallCounter;
  engine: ReleaseEngine;
  controller: RolloutController;
  /** The engine's and the controller's clock (epoch ms); tests move it. */
  clock: { ms: number };
  /** A new engine with another gate (or the open gate) and options, on the same table and stand-ins. */
  makeEngine(options?: { gate?: ActivationGate | 'lambda'; gateTimeoutMs?: number; retentionSeconds?: number }): ReleaseEngine;
}

export function useGovernance(): GovernanceFixture {
  const table = useServingTable();
  const aws = new AwsStandIns();
  const awsCounter = new CallCounter();
  const clients: { destroy(): void }[] = [];
  const fx = { table, aws, awsCounter, clock: { ms: Date.parse('2026-12-01T18:00:00.000Z') } } as GovernanceFixture;
  const client = <C extends { middlewareStack: any; destroy(): void }>(c: C): C => {
    clients.push(c);
    return awsCounter.attach(c);
  };
  fx.makeEngine = (options = {}) => {
    const gate = options.gate === undefined || options.gate === 'lambda'
      ? new LambdaActivationGate(client(new LambdaClient({ endpoint: aws.endpoint, maxAttempts: 1 })), 'release-gate', options.gateTimeoutMs ?? 2_000)
      : options.gate;
    return new ReleaseEngine({
      dynamoDBClient: table.client,
      tableName: table.tableName,
      gate,
      events: new AuditEvents(client(new EventBridgeClient({ endpoint: aws.endpoint })), table.tableName),
      auditRetentionSeconds: options.retentionSeconds,
      allowedAlarms: WATCHED_ALARMS,
      now: () => fx.clock.ms,
    });
  };
  beforeAll(async () => {
    await aws.start();
  });
  afterAll(async () => {
    for (const c of clients) c.destroy();
    await aws.stop();
  });
  beforeEach(() => {
    aws.reset();
    aws.alarmStates.clear();
    awsCounter.reset();
    fx.clock.ms = Date.parse('2026-12-01T18:00:00.000Z');
    fx.engine = fx.makeEngine();
    const alarms = new CloudWatchAlarmStates(client(new CloudWatchClient({ endpoint: aws.endpoint })));
    fx.controller = new RolloutController(fx.engine, alarms, CONTROLLER, () => fx.clock.ms);
  });
  return fx;
}

/** Every row of the prompt's partition with the given sort key prefix, in sort key order (consistent). */
export async function rows(table: ServingTableFixture, promptId: string, prefix: string): Promise<Record<string, any>[]> {
  const out = await table.client.send(new QueryCommand({
    TableName: table.tableName,
    ConsistentRead: true,
    KeyConditionExpression: '#pk = :id AND begins_with(#sk, :p)',
    ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
    ExpressionAttributeValues: { ':id': { S: promptId }, ':p': { S: prefix } },
  }));
  return (out.Items ?? []).map(fromItem);
}

export const auditRows = (table: ServingTableFixture, promptId: string) => rows(table, promptId, AUDIT_SORT_KEY_PREFIX);
export async function labelRow(table: ServingTableFixture, promptId: string, label: string): Promise<Record<string, any> | undefined> {
  return (await rows(table, promptId, `${LABEL_SORT_KEY_PREFIX}${label}`)).find((r) => r.label === label);
}

export { OPEN_GATE };
