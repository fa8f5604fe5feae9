import { App, Duration, Lazy, RemovalPolicy, Size, Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import { FIXTURE_PROMPTS, newServingTable, newStack } from './util';
import { PromptServingTable, PromptServingTableProps, PromptSource } from '../../src';

function build(props: Partial<PromptServingTableProps>): void {
  newServingTable(newStack(), props);
}

function warningsOf(props: Partial<PromptServingTableProps>): Annotations {
  const stack = newStack();
  newServingTable(stack, props);
  return Annotations.fromStack(stack);
}

describe('invalid props fail at synth, naming the prop, the value and the fix', () => {
  test('throws if tableName is not a DynamoDB table name', () => {
    // WHEN / THEN
    expect(() => build({ tableName: 'ab' }))
      .toThrow("`tableName` must be 3 to 255 letters, digits, '_', '-' or '.', got 'ab'");
  });

  test('throws if syncSchedule is under a minute', () => {
    // WHEN / THEN
    expect(() => build({ syncSchedule: Duration.seconds(30) }))
      .toThrow('`syncSchedule` must be at least 1 minute, got 30 seconds');
  });

  test('throws if syncSchedule is not whole minutes', () => {
    // WHEN / THEN
    expect(() => build({ syncSchedule: Duration.seconds(90) }))
      .toThrow('`syncSchedule` must be a whole number of minutes, got 1 minute 30 seconds');
  });

  test('throws if syncSchedule is over a day', () => {
    // WHEN / THEN
    expect(() => build({ syncSchedule: Duration.days(2) }))
      .toThrow('`syncSchedule` must be at most 1 day, got 2 days');
  });

  test('throws if syncTimeout is over 15 minutes', () => {
    // WHEN / THEN
    expect(() => build({ syncTimeout: Duration.minutes(16) }))
      .toThrow('`syncTimeout` must be at most 15 minutes, got 16 minutes');
  });

  test('throws if syncTimeout is not whole seconds', () => {
    // WHEN / THEN
    expect(() => build({ syncTimeout: Duration.millis(1500) }))
      .toThrow('`syncTimeout` must be a whole number of seconds, at least 1 second, got 1 second 500 millis');
  });

  test('throws if syncMemorySize is outside Lambda\'s range', () => {
    // WHEN / THEN
    expect(() => build({ syncMemorySize: Size.mebibytes(64) }))
      .toThrow('`syncMemorySize` must be a whole number of MiB from 128 to 10240, got 64 MiB');
  });

  test('throws if syncRetryAttempts is more than Lambda allows', () => {
    // WHEN / THEN
    expect(() => build({ syncRetryAttempts: 3 }))
      .toThrow('`syncRetryAttempts` must be 0, 1 or 2, got 3');
  });

  test('throws if metricsNamespace uses characters CloudWatch rejects', () => {
    // WHEN / THEN
    expect(() => build({ metricsNamespace: 'prompts|prod' }))
      .toThrow("`metricsNamespace` must be 1 to 255 letters, digits, spaces or any of . - _ / # :, got 'prompts|prod'");
  });

  test('throws if metricsNamespace is in the AWS/ namespace', () => {
    // WHEN / THEN
    expect(() => build({ metricsNamespace: 'AWS/Prompts' }))
      .toThrow("`metricsNamespace` must not start with 'AWS/', got 'AWS/Prompts'. That prefix is reserved for AWS services");
  });

  test('throws if dashboardName is set while createDashboard is false', () => {
    // WHEN / THEN
    expect(() => build({ createDashboard: false, dashboardName: 'prompts' }))
      .toThrow("`dashboardName` must be left unset when `createDashboard` is false, got 'prompts'. Remove one of the two");
  });

  test('throws if encryptionKey is used in a region-agnostic stack', () => {
    // GIVEN
    const stack = new Stack(new App(), 'Stack');
    const encryptionKey = new kms.Key(stack, 'Key');
    // WHEN / THEN
    expect(() => new PromptServingTable(stack, 'Prompts', { source: PromptSource.bedrock(), encryptionKey })).toThrow(
      '`encryptionKey` must be used in a stack with an explicit region, got a region-agnostic stack. '
      + 'Set `env: { region }` on the stack: DynamoDB global tables name the key per replica Region');
  });

  test('leaves unresolved tokens to deploy time', () => {
    // WHEN / THEN
    expect(() => build({
      tableName: Lazy.string({ produce: () => 'x' }),
      metricsNamespace: Lazy.string({ produce: () => 'AWS/late' }),
    })).not.toThrow();
  });
});

describe('soft issues are acknowledgeable warnings', () => {
  test('no warning with the defaults', () => {
    // WHEN / THEN
    warningsOf({}).hasNoWarning('*', Match.anyValue());
  });

  test('warns when deletionProtection is off', () => {
    // WHEN / THEN
    warningsOf({ deletionProtection: false })
      .hasWarning('/Stack/Prompts', Match.stringLikeRegexp('^`deletionProtection` is off: .*cdk-prompt-serving:deletionProtectionOff'));
  });

  test('warns when removalPolicy DESTROY meets deletion protection', () => {
    // WHEN / THEN
    warningsOf({ removalPolicy: RemovalPolicy.DESTROY })
      .hasWarning('/Stack/Prompts', Match.stringLikeRegexp('^`removalPolicy` is DESTROY but `deletionProtection` is on: deleting the stack fails'));
  });

  test('warns when pointInTimeRecovery is off', () => {
    // WHEN / THEN
    warningsOf({ pointInTimeRecovery: false })
      .hasWarning('/Stack/Prompts', Match.stringLikeRegexp('^`pointInTimeRecovery` is off: '));
  });

  test('warns when syncOnSourceChange is asked of a directory source', () => {
    // WHEN / THEN
    warningsOf({ source: PromptSource.fromDirectory(FIXTURE_PROMPTS), syncOnSourceChange: true })
      .hasWarning('/Stack/Prompts', Match.stringLikeRegexp('^`syncOnSourceChange` has no effect for a directory source'));
  });
});
