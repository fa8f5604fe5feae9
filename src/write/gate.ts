/**
 * The activation gate: a Lambda function the construct was given (`activationGate`) that sees every candidate
 * move before it happens and answers `{ allow: boolean, reason: string }`.
 *
 * Fail closed: a gate that cannot be invoked, raises, answers anything else, or does not answer within the gate
 * timeout denies the move, with that as the reason. A broken gate stops releases; it never lets one through.
 */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { PromptContent } from '../schema';

/** What the gate is asked about. Serialized as the gate's event (JSON). */
export interface GateCandidate {
  readonly promptId: string;
  /** `CURRENT` or the label name. */
  readonly target: string;
  /** `activate`, `label`, `rollout-start`, `rollout-step`, `rollout-promote` or `sync`. */
  readonly action: string;
  readonly fromVersion?: number;
  readonly toVersion: number;
  /** The candidate version's checksum and content (text or messages/system, variables, model settings). */
  readonly checksum: string;
  readonly content: PromptContent;
  /** For rollout moves: the share the candidate would get, in basis points (1 to 10,000; 1000 = 10 %). */
  readonly percentBp?: number;
  /** @deprecated read `percentBp`; the same share in percent (`percentBp / 100`), still sent for one release. */
  readonly percent?: number;
  /** Who asks for the move. */
  readonly actor: string;
}

export interface GateDecision {
  readonly allow: boolean;
  readonly reason: string;
}

/** Decides whether a candidate may become what a pointer serves. */
export interface ActivationGate {
  /** `options.timeoutMs`: the caller's own limit (what is left of its deadline); the gate answers within the shorter. */
  check(candidate: GateCandidate, options?: GateCheckOptions): Promise<GateDecision>;
}

export interface GateCheckOptions {
  readonly timeoutMs?: number;
}

/** No gate configured: every move is allowed. */
export const OPEN_GATE: ActivationGate = {
  check: async () => ({ allow: true, reason: 'no activation gate is configured' }),
};

/** Longest gate reason kept in an audit record. */
const MAX_GATE_REASON = 500;

/** The gate as a Lambda function, invoked synchronously (`RequestResponse`) with a time limit. */
export class LambdaActivationGate implements ActivationGate {
  constructor(private readonly client: LambdaClient, private readonly functionName: string, private readonly timeoutMs: number) {}

  async check(candidate: GateCandidate, options: GateCheckOptions = {}): Promise<GateDecision> {
    const timeoutMs = Math.min(this.timeoutMs, options.timeoutMs ?? Infinity);
    if (!(timeoutMs > 0)) return deny(`no time was left to ask activation gate ${this.functionName} before the deadline (fail closed)`);
    const signal = AbortSignal.timeout(timeoutMs);
    let out;
    try {
      out = await this.client.send(new InvokeCommand({
        FunctionName: this.functionName,
        InvocationType: 'RequestResponse',
        Payload: new TextEncoder().encode(JSON.stringify(candidate)),
      }), { abortSignal: signal });
    } catch (err) {
      if (signal.aborted) return deny(`activation gate ${this.functionName} did not answer within ${timeoutMs} ms (fail closed)`);
      return deny(`activation gate ${this.functionName} could not be invoked (fail closed): ${describe(err)}`);
    }
    const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
    if (out.FunctionError) {
      let message = text;
      try {
        const parsed = JSON.parse(text) as { errorMessage?: unknown };
        if (typeof parsed?.errorMessage === 'string') message = parsed.errorMessage;
      } catch { /* not JSON: keep the text */ }
      return deny(`activation gate ${this.functionName} failed (${out.FunctionError}, fail closed): ${message}`);
    }
    return parseDecision(text, this.functionName);
  }
}

/** The gate's answer, or a denial saying what was wrong with it. */
export function parseDecision(text: string, gateName: string): GateDecision {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return deny(`activation gate ${gateName} answered ${preview(text)}, not JSON (fail closed)`);
  }
  const d = parsed as { allow?: unknown; reason?: unknown } | null;
  if (d === null || typeof d !== 'object' || typeof d.allow !== 'boolean' || typeof d.reason !== 'string') {
    return deny(`activation gate ${gateName} answered ${preview(text)}, not { "allow": boolean, "reason": string } (fail closed)`);
  }
  return { allow: d.allow, reason: clip(d.reason) };
}

function deny(reason: string): GateDecision {
  return { allow: false, reason: clip(reason) };
}

function clip(text: string): string {
  return text.length > MAX_GATE_REASON ? text.slice(0, MAX_GATE_REASON - 1) + '…' : text;
}

function preview(text: string): string {
  const t = JSON.stringify(text);
  return t.length > 120 ? t.slice(0, 100) + '…"' : t;
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
