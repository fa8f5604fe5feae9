/** The release engine as the governance functions build it from the construct's environment (once per container). */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { CONNECTION_TIMEOUT_MS, REQUEST_TIMEOUT_MS, TABLE_CALL_LIMIT_MS, withCallDeadlines } from './deadline';
import { ReleaseEngine } from './release';
import { Env, requireEnv } from '../schema';
import { AuditEvents } from '../write/audit';
import { ActivationGate, LambdaActivationGate, OPEN_GATE } from '../write/gate';
import { DEFAULT_GATE_TIMEOUT_MS, GovernanceEnv, envPositiveInt, envStringList } from '../write/governance-env';

/** The activation gate the environment names, or the open gate when it names none. */
export function gateFromEnv(): ActivationGate {
  const gateFunction = process.env[GovernanceEnv.gateFunction];
  if (!gateFunction) return OPEN_GATE;
  // One attempt: a retry after a timeout would double the wait; the caller (or the next tick) tries again.
  const timeoutMs = envPositiveInt(GovernanceEnv.gateTimeoutMs, DEFAULT_GATE_TIMEOUT_MS)!;
  const lambdaClient = new LambdaClient({ maxAttempts: 1, requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS } });
  return new LambdaActivationGate(lambdaClient, gateFunction, timeoutMs);
}

/**
 * Options of the governance functions' SDK clients: per-attempt socket limits, a backstop under the invocation's
 * deadline (which `withCallDeadlines` applies to every call).
 */
export const SDK_CLIENT_OPTIONS = { requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS } };

/** A DynamoDB client for a governance function: socket limits, and every call bounded by the invocation's deadline. */
export function governanceDynamoDBClient(): DynamoDBClient {
  return withCallDeadlines(new DynamoDBClient(SDK_CLIENT_OPTIONS), TABLE_CALL_LIMIT_MS);
}

export function engineFromEnv(dynamoDBClient: DynamoDBClient, handlerName: string): ReleaseEngine {
  const tableName = requireEnv(Env.tableName, handlerName);
  return new ReleaseEngine({
    dynamoDBClient,
    tableName,
    gate: gateFromEnv(),
    events: new AuditEvents(withCallDeadlines(new EventBridgeClient(SDK_CLIENT_OPTIONS)), tableName),
    auditRetentionSeconds: envPositiveInt(GovernanceEnv.auditRetentionSeconds, undefined),
    allowedAlarms: envStringList(GovernanceEnv.rolloutAlarms),
  });
}
