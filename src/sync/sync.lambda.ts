/**
 * The sync function: a thin handler around the sync engine.
 *
 * - EventBridge Scheduled Event, or `{}` → full sync.
 * - "AWS API Call via CloudTrail" for a Bedrock prompt → sync that prompt.
 * - CloudFormation custom resource (deploy time) → full sync, answered through the ResponseURL.
 *
 * SDK clients come from the standard environment, so `AWS_ENDPOINT_URL_DYNAMODB` and
 * `AWS_ENDPOINT_URL_BEDROCK_AGENT` point the bundled handler at local stand-ins.
 */
import { BedrockAgentClient } from '@aws-sdk/client-bedrock-agent';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { DEFAULT_METRICS_NAMESPACE, DEFAULT_SOURCE_REQUESTS_PER_SECOND, Env, requireEnv } from '../schema';
import { sendCfnResponse } from './cfn-response';
import { SyncEngine, SyncGovernance, SyncReport } from './engine';
import { SyncRetryableError } from './errors';
import { CustomResourceEvent, classify } from './events';
import { emfRecord } from './metrics';
import { PromptSourceReader } from './source';
import { AuditEvents } from '../write/audit';
import { MAX_CLAIM_LEASE_MS, SyncClaims } from '../write/claims';
import { LambdaActivationGate } from '../write/gate';
import { DEFAULT_GATE_TIMEOUT_MS, GovernanceEnv, envPositiveInt } from '../write/governance-env';
import { SharedRateLimiter } from '../write/shared-budget';
import { BedrockPromptSource } from './sources/bedrock';
import { DirectoryPromptSource } from './sources/directory';

/** How this handler names itself in the message of a missing environment variable. */
const HANDLER = 'sync function';

const dynamoDBClient = new DynamoDBClient({ maxAttempts: 6 });
let bedrockClient: BedrockAgentClient | undefined;

/** Options the construct passes in `PROMPT_SERVING_SOURCE_OPTIONS`. */
interface SourceOptions {
  readonly path?: string;
  readonly promptIds?: string[];
  readonly version?: 'LATEST' | 'DRAFT';
  readonly maxRequestsPerSecond?: number;
}

/** The part of the Lambda context the handler uses. */
interface InvocationContext {
  getRemainingTimeInMillis(): number;
}

/** Longest error text returned to CloudFormation as an attribute (`Data.Error`). */
const MAX_DATA_ERROR_LENGTH = 500;

/** Time kept back from the Lambda timeout to finish the prompts under way, the catalog and the report. */
const FINISH_MARGIN_MS = 60_000;
/** Shortest claim on a prompt: long enough for its reads and write even without a known deadline. */
const CLAIM_MIN_LEASE_MS = 5 * 60_000;

export async function handler(event: unknown, context?: InvocationContext): Promise<SyncReport | { ignored: string } | { failed: string }> {
  const request = classify(event);
  const remaining = context?.getRemainingTimeInMillis();
  const deadline = remaining === undefined ? undefined : Date.now() + remaining - Math.min(FINISH_MARGIN_MS, remaining / 4);
  switch (request.kind) {
    case 'ignored':
      log('info', 'event ignored', { reason: request.reason });
      return { ignored: request.reason };
    case 'custom-resource':
      return onCustomResource(request.event, deadline);
    case 'full':
      return run('full sync', (engine) => engine.fullSync(), { trigger: request.trigger }, deadline);
    case 'prompt': {
      const allowed = sourceOptions().promptIds;
      if (allowed && !allowed.includes(request.promptId)) {
        const reason = `prompt ${request.promptId} is outside the configured promptIds`;
        log('info', 'event ignored', { reason });
        return { ignored: reason };
      }
      const report = await run('prompt sync', (engine) => engine.syncPrompt(request.promptId, { changedAt: request.changedAt }), {
        promptId: request.promptId, eventName: request.eventName,
      }, deadline);
      const retryable = report.failures.find((f) => f.retryable);
      if (retryable) throw new SyncRetryableError(`prompt ${retryable.id} failed: ${retryable.reason}`);
      return report;
    }
  }
}

/**
 * The deploy-time sync. Every path answers CloudFormation exactly once and returns (a throw would make Lambda
 * retry the request and answer it again). Only a failed Create fails the deploy: after an Update the table
 * still serves the previous sync, and failing would make CloudFormation roll back with another Update that
 * runs the same failing sync (UPDATE_ROLLBACK_FAILED). The error is logged and the sync lag alarm reports it.
 */
