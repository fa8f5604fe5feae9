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
  PromptAdminError,
  PromptDeletedError,
  PromptVersionNotFoundError,
  ReleaseCallError,
  ReleaseConflictError,
  ReleaseForbiddenError,
  ReleaseRefusedError,
} from './errors';

/** Host of a Lambda function URL: `<url-id>.lambda-url.<region>.on.aws`. */
const FUNCTION_URL_HOST = /^[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$/;
/** How long one call may take: the release function's own timeout (30 s) plus the network. */
const CALL_TIMEOUT_MS = 35_000;

/** What the release function was asked, for the errors it answers. */
export interface ReleaseCallContext {
  readonly promptId: string;
  readonly version?: number;
}

export class ReleaseClient {
  constructor(private readonly url: string, private readonly dynamoDBClient: DynamoDBClient) {}

  /** Sends one request body; returns the function's `result` or throws the error its answer names. */
  async call(body: Record<string, unknown>, context: ReleaseCallContext): Promise<unknown> {
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
    try {
      response = await fetch(url, { method: 'POST', headers: signed.headers as Record<string, string>, body: payload, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    } catch (err) {
      throw new ReleaseCallError(this.url, `calling the release function at ${this.url} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    const text = await response.text();
    let answer: { result?: unknown; error?: { code?: string; message?: string }; Message?: string; message?: string } = {};
    try {
      answer = JSON.parse(text);
    } catch { /* not JSON: reported below */ }
    if (response.ok && answer && 'result' in answer) return answer.result;
    throw toError(response.status, answer, text, context, this.url);
  }
}

function toError(status: number, answer: any, text: string, context: ReleaseCallContext, url: string): PromptAdminError {
  const code: string | undefined = answer?.error?.code;
  const message: string = answer?.error?.message ?? answer?.Message ?? answer?.message ?? text.slice(0, 200);
  switch (code) {
    case 'PromptNotFound': return new AdminPromptNotFoundError(context.promptId);
    case 'VersionNotFound': {
      const n = /version (\d+) of prompt/.exec(message)?.[1];
      return new PromptVersionNotFoundError(context.promptId, n !== undefined ? Number(n) : context.version ?? NaN);
    }
    case 'PromptDeleted': return new PromptDeletedError(context.promptId);
    case 'GateDenied': return new GateDeniedError(message);
    case 'Forbidden': return new ReleaseForbiddenError(message);
    case 'Conflict': return new ReleaseConflictError(message);
    case undefined: break;
    default: return new ReleaseRefusedError(code, status, message);
  }
  // No code: Lambda itself answered (IAM denied the call, throttling, a function error).
  if (status === 403) {
    return new ReleaseForbiddenError(`the release function's URL refused the call (403 ${message}): the caller needs lambda:InvokeFunctionUrl and lambda:InvokeFunction on it (PromptServingTable.grantRelease)`);
  }
  return new ReleaseCallError(url, `the release function at ${url} answered ${status}: ${message}`);
}
