/**
 * `cdk-prompt-serving/admin`: inspect a serving table's prompts and roll them back. Off the jsii surface and
 * free of aws-cdk-lib/constructs, so it runs in scripts, Lambda functions and the `cdk-prompt-serving` CLI.
 *
 * @example
 * import { PromptAdmin } from 'cdk-prompt-serving/admin';
 *
 * const admin = new PromptAdmin({ tableName: 'my-prompts' });
 * const { versions } = await admin.listVersions('greeting');
 * await admin.activate('greeting', versions[0].versionNumber, { activatedBy: 'alice' });
 */
export { MAX_ACTIVATION_ATTEMPTS, PromptAdmin, RELEASE_URL_ENV } from './prompt-admin';
export type {
  ActivateOptions,
  ActivationResult,
  GetOptions,
  ListAuditOptions,
  PromptAdminOptions,
  ReleaseOptions,
  ReleaseResult,
  StartRolloutOptions,
  StepRolloutOptions,
} from './prompt-admin';
export type { AuditRecord } from '../schema/release-api';
export type { AuditAction } from '../schema';
export type { PromptHistory, PromptVersionSummary } from './history';
export {
  ActivationConflictError,
  PromptAdminError,
  PromptDeletedError,
  AdminPromptNotFoundError,
  PromptTableError,
  PromptVersionNotFoundError,
  GateDeniedError,
  ReleaseCallError,
  MalformedReleaseAnswerError,
  ReleaseConflictError,
  ReleaseForbiddenError,
  ReleaseRefusedError,
} from './errors';
