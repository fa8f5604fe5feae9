/**
 * IAM actions granted by `PromptServingTable`, kept as data so that the grants, their docstrings, the ADR
 * (docs/adr/0001-grant-read.md) and the tests read from one list.
 *
 * DynamoDB authorizes `TransactWriteItems` per contained action: a `Put` needs `dynamodb:PutItem`, an `Update`
 * `dynamodb:UpdateItem` and a `ConditionCheck` `dynamodb:ConditionCheckItem`; there is no
 * `dynamodb:TransactWriteItems` action ("Using IAM with DynamoDB transactions", Amazon DynamoDB Developer Guide).
 */

/** What a reader of the serving table needs: one `GetItem` per prompt, `BatchGetItem`, history by `Query`. */
export const READ_DATA_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
];

/**
 * What activating (rolling back to) an older version needs (`cdk-prompt-serving/admin`, the CLI): read the
 * pointer and the version (`GetItem`), list the history (`Query`), write the guarded pointer (`PutItem`).
 */
export const ACTIVATE_DATA_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
];

/**
 * What the sync engine calls: `GetItem` (a pointer, the catalog), `BatchGetItem` (pointers), `Query` (the
 * highest version item, when a hand-edited pointer's numbers cannot be believed), `Scan` (ACTIVE pointers,
 * only when a deletion or a repair may have changed catalog membership), `PutItem` (the catalog, a prompt's
 * sync claim, and the two guarded `Put`s of each `TransactWriteItems`), `UpdateItem` (source bookkeeping,
 * `DELETED` marks, the shared Bedrock budget, releasing a claim). No `DeleteItem`: history is never deleted.
 */
export const SYNC_DATA_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:Scan',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
];

/** Customer managed key actions for reading a table encrypted with that key. */
export const KEY_READ_ACTIONS = [
  'kms:Decrypt',
];

/** Customer managed key actions for reading and writing a table encrypted with that key. */
export const KEY_WRITE_ACTIONS = [
  'kms:Decrypt',
  'kms:Encrypt',
  'kms:GenerateDataKey',
];

/**
 * Listing prompts. `ListPrompts` without a `promptIdentifier` lists the whole account and Region and has no
 * resource type, so it needs `Resource: *` (Service Authorization Reference, Amazon Bedrock: the `prompt`
 * resource type is optional for this action).
 */
export const BEDROCK_LIST_ACTIONS = [
  'bedrock:ListPrompts',
];

/** Reading a prompt or one of its versions (`prompt/<id>` and `prompt/<id>:<version>`). */
export const BEDROCK_READ_ACTIONS = [
  'bedrock:GetPrompt',
];

/**
 * Connecting to an ElastiCache cache with IAM authentication: granted on the cache and on the one user the
 * principal connects as (Amazon ElastiCache User Guide, "Authenticating with IAM").
 */
export const CACHE_CONNECT_ACTIONS = [
  'elasticache:Connect',
];

/**
 * What a Lambda function needs to attach to a VPC (the actions of the AWS managed policy
 * `AWSLambdaVPCAccessExecutionRole`); EC2 does not scope them to resources Lambda could name in advance.
 */
export const VPC_NETWORK_INTERFACE_ACTIONS = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeSubnets',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
];

/**
 * What the release function and the rollout controller call on the table: `GetItem` (pointer, version, label),
 * `Query` (the rollout registry), `PutItem` (the guarded label or pointer, the registry entry and the audit record,
 * each a `Put` of one `TransactWriteItems`), `DeleteItem` (the registry entry of a rollout that ended),
 * `ConditionCheckItem` (a label move's check, in its transaction, that `CURRENT` is not `DELETED`). No
 * `UpdateItem`, no `Scan`: versions are never rewritten and active rollouts are found without a scan.
 */
export const RELEASE_DATA_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
];

/** Emitting audit events on the account's default event bus. */
export const AUDIT_EVENT_ACTIONS = [
  'events:PutEvents',
];

/** Reading the state of the alarms a rollout names (the rollout controller). */
export const ALARM_READ_ACTIONS = [
  'cloudwatch:DescribeAlarms',
];
