/**
 * Sticky rollouts on the read side. A label item with a `rollout` map (src/schema/labels.ts) serves arm A (the
 * label's own content) or arm B (the immutable version item `v<candidate_version>`), chosen per read by
 * `rolloutBucket(id, label, stickinessKey) < percent_bp` — one SHA-256 per new short key (a bucket remembered per key
 * of at most 64 code units) or per read for a longer key, only while a rollout exists —
 * or at random without a key. A rollout that cannot be served as written (a malformed map, an absent candidate, a
 * candidate whose checksum is not the map's) fails alone: arm A is served, the read counted in `rolloutFaults`
 * and the reason logged once; arm B is never served with content other than the candidate the map names.
 */
import type { Prompt, PromptRollout } from './prompt';
import { servedCopy, servedForLabel, staleCopy } from './prompt';
import { versionKey } from '../schema/keys';
import { RolloutSpec, rolloutBucket, ROLLOUT_SCALE } from '../schema/labels';

/** Stickiness keys whose bucket one label entry remembers. */
export const MAX_REMEMBERED_BUCKETS = 1024;
/**
 * Longest stickiness key (UTF-16 code units) whose bucket is remembered, under a copy of its own: a label entry holds at
 * most {@link MAX_REMEMBERED_BUCKETS} × this (about 150 KB), whatever the caller passes. A longer key's bucket is
 * computed on each read (the SHA-256 that picks it reads the whole key anyway) and nothing of it is kept.
 */
export const MAX_REMEMBERED_KEY_LENGTH = 64;

/** How a read is served: a fresh copy from memory, the copy just loaded (provenance of its read), or stale. */
export type ServeMode = 'hit' | 'loaded' | 'stale';

/**
 * One label entry's rollout: both arms once the candidate is in hand, each in three copies that differ only in
 * `provenance` (built once, so a hit allocates nothing): as loaded (`l2` or `table`, from the read that brought it),
 * as a hit serves it (`l1`), and stale (`l1`, `stale: true`, built on first use).
 */
export class RolloutState {
  /** Arm A as loaded (the label's prompt with `rollout.arm = 'A'`, the provenance of the label item's read). */
  declare readonly armA: Prompt;
  /** Arm A as a hit serves it (provenance `l1`), and its settled promise. */
  declare readonly armAHit: Prompt;
  declare readonly armAHitResolved: Promise<Prompt>;
  /** Arm B as loaded (the provenance of the candidate's read; `l1` when the candidate was already in memory). */
  declare armB: Prompt | undefined;
  declare armBHit: Prompt | undefined;
  declare armBHitResolved: Promise<Prompt> | undefined;
  /** Why arm B cannot be served (permanent for this label item); arm A is served to its share instead. */
  declare problem: string | undefined;
  /** The candidate's load under way; reads assigned arm B wait for it. */
  declare loading: Promise<void> | undefined;
  /** Buckets of recent stickiness keys (the hash once per key while this label item is held; bounded). */
  private readonly buckets = new Map<string, number>();
  private declare staleA: Prompt | undefined;
  private declare staleB: Prompt | undefined;
  // Fields without an initializer are `declare`d (assigned where set): the bundle spells each name once.
  declare readonly spec: RolloutSpec;
  declare readonly label: string;

  constructor(spec: RolloutSpec, label: string, labelPrompt: Prompt) {
    this.spec = spec;
    this.label = label;
    this.armA = servedForLabel(labelPrompt, label, this.report('A'), labelPrompt.sourceDeleted);
    this.armAHit = servedCopy(this.armA, 'l1', false);
    this.armAHitResolved = Promise.resolve(this.armAHit);
  }

