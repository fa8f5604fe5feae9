/**
 * One remembered read target (target.ts) in memory: its prompt in the copies a read serves (as loaded, as a hit,
 * stale), its expiry, and for a label its rollout. Hits return the settled promise built once, so they allocate nothing.
 */
import { Prompt, servedCopy } from './prompt';
import type { RolloutState } from './rollout';
import type { ReadTarget } from './target';
import type { Token } from './tiers';

export class Entry {
  // Fields without an initializer are `declare`d and assigned in the constructor: the bundle spells each name once.
  declare readonly target: ReadTarget;
  /** The prompt as loaded (the provenance of the read that brought it). */
  declare readonly prompt: Prompt;
  declare expiresAt: number;
  /** The stream value's ordering token (copies from the stream only): the epoch re-validation compares it. */
  declare readonly token: Token | undefined;
  /** A label entry's rollout, when its item has a usable one. */
  declare readonly rollout: RolloutState | undefined;
  /** Why a label entry's rollout map cannot be used (every read is served arm A and counted). */
  declare readonly rolloutProblem: string | undefined;
  /** The prompt as a hit serves it (provenance `l1`), built once. */
  declare readonly hit: Prompt;
  declare readonly resolved: Promise<Prompt>;
  /** The last read of this key failed: serve this copy at once (within the bound) while reads retry. */
  failing = false;
  /**
   * The epoch moved and the L2 could not confirm this copy: it is not served as fresh (nor stale-while-revalidate)
   * but kept as the last good copy for stale-if-error until a newer one is in hand.
   */
  invalidated = false;
  private declare staleVariant: Prompt | undefined;
  /** A label entry's hits, so only every 16th marks it used in the LRU. */
  labelHits = 0;
  /** The `CURRENT` pointer's entry (an id that is another target's key must not find it). Copied for the hot path. */
  declare readonly current: boolean;
  /** An exact version: never expires, never re-validated. Copied from the target for the hot path. */
  declare readonly immutable: boolean;
  /** No rollout step: a hit serves `resolved` as it is. */
  declare readonly plain: boolean;

  constructor(target: ReadTarget, prompt: Prompt, expiresAt: number, token: Token | undefined, rollout?: RolloutState, rolloutProblem?: string) {
    this.target = target;
    this.prompt = prompt;
    this.expiresAt = expiresAt;
    this.token = token;
    this.rollout = rollout;
    this.rolloutProblem = rolloutProblem;
    this.hit = servedCopy(prompt, 'l1', false);
    this.resolved = Promise.resolve(this.hit);
    this.current = target.version === undefined && target.label === undefined;
    this.immutable = target.immutable;
    this.plain = rollout === undefined && rolloutProblem === undefined;
  }

  get key(): string {
    return this.target.key;
  }

  /** This prompt flagged `stale: true` (served from memory), built on first use. */
  get stale(): Prompt {
    return this.staleVariant ??= servedCopy(this.prompt, 'l1', true);
  }
}
