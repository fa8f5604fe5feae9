/**
 * The `labels` feature: reading a label (`getPrompt(id, { label })`, `preload(prompts, ids, { labels })`) and serving its
 * rollout. A client gets it only when the reader passes it (`new PromptClient({ features: [labels] })`), so a reader
 * that never reads a label bundles none of this: the label target, the label item's parsing, the rollout map's
 * validation and the rollout step (docs/adr/0007-reader-paid-for-by-use.md).
 */
import type { Entry } from './entry';
import { PromptNotFoundError, PromptServingError } from './errors';
import { fallbackPrompt, PromptFallback } from './fallback';
import { LabelIndex } from './label-index';
import { invalidLabelReason, labelCacheKey, labelItemKey, missingLabelReason, promptFromLabelItem } from './labels';
import type { Lru } from './lru';
import { Prompt, servedForLabel } from './prompt';
import type { Provenance } from './provenance';
import { RolloutHost, RolloutStep } from './rollout-step';
import { Built, invalidId, ReadTarget, versionTarget } from './target';
import { LabelAttr, parseRollout } from '../schema/labels';

/** What the client and the read path ask of the labels feature. */
export interface LabelFeature {
  /** A label of a prompt as a read target (the name is checked on the miss path, as ids are). */
  readonly target: (promptId: string, label: string) => ReadTarget;
  /** Why a label name can never be read; `undefined` when it can. */
  readonly invalid: (label: unknown) => string | undefined;
  /** The rollout step of one client's read path. */
  readonly step: (path: RolloutHost) => RolloutStep;
  /** The label entries of one client's read path (over its memory and its not-found answers). */
  readonly index: (prompts: Lru<Entry>, notFound: Lru<number>, maxEntries: number) => LabelIndex;
  /** Why a label read's other options are refused (`version` beside it, a `stickinessKey` not a string); `undefined` if not. */
  readonly refuse: (version: number | undefined, stickinessKey: unknown) => PromptServingError | undefined;
}

/** A feature a `PromptClient` is given in `features`. */
export type PromptClientFeature = LabelFeature;

/** A label of a prompt: the version its item names, and its rollout map when it has one. */
class LabelTarget implements ReadTarget {
  // `declare`d and assigned in the constructor: the bundle spells each name once.
  declare readonly promptId: string;
  declare readonly label: string;
  declare readonly key: string;
  declare readonly sortKey: string;
  readonly version = undefined;
  readonly catalog = false;
  readonly immutable = false;

  constructor(promptId: string, label: string) {
    this.promptId = promptId;
    this.label = label;
    this.key = labelCacheKey(label, promptId);
    this.sortKey = labelItemKey(label);
  }

  invalid(): string | undefined {
    return invalidId(this.promptId, undefined) ?? invalidLabelReason(this.label);
  }

  notFound(deleted: boolean, reason?: string): PromptNotFoundError {
    return new PromptNotFoundError(String(this.promptId), undefined,
      deleted ? `label '${this.label}' deleted` : reason ?? missingLabelReason(this.label));
  }

  build(item: Record<string, unknown>, served: Provenance): Built | undefined {
    const label = promptFromLabelItem(item, this.label, served);
    if (label === undefined) return undefined;
    const parsed = item[LabelAttr.rollout] === undefined ? undefined : parseRollout(item[LabelAttr.rollout]);
    return {
      prompt: label.prompt,
      rollout: parsed?.spec,
      rolloutProblem: parsed?.problem === undefined ? undefined : `the rollout map is malformed: ${parsed.problem}`,
    };
  }

  fallback(fallback: PromptFallback): Prompt {
    // Served for the label asked for (no arm: the fallback is neither version), provenance `fallback`.
    return servedForLabel(fallbackPrompt(this.promptId, fallback), this.label, undefined, false);
  }
}

/**
 * Reading labels and their rollouts: pass it to the client that reads them.
 *
 * @example
 * import { labels, PromptClient } from 'cdk-prompt-serving/runtime';
 * const prompts = new PromptClient({ features: [labels] });
 * const prompt = await prompts.getPrompt('support-answer', { label: 'production', stickinessKey: userId });
 */
export const labels: PromptClientFeature = {
  target: (promptId, label) => new LabelTarget(promptId, label),
  invalid: invalidLabelReason,
  step: (path) => new RolloutStep({
    counters: path.counters,
    tableName: path.options.tableName,
    maxEntries: path.options.maxEntries,
    held: (promptId, version) => path.pinned.get(promptId)?.get(version)?.hit,
    // A rollout's candidate: read without asking the catalog (the label item named it).
    loadVersion: (promptId, version) => path.load(versionTarget(promptId, version, false))
      .then(([e, mode]) => (mode === 'hit' ? e.hit : e.prompt)),
  }),
  index: (prompts, notFound, maxEntries) => new LabelIndex(prompts, notFound, maxEntries),
  refuse: (version, stickinessKey) => {
    if (stickinessKey !== undefined && typeof stickinessKey !== 'string') {
      return new PromptServingError(`\`stickinessKey\` must be a string, got ${stickinessKey === null ? 'null' : typeof stickinessKey}`);
    }
    return version === undefined ? undefined : new PromptServingError('give `version` or `label`, not both: a label names its own version');
  },
};
