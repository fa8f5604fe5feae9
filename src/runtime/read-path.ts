/**
 * The one read path of every target (target.ts): a fresh copy in memory → an expired one within
 * `staleWhileRevalidateSeconds` (served at once, refreshed in the background) → the negative cache → one load per key
 * (single-flight): the catalog when the target allows it, the L2, the table → on failure, the last good copy within
 * `staleIfErrorSeconds`, then the caller's fallback. A label read adds one step, its rollout (rollout-step.ts).
 */
import type { Catalog } from './catalog';
import type { Deadline } from './deadline';
import { Entry } from './entry';
import { PromptNotFoundError, PromptStoreError } from './errors';
import type { PromptFallback } from './fallback';
import type { LabelFeature } from './label-feature';
import type { LabelIndex } from './label-index';
import { Lru } from './lru';
import type { Prompt } from './prompt';
import { provenance } from './provenance';
import type { ResolvedOptions } from './resolved-options';
import type { ServeMode } from './rollout';
import type { RolloutStep } from './rollout-step';
import type { Counters } from './stats';
import type { ItemReader, Loaded } from './store';
import type { ReadTarget } from './target';

/** A loaded entry and how the read that waited for it serves it (`hit`: a newer copy was already in memory). */
type Served = readonly [Entry, ServeMode];

export class ReadPath {
  // Fields without an initializer are `declare`d and assigned in the constructor: the bundle spells each name once.
  declare readonly options: ResolvedOptions;
  declare readonly counters: Counters;
  private declare readonly reader: ItemReader;
  private declare readonly catalog: Catalog;
  /** Every entry, under its target's key (no valid id starts with `#`, so the three kinds of key never collide). */
  declare readonly prompts: Lru<Entry>;
  /** Not-found answers from the table (expiry, epoch ms), kept apart so unknown ids cannot evict prompts. */
  declare readonly notFound: Lru<number>;
  /** Loads under way, by key (single-flight). */
  private readonly flights = new Map<string, Promise<Served>>();
  /** The exact-version entries by id and version, so a pinned hit builds no key string (and the rollout step finds a candidate). */
  readonly pinned = new Map<string, Map<number, Entry>>();
  /** The label entries, when the client was given the labels feature. */
  declare readonly labels: LabelIndex | undefined;
  /** The rollout step, when the client was given the labels feature (only label entries have a rollout). */
  declare readonly rollouts: RolloutStep | undefined;
  /** The first catalog read finished: until then a cold read fetches the prompt beside it, not after it. */
  catalogWarm = false;
  /** Epoch moves seen: a load that started before the latest one may carry what it replaced. */
  generation = 0;

  constructor(options: ResolvedOptions, counters: Counters, reader: ItemReader, catalog: Catalog, labels: LabelFeature | undefined) {
    this.options = options;
    this.counters = counters;
    this.reader = reader;
    this.catalog = catalog;
    this.prompts = new Lru(options.maxEntries, (entry) => this.unindex(entry));
    this.notFound = new Lru(options.maxEntries);
    this.labels = labels?.index(this.prompts, this.notFound, options.maxEntries);
    this.rollouts = labels?.step(this);
  }

  /** The `CURRENT` entry of an id, if held (an id that is another target's key finds nothing). */
  currentEntry(promptId: string): Entry | undefined {
    const entry = this.prompts.get(promptId);
    return entry?.current === true ? entry : undefined;
  }

  /** The cached exact version, marked as used for the size bound. */
  pinnedEntry(promptId: string, version: number): Entry | undefined {
    const entry = this.pinned.get(promptId)?.get(version);
    if (entry !== undefined) this.prompts.get(entry.key);
    return entry;
  }

  /** What a read of `entry` serves, as `mode` says; a label's rollout picks the arm. */
  serve(entry: Entry, mode: ServeMode, stickinessKey: string | undefined): Promise<Prompt> {
    if (entry.plain) {
      return mode === 'hit' ? entry.resolved : Promise.resolve(mode === 'loaded' ? entry.prompt : entry.stale);
    }
    return this.rollouts!.serve(entry, stickinessKey, mode);
  }

