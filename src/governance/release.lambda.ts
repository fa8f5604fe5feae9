/**
 * The release function, behind a Lambda function URL with `AuthType: AWS_IAM`: Lambda verifies the caller's SigV4
 * signature and puts the caller's IAM principal in `requestContext.authorizer.iam.userArn`, the only identity this
 * function believes (identity fields in the body are ignored). It checks what the caller may move (the grants the
 * construct recorded), then runs the move with the release engine (gate, guarded write, audit).
 *
 * Request: `POST /` with a JSON body (see ./requests.ts). Answer: `200 { "result": … }`, or
 * `<status> { "error": { "code", "message", "detail" } }` (schema/release-api.ts). Every call it makes is bounded by
 * its remaining time (./deadline.ts): it answers before Lambda's timeout, even when a dependency never answers.
 */
import { Deadline, runWithDeadline } from './deadline';
import { engineFromEnv, governanceDynamoDBClient } from './engine-from-env';
import { ReleaseError, ReleaseErrorCode } from './errors';
import { authorizationProblem, parseScopes, ReleaseScope } from './principal';
import type { ReleaseEngine } from './release';
import { parseReleaseRequest, ReleaseRequest } from './requests';
import { GovernanceEnv } from '../write/governance-env';

/** The parts of a function URL event (payload format 2.0) this function reads. */
export interface FunctionUrlEvent {
  readonly body?: string;
  readonly isBase64Encoded?: boolean;
  readonly requestContext?: {
    readonly http?: { readonly method?: string };
    readonly authorizer?: { readonly iam?: { readonly userArn?: string } };
  };
}

export interface FunctionUrlResult {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Largest request body read (a release request is a few hundred bytes). */
export const MAX_BODY_BYTES = 64 * 1024;

const client = governanceDynamoDBClient();
/** The function's timeout (the construct's), when Lambda's context gives no remaining time. */
const FALLBACK_REMAINING_MS = 30_000;
let engine: ReleaseEngine | undefined;
let scopes: ReleaseScope[] | undefined;

/** Lambda's context: the remaining time bounds every call the function makes (see ./deadline.ts). */
export interface LambdaContext {
  getRemainingTimeInMillis?(): number;
}

export async function handler(event: FunctionUrlEvent, context?: LambdaContext): Promise<FunctionUrlResult> {
  const deadline = Deadline.fromContext(context, FALLBACK_REMAINING_MS);
  try {
    engine ??= engineFromEnv(client, 'release function');
    scopes ??= parseScopes(process.env[GovernanceEnv.releaseScopes]);
  } catch (err) {
    return failure(err);
  }
  return runWithDeadline(deadline, () => serve(event, engine!, scopes!));
}

/** The answer to one request, with the given engine and grants (the handler's own, or a test's). */
export async function serve(event: FunctionUrlEvent, releaseEngine: ReleaseEngine, grants: readonly ReleaseScope[]): Promise<FunctionUrlResult> {
  try {
    return respond(200, { result: await handle(event, releaseEngine, grants) });
  } catch (err) {
    return failure(err);
  }
}

function failure(err: unknown): FunctionUrlResult {
  if (err instanceof ReleaseError) {
    console.log(JSON.stringify({ level: 'INFO', message: 'release request refused', code: err.code, reason: err.message }));
    return respond(err.status, { error: { code: err.code, message: err.message, ...(err.detail && { detail: err.detail }) } });
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  console.error(JSON.stringify({ level: 'ERROR', message: 'release request failed', error: message }));
  return respond(500, { error: { code: 'Internal', message: `the release function failed: ${message}` } });
}

/** Checks the caller and the request, then runs it. */
async function handle(event: FunctionUrlEvent, releaseEngine: ReleaseEngine, grants: readonly ReleaseScope[]): Promise<unknown> {
  const caller = event.requestContext?.authorizer?.iam?.userArn;
  if (typeof caller !== 'string' || caller.length === 0) {
    throw new ReleaseError(ReleaseErrorCode.forbidden, 'no verified caller in the request context: the function URL must use AuthType AWS_IAM');
  }
  const method = event.requestContext?.http?.method;
  if (method !== 'POST') throw new ReleaseError(ReleaseErrorCode.badRequest, `only POST is accepted, got ${method ?? 'no method'}`);
  const request = parseReleaseRequest(parseBody(event));
  const problem = authorizationProblem(caller, grants, request.action === 'activate' ? { current: true } : { label: request.label });
  if (problem) throw new ReleaseError(ReleaseErrorCode.forbidden, problem);
  return run(request, releaseEngine, caller);
}

function parseBody(event: FunctionUrlEvent): unknown {
  const raw = event.body ?? '';
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES) throw new ReleaseError(ReleaseErrorCode.badRequest, `the request body is over ${MAX_BODY_BYTES} bytes`);
  try {
    return JSON.parse(text);
  } catch {
    throw new ReleaseError(ReleaseErrorCode.badRequest, 'the request body is not JSON');
  }
}

function run(request: ReleaseRequest, e: ReleaseEngine, actor: string): Promise<unknown> {
  switch (request.action) {
    case 'activate': return e.activate(request, actor);
    case 'set-label': return e.setLabel(request, actor);
    case 'rollout-start': return e.startRollout(request, actor);
    case 'rollout-step': return e.stepRollout(request, actor);
    case 'rollout-promote': return e.promoteRollout(request, actor);
    case 'rollout-abort': return e.abortRollout(request, actor);
  }
}

function respond(statusCode: number, body: unknown): FunctionUrlResult {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}
