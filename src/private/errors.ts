import { Duration, Size, Token } from 'aws-cdk-lib';

/**
 * The library's one error-message style for invalid props: the prop, the rule, the value received and, when
 * the rule alone does not say how to fix it, a hint.
 *
 * @example invalidProp('syncSchedule', 'be at least 1 minute', Duration.seconds(30))
 *   // `syncSchedule` must be at least 1 minute, got 30 seconds
 */
export function invalidProp(prop: string, rule: string, value: unknown, hint?: string): Error {
  const message = `\`${prop}\` must ${rule}, got ${describe(value)}`;
  return new Error(hint ? `${message}. ${hint}` : message);
}

/** A value as a user wrote it: durations and sizes in words, strings quoted, everything else as JSON. */
export function describe(value: unknown): string {
  if (isUnresolved(value)) {
    return 'a token (resolved only at deploy time)';
  }
  if (value instanceof Duration) {
    return value.toHumanString();
  }
  if (value instanceof Size) {
    return value.toHumanString();
  }
  if (typeof value === 'string') {
    return `'${value}'`;
  }
  return JSON.stringify(value) ?? String(value);
}

/** Whether a prop value is a late-bound token that synth-time validation must leave alone. */
export function isUnresolved(value: unknown): boolean {
  if (value instanceof Duration) {
    return value.isUnresolved();
  }
  if (value instanceof Size) {
    return value.isUnresolved();
  }
  return Token.isUnresolved(value);
}
