import type { Duration } from 'aws-cdk-lib';

/**
 * Options for one of the alarms a `PromptServingTable` creates.
 *
 * Every alarm is on by default with the threshold, period and evaluation periods documented on its prop;
 * set a field to change just that, or `enabled: false` to leave the alarm out.
 */
export interface PromptServingAlarmOptions {
  /**
   * Whether to create this alarm.
   *
   * @default true
   */
  readonly enabled?: boolean;

  /**
   * The value the metric is compared with.
   *
   * @default - the threshold documented on the alarm's prop
   */
  readonly threshold?: number;

  /**
   * How many consecutive periods must breach before the alarm fires.
   *
   * @default - the number documented on the alarm's prop
   */
  readonly evaluationPeriods?: number;

  /**
   * Length of one evaluated period, in whole minutes.
   *
   * CloudWatch evaluates at most one day (`period` × `evaluationPeriods`) for periods under an hour and at
   * most seven days otherwise.
   *
   * @default - the period documented on the alarm's prop
   */
  readonly period?: Duration;
}
