/**
 * The construct side of the release path: the release function behind an IAM-authenticated function URL, the
 * rollout controller with its schedule and alarm rule, their roles (actions from perms.ts), the record of release
 * grants the release function enforces, and the sync function's part (it audits its moves of `CURRENT`, and asks the
 * gate with `gateSync`). Built by `PromptServingTable` when `governance` is set; the handlers live in src/governance/.
 */
import { Aws, Duration, Lazy, Stack, Token, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { environmentBytes, LAMBDA_ENVIRONMENT_LIMIT_BYTES, principalArnChars } from './environment-size';
import type { ReleaseScope } from '../governance/principal';
import { ReleaseFunction } from '../governance/release-function';
import { RolloutControllerFunction } from '../governance/rollout-controller-function';
import { wildcardResourceFinding } from '../private/nag';
import { ALARM_READ_ACTIONS, AUDIT_EVENT_ACTIONS, KEY_WRITE_ACTIONS, RELEASE_DATA_ACTIONS } from '../private/perms';
import type { PromptGovernanceOptions } from '../prompt-governance';
import { Env, labelNameProblem } from '../schema';
import { GovernanceEnv } from '../write/governance-env';

/** How often the rollout controller runs: scheduled steps are due to the minute, and alarms are rechecked. */
export const ROLLOUT_CONTROLLER_SCHEDULE = Duration.minutes(1);
export const DEFAULT_GATE_TIMEOUT = Duration.seconds(10);
/** The gate's limit leaves the release function time to write and answer within its own timeout. */
export const MAX_GATE_TIMEOUT = Duration.seconds(20);
const RELEASE_FUNCTION_TIMEOUT = Duration.seconds(30);
const CONTROLLER_TIMEOUT = Duration.minutes(1);
export const MIN_AUDIT_RETENTION = Duration.days(1);
/** The attribute DynamoDB's time to live reads: audit records' (and sync claims') `expires_at`. */
export const TTL_ATTRIBUTE = 'expires_at';

/** What the release path is built from: the options and the table's parts it works with. */
export interface GovernanceWiring {
  readonly options: PromptGovernanceOptions;
  readonly table: dynamodb.TableV2;
  readonly encryptionKey?: kms.IKey;
  /** The sync function: it audits its own moves of `CURRENT` and, with `gateSync`, asks the gate. */
  readonly syncFunction: lambda.Function;
  readonly logRetention: logs.RetentionDays;
  readonly deadLetterQueue: sqs.IQueue;
}

/** The parts of the wiring every governance function is made with. */
interface FunctionWiring {
  readonly table: dynamodb.TableV2;
  readonly encryptionKey?: kms.IKey;
  readonly gate?: lambda.IFunction;
  readonly logRetention: logs.RetentionDays;
}

/**
 * The table's time-to-live attribute with these options: `expires_at` when `auditRetention` is set (DynamoDB then
 * deletes audit records, and lapsed sync claims, which carry the same attribute), otherwise none.
 */
export function governanceTimeToLiveAttribute(options: PromptGovernanceOptions | undefined): string | undefined {
  return options?.auditRetention ? TTL_ATTRIBUTE : undefined;
}

/** The release path's resources (children of the `Governance` construct), and the sync function's governance. */
export class GovernanceResources extends Construct {
  readonly releaseFunction: lambda.Function;
  readonly releaseFunctionUrl: lambda.FunctionUrl;
  readonly rolloutController: lambda.Function;
  private readonly scopes: { scope: ReleaseScope; arnChars: number }[] = [];

  constructor(scope: Construct, id: string, wiring: GovernanceWiring) {
    super(scope, id);
    const { options } = wiring;
    const gateTimeout = options.activationGateTimeout ?? DEFAULT_GATE_TIMEOUT;
    const alarms = options.rolloutAlarms ?? [];
    const fnWiring: FunctionWiring = {
      table: wiring.table, encryptionKey: wiring.encryptionKey, gate: options.activationGate, logRetention: wiring.logRetention,
    };
    const environment: Record<string, string> = {
      [Env.tableName]: wiring.table.tableName,
      [GovernanceEnv.gateTimeoutMs]: String(gateTimeout.toMilliseconds()),
      [GovernanceEnv.rolloutAlarms]: Stack.of(this).toJsonString(alarms.map((a) => a.alarmName)),
    };
    if (options.activationGate) environment[GovernanceEnv.gateFunction] = options.activationGate.functionArn;
    if (options.auditRetention) environment[GovernanceEnv.auditRetentionSeconds] = String(options.auditRetention.toSeconds());

    this.releaseFunction = this.makeFunction('Release', fnWiring, {
      environment: {
        ...environment,
        // Resolved at synth, after every grantRelease: the grants the function enforces.
        [GovernanceEnv.releaseScopes]: Lazy.string({ produce: () => Stack.of(this).toJsonString(this.scopes.map((s) => s.scope)) }),
      },
      description: 'Moves labels, rollouts and CURRENT of the serving table for IAM-authenticated callers: gated and audited',
      timeout: RELEASE_FUNCTION_TIMEOUT,
      make: (props) => new ReleaseFunction(this, 'ReleaseFunction', props),
    });
    this.releaseFunction.node.addValidation({ validate: () => this.environmentSizeProblems(environment) });
    this.releaseFunctionUrl = this.releaseFunction.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.AWS_IAM });
    Validations.of(this.releaseFunction).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason: 'The release function is only invoked synchronously through its function URL; the caller gets every failure as the answer, so there is nothing to park.',
    });

    this.rolloutController = this.makeFunction('RolloutController', fnWiring, {
      environment,
      description: 'Advances scheduled prompt rollouts and aborts those whose alarm fires',
      timeout: CONTROLLER_TIMEOUT,
      make: (props) => new RolloutControllerFunction(this, 'RolloutControllerFunction', props),
    });
    this.rolloutController.addEnvironment(GovernanceEnv.actorArn, this.rolloutController.role!.roleArn);
    this.rolloutController.configureAsyncInvoke({
      retryAttempts: 2, maxEventAge: Duration.minutes(10), onFailure: new destinations.SqsDestination(wiring.deadLetterQueue),
    });
    if (alarms.length > 0) {
      iam.Grant.addToPrincipal({ grantee: this.rolloutController, actions: ALARM_READ_ACTIONS, resourceArns: alarms.map((a) => a.alarmArn) });
    }
    const controllerTarget = new targets.LambdaFunction(this.rolloutController, {
      deadLetterQueue: wiring.deadLetterQueue, retryAttempts: 2, maxEventAge: Duration.minutes(10),
    });
    // The schedule: due steps, and alarms rechecked (an alarm already in ALARM when a rollout starts sends no event).
    new events.Rule(this, 'RolloutSchedule', {
      description: 'Runs the rollout controller: scheduled steps and alarm checks of prompt rollouts',
      schedule: events.Schedule.rate(ROLLOUT_CONTROLLER_SCHEDULE),
      targets: [controllerTarget],
    });
    if (alarms.length > 0) {
      new events.Rule(this, 'RolloutAlarmRule', {
        description: 'Aborts prompt rollouts at once when an alarm they name goes to ALARM',
        eventPattern: {
          source: ['aws.cloudwatch'],
          detailType: ['CloudWatch Alarm State Change'],
          resources: alarms.map((a) => a.alarmArn),
          detail: { state: { value: ['ALARM'] } },
        },
        targets: [controllerTarget],
      });
    }
    Validations.of(this.rolloutController).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason: 'The rollout controller is invoked by EventBridge rules whose targets send undeliverable events to the construct\'s dead-letter queue; '
        + 'a failed run is repeated by the one-minute schedule.',
    });

    this.wireSync(wiring.syncFunction, options, gateTimeout);
  }

  /**
   * Records a release grant: `lambda:InvokeFunctionUrl` (auth type AWS_IAM) and `lambda:InvokeFunction` (only via
   * the function URL) on the release function, and, for a role or user, the labels the release function lets it move.
   */
  grant(grantee: iam.IGrantable, labels: string[] | undefined): iam.Grant {
    const principal = principalArn(grantee.grantPrincipal);
    if (labels !== undefined) {
      validateGrantLabels(labels);
      if (principal === undefined) {
        throw new Error(`grantRelease with \`labels\` needs a grantee whose principal is an IAM role or user (the release function recognises callers by role or user), got ${grantee.grantPrincipal.constructor.name}; grant a role, or leave out \`labels\``);
      }
    }
    if (principal !== undefined) this.recordScope(grantee.grantPrincipal, principal, labels);
    return this.releaseFunction.grantInvokeUrl(grantee);
  }

  /**
   * Adds a grant to the record, one entry per principal and kind: a principal's scoped grants are merged into one
   * list of labels (the release function takes the union of them anyway), its unscoped grants into one `*`.
   */
  private recordScope(grantee: iam.IPrincipal, principal: string, labels: string[] | undefined): void {
    const unscoped = labels === undefined;
    const existing = this.scopes.find((s) => s.scope.principal === principal && (s.scope.labels === '*') === unscoped);
    if (existing && unscoped) return;
    const merged = [...new Set([...existing && existing.scope.labels !== '*' ? existing.scope.labels : [], ...labels ?? []])];
    const entry = { scope: { principal, labels: unscoped ? '*' as const : merged }, arnChars: principalArnChars(grantee, principal) };
    if (existing) this.scopes[this.scopes.indexOf(existing)] = entry;
    else this.scopes.push(entry);
  }

  /**
   * The release function's environment must stay within Lambda's 4 KB, and the grants it records grow with every
   * grantRelease: checked at synth with each principal's ARN counted at its deployed length (environment-size.ts).
   */
  private environmentSizeProblems(environment: Record<string, string>): string[] {
    const recorded = JSON.stringify(this.scopes.map((s) => ({ ...s.scope, principal: 'x'.repeat(s.arnChars) })));
    const bytes = environmentBytes(environment) + Buffer.byteLength(GovernanceEnv.releaseScopes) + Buffer.byteLength(recorded);
    if (bytes <= LAMBDA_ENVIRONMENT_LIMIT_BYTES) return [];
    const scoped = this.scopes.filter((s) => s.scope.labels !== '*').length;
    return [`\`grantRelease\`: the release function's environment would be about ${bytes} bytes with the ${this.scopes.length} grants it records `
      + `(${scoped} scoped by label, each naming its grantee's ARN), over Lambda's limit of 4 KB (${LAMBDA_ENVIRONMENT_LIMIT_BYTES} bytes), `
      + 'so the deploy would fail. Record fewer principals: grant the labels to one role that the callers assume, or several labels in one call '
      + '(`labels: [...]`), instead of one grant per caller'];
  }

  /** The sync audits its own moves of `CURRENT`, with its role as the actor (and asks the gate with `gateSync`). */
  private wireSync(sync: lambda.Function, options: PromptGovernanceOptions, gateTimeout: Duration): void {
    const syncRole = sync.role!;
    sync.addEnvironment(GovernanceEnv.audit, 'true');
    sync.addEnvironment(GovernanceEnv.actorArn, syncRole.roleArn);
    if (options.auditRetention) {
      sync.addEnvironment(GovernanceEnv.auditRetentionSeconds, String(options.auditRetention.toSeconds()));
    }
    iam.Grant.addToPrincipal({ grantee: syncRole, actions: AUDIT_EVENT_ACTIONS, resourceArns: [defaultEventBusArn(this)] });
    if (options.gateSync && options.activationGate) {
      sync.addEnvironment(GovernanceEnv.gateSync, 'true');
      sync.addEnvironment(GovernanceEnv.gateFunction, options.activationGate.functionArn);
      sync.addEnvironment(GovernanceEnv.gateTimeoutMs, String(gateTimeout.toMilliseconds()));
      grantGateInvoke(options.activationGate, syncRole);
    }
  }

  private makeFunction(
    name: string,
    wiring: FunctionWiring,
    spec: { environment: Record<string, string>; description: string; timeout: Duration; make: (props: lambda.FunctionOptions) => lambda.Function },
  ): lambda.Function {
    const role = new iam.Role(this, `${name}Role`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'), description: spec.description });
    const logGroup = new logs.LogGroup(this, `${name}Logs`, { retention: wiring.logRetention });
    logGroup.grantWrite(role);
    const fn = spec.make({
      description: spec.description,
      role,
      logGroup,
      timeout: spec.timeout,
      memorySize: 256,
      architecture: lambda.Architecture.ARM_64,
      environment: spec.environment,
    });
    iam.Grant.addToPrincipal({ grantee: role, actions: RELEASE_DATA_ACTIONS, resourceArns: [wiring.table.tableArn] });
    wiring.encryptionKey?.grant(role, ...KEY_WRITE_ACTIONS);
    iam.Grant.addToPrincipal({ grantee: role, actions: AUDIT_EVENT_ACTIONS, resourceArns: [defaultEventBusArn(this)] });
    if (wiring.gate) grantGateInvoke(wiring.gate, role);
    const runtimeReason = 'The runtime is the one the bundled governance handlers are built for and tested on (esbuild --target=node22); '
      + 'it moves with library releases, not with the newest runtime the app\'s aws-cdk-lib knows.';
    Validations.of(fn).acknowledge({ id: 'AwsSolutions-L1', reason: runtimeReason }, { id: 'Serverless-LambdaLatestVersion', reason: runtimeReason });
    Validations.of(fn).acknowledge({
      id: 'Serverless-LambdaTracing',
      reason: 'Every move is recorded as an audit item and an EventBridge event, and the function logs structured JSON; X-Ray adds nothing to a few table calls.',
    });
    return fn;
  }
}

