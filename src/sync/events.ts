/**
 * The events the sync function is invoked with, and what each asks for.
 */

import { PROMPT_CHANGE_EVENT_NAMES } from '../schema';

/** A CloudFormation custom resource request (the deploy-time sync). */
export interface CustomResourceEvent {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly ResponseURL: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly PhysicalResourceId?: string;
  readonly ResourceProperties?: Record<string, unknown>;
}

export type SyncRequest =
  | { readonly kind: 'full'; readonly trigger: 'schedule' | 'manual' }
  | { readonly kind: 'prompt'; readonly promptId: string; readonly eventName: string; readonly changedAt?: string }
  | { readonly kind: 'custom-resource'; readonly event: CustomResourceEvent }
  | { readonly kind: 'ignored'; readonly reason: string };

/** Classifies an invocation: scheduled or `{}` → full sync; CloudTrail prompt event → one prompt. */
export function classify(event: unknown): SyncRequest {
  const e = (event ?? {}) as Record<string, any>;
  if (typeof e.RequestType === 'string' && typeof e.ResponseURL === 'string') {
    return { kind: 'custom-resource', event: e as CustomResourceEvent };
  }
  if (e['detail-type'] === 'Scheduled Event') return { kind: 'full', trigger: 'schedule' };
  if (e['detail-type'] === 'AWS API Call via CloudTrail') {
    const detail = e.detail ?? {};
    if (detail.eventSource !== 'bedrock.amazonaws.com' || !PROMPT_CHANGE_EVENT_NAMES.includes(detail.eventName)) {
      return { kind: 'ignored', reason: `not a prompt change: ${detail.eventSource} ${detail.eventName}` };
    }
    if (detail.errorCode) return { kind: 'ignored', reason: `failed call (${detail.errorCode})` };
    const promptId = promptIdOf(detail);
    return promptId
      ? { kind: 'prompt', promptId, eventName: detail.eventName, changedAt: eventTimeOf(detail.eventTime ?? e.time) }
      : { kind: 'ignored', reason: `${detail.eventName} event without a prompt id` };
  }
  if (Object.keys(e).length === 0) return { kind: 'full', trigger: 'manual' };
  return { kind: 'ignored', reason: 'unrecognised event' };
}

/**
 * The prompt id of a CloudTrail event: `responseElements.id` for CreatePrompt, else
 * `requestParameters.promptIdentifier` (an id or an ARN, possibly with `:version`).
 */
export function promptIdOf(detail: Record<string, any>): string | undefined {
  const raw: unknown = detail.responseElements?.id ?? detail.requestParameters?.promptIdentifier
    ?? detail.responseElements?.promptId;
  if (typeof raw !== 'string' || raw.length === 0) return undefined;
  const arn = /^arn:[^:]+:bedrock:[^:]*:\d*:prompt\/([^:]+)(?::.*)?$/.exec(raw);
  return arn ? arn[1] : raw;
}

/** A CloudTrail `eventTime` (or EventBridge `time`) when it is a readable time; else `undefined` (treated as now). */
function eventTimeOf(value: unknown): string | undefined {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value)) ? new Date(Date.parse(value)).toISOString() : undefined;
}
