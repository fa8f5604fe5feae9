import type { Acknowledgment } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';

/** What a `PromptSource` contributes to a `PromptServingTable` once bound to it. */
export interface BoundPromptSource {
  /** Value of `PROMPT_SERVING_SOURCE`. */
  readonly type: string;

  /** Value of `PROMPT_SERVING_SOURCE_OPTIONS`, before JSON rendering (may hold tokens). */
  readonly options: { [key: string]: unknown };

  /** Layers the sync function needs to read the source. */
  readonly layers: lambda.ILayerVersion[];

  /** Synth-time digest of the source content, when the content ships with the app. */
  readonly contentFingerprint?: string;

  /** Statements the sync function needs to read the source. */
  readonly statements: iam.PolicyStatement[];

  /** The cdk-nag findings those statements deliberately raise, each with the reason in words. */
  readonly acknowledgements: Acknowledgment[];

  /** Events that announce a change at the source, for the `syncOnSourceChange` rule. */
  readonly changeEventPattern?: events.EventPattern;
}
