import { resolve as resolvePath } from 'node:path';
import { Annotations, ArnFormat, Stack, Token } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import type { BoundPromptSource } from './private/bound-source';
import { invalidProp, isUnresolved } from './private/errors';
import { wildcardResourceFinding } from './private/nag';
import { BEDROCK_LIST_ACTIONS, BEDROCK_READ_ACTIONS } from './private/perms';
import {
  fingerprintPromptDirectory,
  promptLayerCode,
  PROMPTS_MOUNT_PATH,
  validatePromptDirectory,
} from './private/prompt-directory';
import { ALLOW_INVALID_PROP, checkPromptDirectoryAtSynth, promptDirectoryWarningsAtSynth } from './private/prompt-file-check';
import { BEDROCK_PROMPT_ID, BEDROCK_PROMPT_QUOTA_PER_SECOND, DEFAULT_SOURCE_REQUESTS_PER_SECOND, PROMPT_CHANGE_EVENT_NAMES } from './schema';


/** Which version of each Bedrock prompt the table serves. */
export enum PromptVersionSelection {
  /**
   * The highest numbered version (made with `CreatePromptVersion`). A prompt with no numbered version yet is
   * not served, so editing a draft never changes what readers get.
   */
  LATEST = 'LATEST',

  /** The working draft: every saved edit is served after the next sync. */
  DRAFT = 'DRAFT',
}

/** Options for `PromptSource.bedrock()`. */
export interface BedrockPromptSourceOptions {
  /**
   * Ids of the Bedrock prompts to serve (10 letters or digits, not ARNs); other prompts are ignored.
   *
   * Also scopes the sync function's `bedrock:GetPrompt` permission to these prompts.
   *
   * @default - every prompt in the account and Region
   */
  readonly promptIds?: string[];

  /**
   * Which version of each prompt to serve.
   *
   * @default PromptVersionSelection.LATEST
   */
  readonly promptVersion?: PromptVersionSelection;

  /**
   * Most Bedrock Prompt Management requests per second (`ListPrompts` and `GetPrompt` together) one sync makes.
   *
   * These APIs allow 10 requests per second per account and Region, shared by every caller and not
   * adjustable; the sync backs off when throttled. Must be greater than 0 and at most 10.
   *
   * @default 5
   */
  readonly maxRequestsPerSecond?: number;
}

/** Options for a prompts-as-code directory source. */
export interface DirectoryPromptSourceOptions {
  /**
   * Whether the app may deploy while some prompt files cannot be synced (they do not parse, break the wire
   * contract, reuse another file's prompt id, or exceed DynamoDB's item size).
   *
   * By default such a file fails synthesis, naming the file and the reason. When true, each one becomes a
   * warning instead; the other prompts deploy, and every sync reports the bad files as failed prompts (the
   * failed-prompts alarm fires) while readers keep getting their last good version.
   *
   * @default false
   */
  readonly allowInvalidPromptFiles?: boolean;
}

/**
 * Where the prompts served by a `PromptServingTable` come from: the source of truth the sync copies from.
 */
export abstract class PromptSource {
  /**
   * Prompts authored in Amazon Bedrock Prompt Management in the stack's account and Region.
   *
   * The sync lists prompts and calls `GetPrompt` only for prompts whose listed version or `updatedAt` differs
   * from what the table holds, pacing itself under `maxRequestsPerSecond`.
   */
  public static bedrock(options: BedrockPromptSourceOptions = {}): PromptSource {
    const promptIds = validatePromptIds(options.promptIds);
    const maxRequestsPerSecond = options.maxRequestsPerSecond ?? DEFAULT_SOURCE_REQUESTS_PER_SECOND;
    validateMaxRequestsPerSecond(maxRequestsPerSecond);

    return new (class extends PromptSource {
      public _bind(scope: Construct): BoundPromptSource {
        const promptArn = (id: string) => Stack.of(scope).formatArn({
          service: 'bedrock',
          resource: 'prompt',
          resourceName: id,
          arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
        });
        const readableArns = promptIds
          ? promptIds.flatMap((id) => [promptArn(id), `${promptArn(id)}:*`])
          : [promptArn('*')];
        return {
          type: 'bedrock',
          options: {
            version: options.promptVersion ?? PromptVersionSelection.LATEST,
            ...(promptIds ? { promptIds } : {}),
            maxRequestsPerSecond,
          },
          layers: [],
          statements: [
            new iam.PolicyStatement({ actions: BEDROCK_LIST_ACTIONS, resources: ['*'] }),
            new iam.PolicyStatement({ actions: BEDROCK_READ_ACTIONS, resources: readableArns }),
          ],
          acknowledgements: [
            {
              id: wildcardResourceFinding(scope, '*'),
              reason: 'bedrock:ListPrompts without a promptIdentifier lists the whole account and Region and has no resource type, '
                + 'so it needs Resource "*"; it returns ids, names and versions, never prompt content.',
            },
            ...readableArns.filter((arn) => arn.endsWith('*')).map((arn) => ({
              id: wildcardResourceFinding(scope, arn),
              reason: promptIds
                ? 'bedrock:GetPrompt on prompt/<id>:* reads whichever numbered version of a listed prompt is the latest.'
                : 'bedrock:GetPrompt on prompt/* because no promptIds were given, so every prompt in the account and Region is served; '
                  + 'pass promptIds to narrow it.',
            })),
          ],
          changeEventPattern: {
            source: ['aws.bedrock'],
            detailType: ['AWS API Call via CloudTrail'],
            detail: {
              eventSource: ['bedrock.amazonaws.com'],
              eventName: [...PROMPT_CHANGE_EVENT_NAMES],
              errorCode: events.Match.doesNotExist(),
            },
          },
        };
      }
    })();
  }