async function onCustomResource(
  event: CustomResourceEvent, deadline: number | undefined,
): Promise<SyncReport | { ignored: string } | { failed: string }> {
  const physicalId = event.PhysicalResourceId ?? `${process.env[Env.tableName] ?? event.LogicalResourceId}-sync`;
  if (event.RequestType === 'Delete') {
    await sendCfnResponse(event, { Status: 'SUCCESS', PhysicalResourceId: physicalId });
    return { ignored: 'custom resource deleted: nothing to do (the table keeps its data)' };
  }
  let report: SyncReport;
  try {
    // A first sync of a large account may not fit one invocation: the deploy succeeds with what was
    // copied, reports the rest as Deferred, and the schedule finishes the job.
    report = await run('deploy-time full sync', (engine) => engine.fullSync(), { trigger: 'deploy' }, deadline);
  } catch (err) {
    const reason = `sync failed: ${(err as Error).message}`;
    await sendCfnResponse(event, event.RequestType === 'Create'
      ? { Status: 'FAILED', Reason: reason, PhysicalResourceId: physicalId }
      : { Status: 'SUCCESS', PhysicalResourceId: physicalId, Data: { Error: reason.slice(0, MAX_DATA_ERROR_LENGTH) } });
    return { failed: reason };
  }
  await sendCfnResponse(event, {
    Status: 'SUCCESS',
    PhysicalResourceId: physicalId,
    Data: {
      Written: report.written, Unchanged: report.unchanged, Deleted: report.deleted, Failed: report.failed, Deferred: report.deferred,
    },
  });
  return report;
}

async function run(
  what: string, sync: (engine: SyncEngine) => Promise<SyncReport>, context: Record<string, unknown>, deadline?: number,
): Promise<SyncReport> {
  const tableName = requireEnv(Env.tableName, HANDLER);
  const source = createSource(tableName);
  // Bedrock syncs share the table's request budget (in the source) and per-prompt claims with every other
  // invocation running (docs/adr/0002-one-bedrock-budget.md).
  const leaseMs = Math.min(MAX_CLAIM_LEASE_MS, Math.max(CLAIM_MIN_LEASE_MS, (deadline ?? Date.now()) - Date.now() + FINISH_MARGIN_MS));
  const claims = source.name === 'bedrock' ? new SyncClaims({ dynamoDBClient, tableName, leaseMs }) : undefined;
  const engine = new SyncEngine({ dynamoDBClient, tableName, source, deadline, claims, governance: governanceFromEnv(tableName) });
  try {
    const report = await sync(engine);
    console.log(JSON.stringify(emfRecord(process.env[Env.metricsNamespace] ?? DEFAULT_METRICS_NAMESPACE, tableName, report)));
    log(report.failed > 0 ? 'warn' : 'info', `${what} finished`, { ...context, report });
    return report;
  } catch (err) {
    log('error', `${what} failed`, { ...context, error: (err as Error).message, name: (err as Error).name });
    throw err;
  }
}

function createSource(tableName: string): PromptSourceReader {
  const type = requireEnv(Env.sourceType, HANDLER);
  const options = sourceOptions();
  if (type === 'directory') {
    if (!options.path) throw new Error(`${Env.sourceOptions} must hold a "path" for a directory source`);
    return new DirectoryPromptSource(options.path);
  }
  if (type === 'bedrock') {
    // One retry policy: the source paces, backs off and retries throttled calls itself.
    bedrockClient ??= new BedrockAgentClient({ maxAttempts: 1 });
    const ratePerSecond = options.maxRequestsPerSecond ?? DEFAULT_SOURCE_REQUESTS_PER_SECOND;
    return new BedrockPromptSource({
      client: bedrockClient,
      promptIds: options.promptIds,
      version: options.version,
      maxRequestsPerSecond: ratePerSecond,
      limiter: new SharedRateLimiter({ dynamoDBClient, tableName, ratePerSecond }),
    });
  }
  throw new Error(`${Env.sourceType} must be "bedrock" or "directory", got ${JSON.stringify(type)}`);
}

function sourceOptions(): SourceOptions {
  const raw = process.env[Env.sourceOptions];
  if (!raw) return {};
  try {
    return JSON.parse(raw) as SourceOptions;
  } catch (err) {
    throw new Error(`${Env.sourceOptions} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

function log(level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>): void {
  console.log(JSON.stringify({ level, message, ...fields }));
}

let eventBridgeClient: EventBridgeClient | undefined;
let lambdaClient: LambdaClient | undefined;

/** Governance as the construct configured it (`governance` set): audit, and with `gateSync` the gate. */
function governanceFromEnv(tableName: string): SyncGovernance | undefined {
  if (process.env[GovernanceEnv.audit] !== 'true') return undefined;
  eventBridgeClient ??= new EventBridgeClient({});
  const gateFunction = process.env[GovernanceEnv.gateSync] === 'true' ? process.env[GovernanceEnv.gateFunction] : undefined;
  if (gateFunction) lambdaClient ??= new LambdaClient({ maxAttempts: 1 });
  return {
    actor: requireEnv(GovernanceEnv.actorArn, HANDLER),
    auditRetentionSeconds: envPositiveInt(GovernanceEnv.auditRetentionSeconds, undefined),
    events: new AuditEvents(eventBridgeClient, tableName),
    gate: gateFunction
      ? new LambdaActivationGate(lambdaClient!, gateFunction, envPositiveInt(GovernanceEnv.gateTimeoutMs, DEFAULT_GATE_TIMEOUT_MS)!)
      : undefined,
  };
}
