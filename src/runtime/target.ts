/**
 * Read targets: what one `getPrompt` asks for — the `CURRENT` pointer, a pinned version, or a label — as a value that
 * carries its table key, its cache key, whether the catalog applies, its freshness rule, and how an item read for it
 * becomes a prompt. The read path (read-path.ts) is written once against this value; nothing else differs by target.
 * A label is a target only a client given the `labels` feature builds (label-feature.ts).
 */
import { PromptNotFoundError } from './errors';
import { fallbackPrompt, PromptFallback } from './fallback';
import { isDeleted, Prompt, promptFromItem } from './prompt';
import type { Provenance } from './provenance';
import { CURRENT, isValidPromptId, MAX_VERSION_NUMBER, PROMPT_ID_RULE, versionSortKey } from '../schema/keys';
import type { RolloutSpec } from '../schema/labels';

/** What an item read for a target serves. */
export interface Built {
  readonly prompt: Prompt;
  /** A label item's usable rollout map. */
  readonly rollout?: RolloutSpec;
  /** Why a label item's rollout map cannot be used. */
  readonly rolloutProblem?: string;
}

export interface ReadTarget {
  readonly promptId: string;
  /** The key of its entry (and of its not-found answer) in memory: the id, `#<version>#<id>` or `#<label>#<id>`. */
  readonly key: string;
  /** The item's sort key in the table (and in the L2's keys). */
  readonly sortKey: string;
  /** The exact version asked for (`undefined`: the pointer or a label). */
  readonly version: number | undefined;
  /** The label asked for. */
  readonly label: string | undefined;
  /**
   * Whether the catalog may rule the id out. Not for a label (it outlives its prompt's deletion at the source, which
   * takes the id out of the catalog), nor for a rollout's candidate (the label item named it).
   */
  readonly catalog: boolean;
  /** Freshness: `true` for an immutable version (kept until the size bound evicts it, never re-validated). */
  readonly immutable: boolean;
  /** Why this target can never be read (an invalid id, version or label name); `undefined` when it can. */
  invalid(): string | undefined;
  /** The error of a target the table does not hold (`deleted`: it holds a tombstone; `reason`: another answer). */
  notFound(deleted: boolean, reason?: string): PromptNotFoundError;
  /** What `item` serves (read with provenance `served`); `undefined` for a tombstone. Throws `PromptStoreError`. */
  build(item: Record<string, unknown>, served: Provenance): Built | undefined;
  /** The caller's fallback as served for this target. */
  fallback(fallback: PromptFallback): Prompt;
}

/** Why an id or a version can never be read; `undefined` when it can. */
export function invalidId(promptId: string, version: number | undefined): string | undefined {
  if (!isValidPromptId(promptId)) return `not a valid prompt id (${PROMPT_ID_RULE}, which is reserved)`;
  if (version !== undefined && !(Number.isInteger(version) && version >= 1 && version <= MAX_VERSION_NUMBER)) {
    return `a version is an integer from 1 to ${MAX_VERSION_NUMBER}`;
  }
  return undefined;
}

/** The pointer (`version` undefined) or an exact version of a prompt. */
class PromptTarget implements ReadTarget {
  // `declare`d and assigned in the constructor: the bundle spells each name once.
  declare readonly promptId: string;
  declare readonly version: number | undefined;
  declare readonly catalog: boolean;
  declare readonly key: string;
  declare readonly sortKey: string;
  declare readonly label: undefined;
  declare readonly immutable: boolean;

  constructor(promptId: string, version: number | undefined, catalog = true) {
    this.promptId = promptId;
    this.version = version;
    this.catalog = catalog;
    this.label = undefined;
    this.immutable = version !== undefined;
    this.key = version === undefined ? promptId : `#${version}#${promptId}`;
    // An invalid version gets no sort key: it is not found before anything is read (invalid()).
    this.sortKey = version === undefined ? CURRENT : invalidId('x', version) === undefined ? versionSortKey(version) : '';
  }

  invalid(): string | undefined {
    return invalidId(this.promptId, this.version);
  }

  notFound(deleted: boolean, reason?: string): PromptNotFoundError {
    return new PromptNotFoundError(String(this.promptId), this.version, deleted ? 'deleted' : reason);
  }

  build(item: Record<string, unknown>, served: Provenance): Built | undefined {
    return isDeleted(item) ? undefined : { prompt: promptFromItem(item, 1, served) };
  }

  fallback(fallback: PromptFallback): Prompt {
    return fallbackPrompt(this.promptId, fallback);
  }
}

/** The `CURRENT` pointer of a prompt. */
export function currentTarget(promptId: string): ReadTarget {
  return new PromptTarget(promptId, undefined);
}

/** An exact version; `catalog: false` for a rollout's candidate (read without asking the catalog). */
export function versionTarget(promptId: string, version: number, catalog = true): ReadTarget {
  return new PromptTarget(promptId, version, catalog);
}