  /**
   * Takes the candidate version's prompt (as its read served it: pass a copy held in memory as its `l1` copy): arm B
   * when its checksum is the map's, else a fault.
   */
  offer(candidate: Prompt): void {
    if (candidate.checksum !== this.spec.candidateChecksum) {
      this.problem = `candidate ${versionKey(this.spec.candidateVersion)} has checksum ${candidate.checksum}, the rollout names ${this.spec.candidateChecksum}`;
      return;
    }
    const armB = servedForLabel(candidate, this.label, this.report('B'), this.armA.sourceDeleted);
    this.armBHit = servedCopy(armB, 'l1', false);
    this.armBHitResolved = Promise.resolve(this.armBHit);
    this.staleB = undefined;
    this.armB = armB;
    this.problem = undefined;
  }

  /** The arm of one read: by the key's bucket (remembered for {@link MAX_REMEMBERED_BUCKETS} keys), else at random. */
  arm(promptId: string, stickinessKey: string | undefined): 'A' | 'B' {
    const percentBp = this.spec.percentBp;
    if (percentBp <= 0) return 'A';
    if (percentBp >= ROLLOUT_SCALE) return 'B';
    if (stickinessKey === undefined) return Math.random() * ROLLOUT_SCALE < percentBp ? 'B' : 'A';
    if (stickinessKey.length > MAX_REMEMBERED_KEY_LENGTH) return rolloutBucket(promptId, this.label, stickinessKey) < percentBp ? 'B' : 'A';
    let bucket = this.buckets.get(stickinessKey);
    if (bucket === undefined) {
      bucket = rolloutBucket(promptId, this.label, stickinessKey);
      if (this.buckets.size >= MAX_REMEMBERED_BUCKETS) this.buckets.clear();
      this.buckets.set(ownCopy(stickinessKey), bucket);
    }
    return bucket < percentBp ? 'B' : 'A';
  }

  /** Arm A's copy for a read served `mode`. */
  servedA(mode: ServeMode): Prompt {
    if (mode === 'hit') return this.armAHit;
    if (mode === 'loaded') return this.armA;
    return this.staleA ??= staleCopy(this.armA);
  }

  /** Arm B's copy for a read served `mode` (arm B in hand). */
  servedB(mode: ServeMode): Prompt {
    if (mode === 'hit') return this.armBHit!;
    if (mode === 'loaded') return this.armB!;
    return this.staleB ??= staleCopy(this.armB!);
  }

  private report(arm: 'A' | 'B'): PromptRollout {
    const { rolloutId, percentBp, candidateVersion } = this.spec;
    return { label: this.label, rolloutId, arm, percentBp, candidateVersion };
  }
}

/**
 * A short string that shares no storage with the caller's: V8 may represent a substring as a slice of its parent, and
 * a remembered slice of a 1 MB request body would keep the whole body alive.
 */
function ownCopy(key: string): string {
  return (' ' + key).slice(1); // the concatenation is flattened into a new string of at most 65 code units
}

/**
 * The arm of one read: by the key's bucket when a stickiness key is given (the same key always lands in the same
 * bucket, so raising the share only moves keys from A to B), else at random.
 */
export function chooseArm(promptId: string, label: string, stickinessKey: string | undefined, percentBp: number): 'A' | 'B' {
  if (percentBp <= 0) return 'A';
  if (percentBp >= ROLLOUT_SCALE) return 'B';
  const bucket = stickinessKey === undefined ? Math.floor(Math.random() * ROLLOUT_SCALE) : rolloutBucket(promptId, label, stickinessKey);
  return bucket < percentBp ? 'B' : 'A';
}

/** One JSON WARN line on stdout (as the client's other logs: Lambda keeps it as one structured record). */
export function logRolloutFault(tableName: string, promptId: string, label: string, rolloutId: string, problem: string): void {
  process.stdout.write(JSON.stringify({
    level: 'WARN',
    message: `cdk-prompt-serving: the rollout of label '${label}' of prompt '${promptId}' cannot serve arm B (${problem}); arm A is served to its share until the rollout is fixed or removed`,
    table: tableName,
    promptId,
    label,
    rolloutId,
  }) + '\n');
}
