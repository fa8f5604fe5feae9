/**
 * Calls to the release function's URL (IAM authentication): a JSON `POST` signed with SigV4 for service `lambda`,
 * with the credentials, region and hash of the admin's DynamoDB client (the standard AWS environment by default).
 * The function's answer becomes the result, or the admin API's error for its code.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SignatureV4 } from '@smithy/signature-v4';
import {
  AdminPromptNotFoundError,
  GateDeniedError,
  MalformedReleaseAnswerError,
  PromptAdminError,
  PromptDeletedError,
  PromptVersionNotFoundError,
  ReleaseCallError,
  ReleaseConflictError,
  ReleaseForbiddenError,
  ReleaseRefusedError,
} from './errors';
import { ParsedReleaseAnswer, ReleaseAnswer, ReleaseErrorBody, parseReleaseAnswer } from '../schema/release-api';

/** Host of a Lambda function URL: `<url-id>.lambda-url.<region>.on.aws`. */
const FUNCTION_URL_HOST = /^[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$/;
/** How long one call may take: the release function's own timeout (30 s) plus the network. */
const CALL_TIMEOUT_MS = 35_000;
/**
 * Calls of one request: a call that got no answer (network, timeout, a 5xx, `DeadlineExceeded`) is made again with
 * the same body, and so the same client token: a move that had committed answers `replayed: true` and moves nothing.
 */
export const MAX_RELEASE_CALLS = 3;

/** What the release function was asked, for the errors it answers. */
export interface ReleaseCallContext {
  readonly promptId: string;
  readonly version?: number;
}

export class ReleaseClient {
  constructor(private readonly url: string, private readonly dynamoDBClient: DynamoDBClient) {}

  /**
   * Sends one request body (with its client token) and returns the function's answer, or throws the error it names.
   * A call that got no answer is retried with the same body, up to {@link MAX_RELEASE_CALLS} calls.
   */
  async call(body: Record<string, unknown>, context: ReleaseCallContext): Promise<ReleaseAnswer> {
    for (let n = 1; ; n++) {
      try {
        return await this.callOnce(body, context);
      } catch (err) {
        if (n >= MAX_RELEASE_CALLS || !unanswered(err)) throw err;
      }
    }
  }

  private async callOnce(body: Record<string, unknown>, context: ReleaseCallContext): Promise<ReleaseAnswer> {
    const url = new URL(this.url);
    const payload = JSON.stringify(body);
    const config = this.dynamoDBClient.config;
    const region = FUNCTION_URL_HOST.exec(url.hostname)?.[1] ?? await config.region();
    const signer = new SignatureV4({ service: 'lambda', region, credentials: config.credentials, sha256: config.sha256 });
    const signed = await signer.sign({
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: url.pathname,
      query: {},
      headers: { 'host': url.host, 'content-type': 'application/json' },
      body: payload,
    });
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, { method: 'POST', headers: signed.headers as Record<string, string>, body: payload, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
      text = await response.text();
    } catch (err) {
      throw new ReleaseCallError(this.url, `calling the release function at ${this.url} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    const parsed: ParsedReleaseAnswer = parseReleaseAnswer(response.status, text);
    if (parsed.kind === 'result') return parsed.result;
    if (parsed.kind === 'error') throw toError(response.status, parsed.error, context);
    if (response.ok) throw new MalformedReleaseAnswerError(this.url, parsed.problem);
    throw lambdaError(response.status, text, this.url);
  }
}

/** Whether a call got no answer that says what happened: worth repeating with the same client token. */
function unanswered(err: unknown): boolean {
  if (err instanceof ReleaseRefusedError) return err.code === 'DeadlineExceeded';
  return err instanceof ReleaseCallError && !(err instanceof MalformedReleaseAnswerError);
}

function toError(status: number, error: ReleaseErrorBody, context: ReleaseCallContext): PromptAdminError {
  switch (error.code) {
    case 'PromptNotFound': return new AdminPromptNotFoundError(context.promptId);
    case 'VersionNotFound': return new PromptVersionNotFoundError(context.promptId, error.detail?.version ?? context.version ?? NaN);
    case 'PromptDeleted': return new PromptDeletedError(context.promptId);
    case 'GateDenied': return new GateDeniedError(error.message);
    case 'Forbidden': return new ReleaseForbiddenError(error.message);
    case 'Conflict': return new ReleaseConflictError(error.message);
    default: return new ReleaseRefusedError(error.code, status, error.message, error.detail);
  }
}

/** No release error code: Lambda itself answered (IAM denied the call, throttling, a function error). */
function lambdaError(status: number, text: string, url: string): PromptAdminError {
  let message = text.slice(0, 200);
  try {
    const answer = JSON.parse(text) as { Message?: unknown; message?: unknown };
    const m = answer?.Message ?? answer?.message;
    if (typeof m === 'string') message = m;
  } catch { /* not JSON: the text */ }
  if (status === 403) {
    return new ReleaseForbiddenError(`the release function's URL refused the call (403 ${message}): the caller needs lambda:InvokeFunctionUrl and lambda:InvokeFunction on it (PromptServingTable.grantRelease)`);
  }
  return new ReleaseCallError(url, `the release function at ${url} answered ${status}: ${message}`);
}