  /** Everything but a fresh hit. `cached` is the expired (or untrusted) entry of this target, if any. */
  async miss(
    target: ReadTarget, cached: Entry | undefined, fallback: PromptFallback | undefined, stickinessKey: string | undefined,
  ): Promise<Prompt> {
    const now = Date.now();
    if (cached !== undefined && ((!cached.invalidated && now < cached.expiresAt + this.options.staleWhileRevalidateMs)
      || (cached.failing && now < cached.expiresAt + this.options.staleIfErrorMs))) {
      this.counters.staleServes++;
      this.load(target).catch(() => undefined);
      return this.serve(cached, 'stale', stickinessKey);
    }
    const invalid = target.invalid();
    if (invalid !== undefined) throw target.notFound(false, invalid);
    const notFoundUntil = this.notFound.get(target.key);
    if (notFoundUntil !== undefined && now < notFoundUntil) {
      this.counters.negativeHits++;
      throw target.notFound(false);
    }
    this.counters.misses++;
    try {
      // The read that loaded the entry: served with that read's provenance (`l2` or `table`), not as a hit.
      const [entry, mode] = await this.load(target);
      return await this.serve(entry, mode, stickinessKey);
    } catch (err) {
      if (!(err instanceof PromptStoreError)) throw err;
      if (cached !== undefined && Date.now() < cached.expiresAt + this.options.staleIfErrorMs) {
        this.counters.staleServes++;
        return this.serve(cached, 'stale', stickinessKey);
      }
      if (fallback === undefined) throw err;
      this.counters.fallbackServes++;
      return target.fallback(fallback);
    }
  }

  /** The load of a target under way, or a new one. Never leaves an unhandled rejection behind. */
  load(target: ReadTarget): Promise<Served> {
    const key = target.key;
    let flight = this.flights.get(key);
    if (flight === undefined) {
      const started = this.fetch(target);
      const settle = () => {
        if (this.flights.get(key) === started) this.flights.delete(key);
      };
      started.then(settle, (err: unknown) => {
        settle();
        const entry = this.prompts.get(key);
        if (err instanceof PromptStoreError && entry !== undefined) entry.failing = true;
      });
      this.flights.set(key, started);
      flight = started;
    }
    return flight;
  }

  /**
   * Catalog (when the target allows it) → L2 → table, within one `requestTimeoutMs`; remembers what it finds (or that
   * nothing was found). Until the first catalog read finished, the item is fetched beside it rather than after it, so a
   * cold read costs one round trip, not two, and never spends its deadline twice.
   */
  private async fetch(target: ReadTarget): Promise<Served> {
    const deadline = this.reader.deadline();
    if (!target.catalog) return this.fetchRemote(target, deadline);
    const known = this.catalog.verdictNow(target.promptId);
    if (known !== undefined) {
      this.catalogWarm = true;
      if (known) return this.fetchRemote(target, deadline);
      throw this.notInCatalog(target);
    }
    const verdict = this.catalog.mightContain(target.promptId, deadline).finally(() => { this.catalogWarm = true; });
    let remote: Promise<Served> | undefined;
    if (!this.catalogWarm) {
      remote = this.fetchRemote(target, deadline);
      remote.catch(() => undefined); // awaited below, unless the catalog rules the id out first
    }
    if (!(await verdict)) {
      // The read fetched beside the catalog must not land in memory after this answer (found by the convergence test).
      await remote?.catch(() => undefined);
      throw this.notInCatalog(target);
    }
    return remote ?? this.fetchRemote(target, deadline);
  }

  private notInCatalog(target: ReadTarget): PromptNotFoundError {
    this.counters.catalogRejections++;
    this.prompts.delete(target.key);
    return target.notFound(false, 'not in the catalog');
  }

