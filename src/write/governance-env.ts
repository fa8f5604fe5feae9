/**
 * Environment contract of the governance functions (release function, rollout controller) and of the sync's
 * audit: set by the construct, read by the handlers. Kept beside `schema/env.ts` (which readers share) because no
 * reader needs these.
 */

export const GovernanceEnv = {
  /** Name or ARN of the activation gate function; absent when there is no gate. */
  gateFunction: 'PROMPT_SERVING_GATE_FUNCTION',
  /** How long the gate may take, in milliseconds, before the move is denied (fail closed). */
  gateTimeoutMs: 'PROMPT_SERVING_GATE_TIMEOUT_MS',
  /** `true` on the sync function when the sync's own moves of `CURRENT` go through the gate. */
  gateSync: 'PROMPT_SERVING_GATE_SYNC',
  /** `true` on the sync function when governance is on: the sync audits its pointer moves. */
  audit: 'PROMPT_SERVING_AUDIT',
  /** Seconds an audit record is kept (sets `expires_at`); absent: kept forever. */
  auditRetentionSeconds: 'PROMPT_SERVING_AUDIT_RETENTION_SECONDS',
  /** JSON list of `{ principal, labels }`: the release grants (see ./principal.ts). */
  releaseScopes: 'PROMPT_SERVING_RELEASE_SCOPES',
  /** JSON list of the CloudWatch alarm names a rollout may name. */
  rolloutAlarms: 'PROMPT_SERVING_ROLLOUT_ALARMS',
  /** The IAM role ARN the function runs as: the actor of the moves it makes on its own (sync, scheduled steps, alarm aborts). */
  actorArn: 'PROMPT_SERVING_ACTOR_ARN',
  /** Admin API and CLI: the release function's URL (`https://….lambda-url.<region>.on.aws/`). */
  releaseUrl: 'PROMPT_SERVING_RELEASE_URL',
} as const;

/** Default of {@link GovernanceEnv.gateTimeoutMs}. */
export const DEFAULT_GATE_TIMEOUT_MS = 10_000;

/** A JSON list of strings from the environment (empty when unset); throws naming the variable when malformed. */
export function envStringList(name: string): string[] {
  const raw = process.env[name];
  if (!raw) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new Error(`environment variable ${name} is not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed) || parsed.some((v) => typeof v !== 'string')) throw new Error(`environment variable ${name} must be a JSON list of strings`);
  return parsed as string[];
}

/** A positive whole number from the environment, or `fallback` when unset; throws naming the variable when malformed. */
export function envPositiveInt(name: string, fallback: number | undefined): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`environment variable ${name} must be a positive whole number, got '${raw}'`);
  return n;
}