/**
 * `lambda:InvokeFunction` on the activation gate for `role`. aws-cdk-lib's `grantInvoke` also covers the gate's
 * versions and aliases (`<arn>:*`): acknowledged, since the gate is whatever function (or alias) the app passed.
 */
export function grantGateInvoke(gate: lambda.IFunction, role: iam.IRole): void {
  gate.grantInvoke(role);
  Validations.of(role).acknowledge({
    id: wildcardResourceFinding(role, `${gate.functionArn}:*`),
    reason: 'Invoking the activation gate the app passed: aws-cdk-lib grants it on the function and its versions and aliases (`:*`), '
      + 'which is the one function the app chose as its gate, not a wildcard over other functions.',
  });
}

/** The ARN of the account's default event bus, where audit events go. */
export function defaultEventBusArn(scope: Construct): string {
  return Stack.of(scope).formatArn({ service: 'events', resource: 'event-bus', resourceName: 'default', account: Aws.ACCOUNT_ID, region: Aws.REGION });
}

/** The ARN of a role or user principal, or `undefined` for any other principal. */
function principalArn(principal: iam.IPrincipal): string | undefined {
  const p = principal as Partial<iam.IRole & iam.IUser>;
  if (typeof p.roleArn === 'string') return p.roleArn;
  if (typeof p.userArn === 'string') return p.userArn;
  return undefined;
}