  /** L2 → table; an L2 value that breaks the contract is counted and the table read instead. Waits for a rollout's candidate. */
  private async fetchRemote(target: ReadTarget, deadline: Deadline): Promise<Served> {
    const generation = this.generation;
    let loaded = await this.reader.read(target.promptId, target.sortKey, deadline);
    let served: Served;
    try {
      served = this.accept(target, loaded, generation);
    } catch (err) {
      if (!(loaded?.fromL2 === true && !(err instanceof PromptNotFoundError))) throw err;
      this.counters.l2Errors++;
      loaded = await this.reader.read(target.promptId, target.sortKey, deadline, true);
      served = this.accept(target, loaded, generation);
    }
    const loading = served[0].rollout?.loading;
    if (loading !== undefined) await loading;
    return served;
  }

  /**
   * Remembers a loaded item (a newer copy from the stream already in memory wins), or that there is none: throws
   * `PromptNotFoundError` for an absent item or a tombstone, `PromptStoreError` for one that breaks the contract.
   */
  accept(target: ReadTarget, loaded: Loaded | undefined, generation = this.generation): Served {
    const item = loaded?.item;
    const built = loaded === undefined || item === undefined ? undefined
      : target.build(item, provenance(loaded.source === 'table' ? 'table' : 'l2', false, loaded.fetchedAt));
    if (loaded === undefined || built === undefined) {
      this.prompts.delete(target.key);
      this.notFound.set(target.key, Date.now() + this.options.notFoundMaxAgeMs);
      if (target.label !== undefined) this.labels!.notFoundFor(target.label);
      throw target.notFound(item !== undefined);
    }
    const fetchedAt = loaded.source === 'stream' ? Date.now() : loaded.fetchedAt;
    const held = this.prompts.get(target.key);
    if (held?.token !== undefined && !held.invalidated && held.expiresAt > Date.now()
      && (loaded.token === undefined || this.reader.compareTokens!(held.token, loaded.token) > 0)) {
      return [held, 'hit']; // a late load: the stream's newer value arrived meanwhile (served from memory)
    }
    const rollout = built.rollout === undefined ? undefined : this.rollouts!.state(built.rollout, target.label!, built.prompt);
    const expiresAt = target.immutable ? Number.POSITIVE_INFINITY : fetchedAt + this.options.maxAgeMs;
    const entry = new Entry(target, rollout?.armA ?? built.prompt, expiresAt, loaded.token, rollout, built.rolloutProblem);
    // Loaded before an epoch move that re-validated everything else: served once, re-validated by the next read.
    if (!target.immutable && generation !== this.generation) entry.invalidated = true;
    this.prompts.set(target.key, entry);
    this.index(entry);
    this.notFound.delete(target.key);
    if (rollout !== undefined) this.rollouts!.prepareCandidate(entry, rollout).catch(() => undefined);
    return [entry, 'loaded'];
  }

  /** Forgets one prompt's entries (every target of it) and not-found answers. */
  forget(promptId: string): void {
    this.prompts.delete(promptId);
    this.notFound.delete(promptId);
    this.labels?.forget(promptId);
    for (const entry of [...(this.pinned.get(promptId)?.values() ?? [])]) {
      this.prompts.delete(entry.key);
      this.notFound.delete(entry.key);
    }
  }

  private index(entry: Entry): void {
    const { version, label, promptId } = entry.target;
    if (version !== undefined) {
      const byVersion = this.pinned.get(promptId) ?? new Map<number, Entry>();
      this.pinned.set(promptId, byVersion.set(version, entry));
    } else if (label !== undefined) {
      this.labels!.add(entry);
    }
  }

  /** Keeps the indexes in step with `prompts`: called for every entry that leaves it. */
  private unindex(entry: Entry): void {
    const { version, label, promptId } = entry.target;
    if (label !== undefined) {
      this.labels!.remove(entry);
      return;
    }
    if (version === undefined) return;
    const byVersion = this.pinned.get(promptId);
    if (byVersion?.get(version) !== entry) return;
    byVersion.delete(version);
    if (byVersion.size === 0) this.pinned.delete(promptId);
  }
}
