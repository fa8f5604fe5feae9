/**
 * The rollout step: what a label read serves once its entry is in hand. Without a usable rollout, the entry's own
 * prompt; with one, the arm the stickiness key picks (rollout.ts), arm B once the candidate version is read through
 * the same read path as any pinned version (without the catalog). A rollout that cannot serve arm B serves arm A,
 * counted in `rolloutFaults` and logged once per label item and reason.
 */
import type { Entry } from './entry';
import { PromptNotFoundError } from './errors';
import type { Prompt } from './prompt';
import type { ResolvedOptions } from './resolved-options';
import { logRolloutFault, RolloutState, ServeMode } from './rollout';
import type { Counters } from './stats';
import type { ReadTarget } from './target';
import { versionKey } from '../schema/keys';
import type { RolloutSpec } from '../schema/labels';

/**
 * What the labels feature builds the step from: the read path it serves (read-path.ts's `ReadPath`), so the core
 * wires nothing of the step itself.
 */
export interface RolloutHost {
  readonly options: ResolvedOptions;
  readonly counters: Counters;
  /** The exact-version entries held, by id and version. */
  readonly pinned: ReadonlyMap<string, ReadonlyMap<number, Entry>>;
  /** The load of a target under way, or a new one (single-flight). */
  load(target: ReadTarget): Promise<readonly [Entry, ServeMode]>;
}

export interface RolloutDeps {
  readonly counters: Counters;
  readonly tableName: string;
  /** Bound of the remembered fault messages. */
  readonly maxEntries: number;
  /** A version of a prompt held in memory (as a hit serves it). */
  readonly held: (promptId: string, version: number) => Prompt | undefined;
  /** Reads a version (single-flight with other reads of it, the catalog not consulted). */
  readonly loadVersion: (promptId: string, version: number) => Promise<Prompt>;
}

export class RolloutStep {
  /** The rollout fault last logged per label entry key (each is logged once, not per read). */
  private readonly faultsLogged = new Map<string, string>();

  private declare readonly deps: RolloutDeps;

  constructor(deps: RolloutDeps) {
    this.deps = deps;
  }

  /** The rollout of a label entry just read (`spec`: its usable rollout map; `armA`: the version the label names). */
  state(spec: RolloutSpec, label: string, armA: Prompt): RolloutState {
    return new RolloutState(spec, label, armA);
  }

  /**
   * The arm a read of a label entry serves, as `mode` says: a hit (`l1`), the read that loaded the entry (its
   * provenance), or stale. A read assigned arm B that waits for the candidate's read is served the candidate as that
   * read brought it.
   */
  serve(entry: Entry, stickinessKey: string | undefined, mode: ServeMode): Promise<Prompt> {
    const rollout = entry.rollout;
    if (rollout === undefined) {
      if (entry.rolloutProblem !== undefined) this.fault(entry, entry.rolloutProblem);
      return mode === 'hit' ? entry.resolved : Promise.resolve(mode === 'loaded' ? entry.prompt : entry.stale);
    }
    if (rollout.arm(entry.prompt.id, stickinessKey) === 'A') {
      return mode === 'hit' ? rollout.armAHitResolved : Promise.resolve(rollout.servedA(mode));
    }
    if (rollout.armB !== undefined) return mode === 'hit' ? rollout.armBHitResolved! : Promise.resolve(rollout.servedB(mode));
    if (rollout.loading !== undefined) {
      return rollout.loading.then(() => this.armBOrFault(entry, rollout, mode === 'stale' ? 'stale' : 'loaded'));
    }
    if (rollout.problem === undefined) this.prepareCandidate(entry, rollout).catch(() => undefined); // retried after a failed read
    return Promise.resolve(this.armBOrFault(entry, rollout, mode));
  }

  /** Puts the candidate version in hand: from memory at once, else one read (the catalog not consulted). */
  prepareCandidate(entry: Entry, rollout: RolloutState): Promise<void> {
    const { candidateVersion } = rollout.spec;
    const promptId = entry.prompt.id;
    const held = this.deps.held(promptId, candidateVersion);
    if (held !== undefined) {
      rollout.offer(held); // in memory: a read assigned arm B is served from l1
      return Promise.resolve();
    }
    const loading = this.deps.loadVersion(promptId, candidateVersion).then(
      (candidate) => rollout.offer(candidate),
      (err: unknown) => {
        // Absent: a fault of this label item. Any other failure is retried by the next read assigned arm B.
        if (err instanceof PromptNotFoundError) rollout.problem = `candidate version item ${versionKey(candidateVersion)} is absent`;
      },
    ).finally(() => {
      if (rollout.loading === loading) rollout.loading = undefined;
    });
    rollout.loading = loading;
    return loading;
  }

  private armBOrFault(entry: Entry, rollout: RolloutState, mode: ServeMode): Prompt {
    if (rollout.armB !== undefined) return rollout.servedB(mode);
    this.fault(entry, rollout.problem ?? `candidate v${rollout.spec.candidateVersion} could not be read`);
    return rollout.servedA(mode);
  }

  /** A read served arm A because arm B cannot be: counted, and logged once per label item and reason. */
  private fault(entry: Entry, problem: string): void {
    this.deps.counters.rolloutFaults++;
    if (this.faultsLogged.get(entry.key) === problem) return;
    if (this.faultsLogged.size >= this.deps.maxEntries) this.faultsLogged.clear();
    this.faultsLogged.set(entry.key, problem);
    logRolloutFault(this.deps.tableName, entry.prompt.id, entry.target.label!, entry.rollout?.spec.rolloutId ?? '', problem);
  }
}
