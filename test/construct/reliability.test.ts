/**
 * Construct bounds and the change rule scoped to `promptIds`: synth-time errors name the
 * prop, the value and the fix; the rule matches only the listed prompts.
 */
import { CfnParameter, Duration, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { newServingTable, newStack } from './util';
import { PromptSource } from '../../src';
import { MAX_SCOPED_GRANT_ID_CHARS } from '../../src/private/validate-props';

function fixture() {
  const stack = newStack();
  const prompts = newServingTable(stack);
  const role = new iam.Role(stack, 'Reader', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
  return { stack, prompts, role };
}

describe('bounds checked at synth', () => {
  test('a token syncSchedule with the sync lag alarm on throws, naming the fix', () => {
    // GIVEN
    const stack = newStack();
    const minutes = new CfnParameter(stack, 'Minutes', { type: 'Number' });
    // WHEN / THEN
    expect(() => newServingTable(stack, { syncSchedule: Duration.minutes(minutes.valueAsNumber) })).toThrow(
      '`syncSchedule` must be a duration written in the app while the sync lag alarm derives its period from it, '
      + 'got a token (resolved only at deploy time). Set `syncLagAlarm: { period }` (about twice the schedule), '
      + 'or turn the alarm off with `syncLagAlarm: { enabled: false }`');
  });

  test('a token syncSchedule synthesizes with an explicit sync lag period', () => {
    // GIVEN
    const stack = newStack();
    const minutes = new CfnParameter(stack, 'Minutes', { type: 'Number' });
    // WHEN
    newServingTable(stack, { syncSchedule: Duration.minutes(minutes.valueAsNumber), syncLagAlarm: { period: Duration.hours(1) } });
    // THEN
    Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'FullSyncSucceeded', Period: 3600 });
  });

  test('grantRead with a string for promptIds (plain JavaScript) throws instead of granting one id per letter', () => {
    const { prompts, role } = fixture();
    expect(() => prompts.grantRead(role, { promptIds: 'summarize' as any })).toThrow(
      "`promptIds` must be a list of prompt ids, got 'summarize'. Write ['summarize'] for one id");
  });

  test('grantRead with a non-string id throws', () => {
    const { prompts, role } = fixture();
    expect(() => prompts.grantRead(role, { promptIds: [42 as any] })).toThrow(/^`promptIds` must hold prompt ids .*, got 42\./);
  });

  test('grantRead with an id over 1,024 bytes of UTF-8 throws (700 CJK characters)', () => {
    const { prompts, role } = fixture();
    expect(() => prompts.grantRead(role, { promptIds: ['提'.repeat(700)] })).toThrow(/^`promptIds` must hold prompt ids \(1 to 1,024 bytes of UTF-8/);
  });

  test('grantRead with more ids than an IAM policy holds throws, naming the limit', () => {
    const { prompts, role } = fixture();
    const ids = Array.from({ length: 400 }, (_, i) => `prompt-number-${String(i).padStart(6, '0')}`);
    expect(() => prompts.grantRead(role, { promptIds: ids })).toThrow(
      `\`promptIds\` must fit in an IAM policy: at most ${MAX_SCOPED_GRANT_ID_CHARS} characters of ids, got '400 ids taking 9200 characters'. `
      + 'Grant fewer ids per role, or omit `promptIds` to grant every prompt');
  });

  test('grantRead just within the limit synthesizes', () => {
    const { stack, prompts, role } = fixture();
    const ids = Array.from({ length: 300 }, (_, i) => `prompt-number-${String(i).padStart(6, '0')}`);
    prompts.grantRead(role, { promptIds: ids });
    Template.fromStack(stack).hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Condition: Match.anyValue() })]) },
    });
  });

  test('a dashboardName over 255 characters throws', () => {
    expect(() => newServingTable(newStack(), { dashboardName: 'd'.repeat(256) })).toThrow(
      /^`dashboardName` must be 1 to 255 letters, digits, '-' or '_', got 'd{40}… \(256 characters\)'$/);
  });

  test('a dashboardName with a space throws', () => {
    expect(() => newServingTable(newStack(), { dashboardName: 'my dashboard' })).toThrow(
      "`dashboardName` must be 1 to 255 letters, digits, '-' or '_', got 'my dashboard'");
  });
});

describe('the change rule is scoped to promptIds', () => {
  test('with promptIds, it matches only events naming them (id or ARN, with or without a version)', () => {
    // GIVEN
    const stack = newStack();
    // WHEN
    newServingTable(stack, { source: PromptSource.bedrock({ promptIds: ['PROMPT0001', 'PROMPT0002'] }) });
    // THEN
    Template.fromStack(stack).hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        'source': ['aws.bedrock'],
        'detail-type': ['AWS API Call via CloudTrail'],
        'detail': {
          eventSource: ['bedrock.amazonaws.com'],
          eventName: ['UpdatePrompt', 'CreatePromptVersion', 'DeletePrompt'],
          errorCode: [{ exists: false }],
          requestParameters: {
            promptIdentifier: [
              'PROMPT0001', { wildcard: '*:prompt/PROMPT0001*' },
              'PROMPT0002', { wildcard: '*:prompt/PROMPT0002*' },
            ],
          },
        },
      },
    });
  });

  test('without promptIds, every prompt change matches', () => {
    const stack = newStack();
    newServingTable(stack);
    Template.fromStack(stack).hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({ detail: Match.objectLike({ requestParameters: Match.absent() }) }),
    });
  });

  test('a promptIds list whose pattern exceeds EventBridge\'s 2,048 characters keeps the unscoped rule and warns', () => {
    const stack: Stack = newStack();
    const ids = Array.from({ length: 80 }, (_, i) => `P${String(i).padStart(9, '0')}`);
    newServingTable(stack, { source: PromptSource.bedrock({ promptIds: ids }) });
    Template.fromStack(stack).hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({ detail: Match.objectLike({ requestParameters: Match.absent() }) }),
    });
    Annotations.fromStack(stack).hasWarning('*', Match.stringLikeRegexp('change rule matches every prompt'));
  });
});
