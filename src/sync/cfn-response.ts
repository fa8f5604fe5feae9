/** Answers a CloudFormation custom resource request through its pre-signed S3 URL. */
import * as http from 'node:http';
import * as https from 'node:https';
import type { CustomResourceEvent } from './events';

export interface CfnResponse {
  readonly Status: 'SUCCESS' | 'FAILED';
  readonly Reason?: string;
  readonly PhysicalResourceId: string;
  readonly Data?: Record<string, string | number>;
}

/** CloudFormation truncates reasons it cannot store; keep them short and readable. */
const MAX_REASON_LENGTH = 1_000;
/** Give up on the pre-signed URL after this long rather than hang until the Lambda timeout. */
const RESPONSE_TIMEOUT_MS = 30_000;

export async function sendCfnResponse(event: CustomResourceEvent, response: CfnResponse): Promise<void> {
  const body = JSON.stringify({
    ...response,
    Reason: response.Reason?.slice(0, MAX_REASON_LENGTH),
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
  });
  const url = new URL(event.ResponseURL);
  const transport = url.protocol === 'http:' ? http : https;
  await new Promise<void>((resolve, reject) => {
    const req = transport.request(url, {
      method: 'PUT',
      headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode && res.statusCode < 300
        ? resolve()
        : reject(new Error(`CloudFormation response rejected with HTTP ${res.statusCode}`))));
    });
    req.setTimeout(RESPONSE_TIMEOUT_MS, () => req.destroy(new Error(`CloudFormation response timed out after ${RESPONSE_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
