/** The release engine as the governance functions build it from the construct's environment (once per container). */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { ReleaseEngine } from './release';
import { Env, requireEnv } from '../schema';
import { AuditEvents } from '../sync/audit';
import { ActivationGate, LambdaActivationGate, OPEN_GATE } from '../sync/gate';
import { DEFAULT_GATE_TIMEOUT_MS, GovernanceEnv, envPositiveInt, envStringList } from '../sync/governance-env';

/** The activation gate the environment names, or the open gate when it names none. */
export function gateFromEnv(): ActivationGate {
  const gateFunction = process.env[GovernanceEnv.gateFunction];
  if (!gateFunction) return OPEN_GATE;
  // One attempt: a retry after a timeout would double the wait; the caller (or the next tick) tries again.
  const timeoutMs = envPositiveInt(GovernanceEnv.gateTimeoutMs, DEFAULT_GATE_TIMEOUT_MS)!;
  return new LambdaActivationGate(new LambdaClient({ maxAttempts: 1 }), gateFunction, timeoutMs);
}

export function engineFromEnv(dynamoDBClient: DynamoDBClient, handlerName: string): ReleaseEngine {
  const tableName = requireEnv(Env.tableName, handlerName);
  return new ReleaseEngine({
    dynamoDBClient,
    tableName,
    gate: gateFromEnv(),
    events: new AuditEvents(new EventBridgeClient({}), tableName),
    auditRetentionSeconds: envPositiveInt(GovernanceEnv.auditRetentionSeconds, undefined),
    allowedAlarms: envStringList(GovernanceEnv.rolloutAlarms),
  });
}