function validateGrantLabels(labels: unknown): void {
  if (!Array.isArray(labels) || labels.length === 0) throw new Error('`labels` of grantRelease must list at least one label name; leave it out to grant every unprotected label');
  for (const label of labels) {
    if (Token.isUnresolved(label)) throw new Error('`labels` of grantRelease must be known at synth time (the release function checks them by name), got a token');
    const problem = labelNameProblem(label);
    if (problem) throw new Error(`\`labels\` of grantRelease: ${problem}`);
  }
}

/** The governance options a table was given, checked before anything is built. */
export function validateGovernanceOptions(options: PromptGovernanceOptions): void {
  const gateTimeout = options.activationGateTimeout ?? DEFAULT_GATE_TIMEOUT;
  if (!gateTimeout.isUnresolved() && (gateTimeout.toMilliseconds() < 1000 || gateTimeout.toMilliseconds() > MAX_GATE_TIMEOUT.toMilliseconds())) {
    throw new Error(`\`activationGateTimeout\` must be from 1 second to ${MAX_GATE_TIMEOUT.toSeconds()} seconds, got ${gateTimeout.toHumanString()}`);
  }
  const auditRetention = options.auditRetention;
  if (auditRetention && !auditRetention.isUnresolved() && auditRetention.toSeconds() < MIN_AUDIT_RETENTION.toSeconds()) {
    throw new Error(`\`auditRetention\` must be at least 1 day, got ${auditRetention.toHumanString()}`);
  }
  if (options.gateSync && !options.activationGate) throw new Error('`gateSync` needs an `activationGate` to ask; set one, or leave `gateSync` off');
}