  /**
   * Prompts as code: a directory in the CDK app's repository, deployed with the app.
   *
   * Prompt files are `.md` (optional YAML front matter, the body is the template), `.yaml`, `.yml` and `.json`;
   * `README.md` and files and folders whose names start with `.` or `_` are skipped. They ship to the sync
   * function as a Lambda layer (at `/opt/prompts`); every deploy that changes a prompt file re-syncs the
   * directory, and unchanged prompts are not rewritten. Checked at synth: the directory must exist and hold at
   * least one prompt file, and every prompt file must be one the sync can serve (the options can allow invalid
   * files instead).
   *
   * @example
   * import { PromptServingTable, PromptSource } from 'cdk-prompt-serving';
   *
   * new PromptServingTable(this, 'Prompts', {
   *   source: PromptSource.fromDirectory('prompts', { allowInvalidPromptFiles: false }),
   * });
   *
   * @param path the folder holding the prompt files; a relative path starts at the CDK app's working directory
   * @param options what to do with prompt files that cannot be synced
   */
  public static fromDirectory(path: string, options: DirectoryPromptSourceOptions = {}): PromptSource {
    const resolved = resolvePath(path);
    validatePromptDirectory(resolved);
    const problems = checkPromptDirectoryAtSynth(resolved, options.allowInvalidPromptFiles ?? false);
    const warnings = promptDirectoryWarningsAtSynth(resolved);
    const fingerprint = fingerprintPromptDirectory(resolved);

    return new (class extends PromptSource {
      public _bind(scope: Construct): BoundPromptSource {
        for (const problem of problems) {
          Annotations.of(scope).addWarningV2('cdk-prompt-serving:invalidPromptFile',
            `${problem} (deployed anyway: \`${ALLOW_INVALID_PROP}\` is true; each sync reports this file as a failed prompt)`);
        }
        for (const warning of warnings) Annotations.of(scope).addWarningV2('cdk-prompt-serving:promptFileWarning', warning);
        const layer = new lambda.LayerVersion(scope, 'PromptsLayer', {
          code: promptLayerCode(resolved, fingerprint),
          description: 'Prompts-as-code synced into the serving table',
        });
        return {
          type: 'directory',
          options: { path: PROMPTS_MOUNT_PATH },
          layers: [layer],
          contentFingerprint: fingerprint,
          statements: [],
          acknowledgements: [],
        };
      }
    })();
  }

  private constructor() {}

  /**
   * Creates what the source needs in `scope` and describes how the sync function reads it.
   *
   * @internal
   */
  public abstract _bind(scope: Construct): BoundPromptSource;
}

function validatePromptIds(promptIds: string[] | undefined): string[] | undefined {
  if (promptIds === undefined) {
    return undefined;
  }
  if (Token.isUnresolved(promptIds)) {
    throw invalidProp('promptIds', 'be a list written in the app, so each prompt\'s ARN can be scoped', promptIds,
      'Its entries may be tokens, such as `CfnPrompt.attrId`');
  }
  if (promptIds.length === 0) {
    throw invalidProp('promptIds', 'list at least one prompt id', promptIds, 'Omit `promptIds` to serve every prompt');
  }
  for (const id of promptIds) {
    if (!Token.isUnresolved(id) && !BEDROCK_PROMPT_ID.test(id)) {
      throw invalidProp('promptIds', 'hold Bedrock prompt ids (10 letters or digits)', id,
        'Pass the id (the last part of the prompt ARN), not the ARN or the name');
    }
  }
  return [...new Set(promptIds)];
}

function validateMaxRequestsPerSecond(value: number): void {
  if (isUnresolved(value)) {
    return;
  }
  if (!(value > 0 && value <= BEDROCK_PROMPT_QUOTA_PER_SECOND)) {
    throw invalidProp('maxRequestsPerSecond', `be greater than 0 and at most ${BEDROCK_PROMPT_QUOTA_PER_SECOND}`, value,
      `Bedrock allows ${BEDROCK_PROMPT_QUOTA_PER_SECOND} prompt requests per second per account and Region, shared by every caller`);
  }
}
