import type { Duration } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';

/*
 * The public types of the release path: the options of `PromptServingTable`'s `governance` prop and of
 * `grantRelease`. Types only (no construct code), so the construct in src/governance-construct/ imports them
 * without importing `PromptServingTable`, as src/cache/ does with prompt-cache-options.ts.
 */

/**
 * The release path of a serving table: labels, gradual rollouts with alarm abort, an activation gate and an audit
 * trail (docs/GOVERNANCE.md). Turning it on creates a release function behind an IAM-authenticated function URL
 * (grant callers with `grantRelease`), a rollout controller on a one-minute schedule, and makes the sync audit its
 * moves of `CURRENT`.
 */
export interface PromptGovernanceOptions {
  /**
   * A Lambda function asked before any label or `CURRENT` moves through the release path (activation, label
   * move, rollout start, step and promote). It receives the candidate (prompt id, target, from and to version,
   * checksum, content with variables and model settings, the rollout share, the caller) and answers
   * `{ "allow": boolean, "reason": string }`. A denial blocks the move and is audited (`gate-deny`). A gate that
   * fails, answers anything else, or does not answer within `activationGateTimeout` denies (fail closed).
   *
   * @default - no gate: every move the caller may make happens
   */
  readonly activationGate?: lambda.IFunction;

  /**
   * How long the release path waits for the activation gate before denying the move. At most 20 seconds.
   *
   * @default Duration.seconds(10)
   */
  readonly activationGateTimeout?: Duration;

  /**
   * Whether the sync's own moves of `CURRENT` (a new version from the source) also go through the activation
   * gate. A denied version is still written as an immutable version item, `CURRENT` stays where it was, the
   * denial is audited, and the next sync asks again. Needs `activationGate`.
   *
   * @default false
   */
  readonly gateSync?: boolean;

  /**
   * The CloudWatch alarms a rollout may name. A rollout naming one aborts (every reader back on the label's own
   * version, audited) as soon as the alarm goes to ALARM: an EventBridge rule on the alarms' state changes
   * invokes the rollout controller at once, and its one-minute schedule also checks them. A rollout naming any
   * other alarm is refused when it starts.
   *
   * @default - none: rollouts cannot name alarms
   */
  readonly rolloutAlarms?: cloudwatch.IAlarm[];

  /**
   * How long audit records are kept: each gets `expires_at` (epoch seconds) and the table's time-to-live
   * attribute is set to `expires_at`, so DynamoDB deletes them after this long (typically within a few days of
   * expiry). Whole seconds, at least 1 day.
   *
   * @default - audit records are kept for the life of the table; the table has no time-to-live attribute
   */
  readonly auditRetention?: Duration;
}

/** Options of `PromptServingTable.grantRelease`. */
export interface ReleaseGrantOptions {
  /**
   * The labels the grantee may move, and only those: not `CURRENT`, not other labels. Each label named here
   * becomes protected: principals without a grant naming it can no longer move it. The grantee must be an IAM
   * role or user (what the release function can recognise the caller by).
   *
   * @default - every label no grant protects, and `CURRENT`
   */
  readonly labels?: string[];
}
