/**
 * `PromptClient`: reads prompts from the serving table through an in-process cache (and an optional shared
 * L2), with single-flight loads, negative caching, a Bloom-filter catalog, stale-while-revalidate and
 * stale-if-error.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Catalog } from './catalog';
import { EpochWatcher } from './epoch';
import { PromptNotFoundError, PromptServingError, PromptStoreError } from './errors';
import { fallbackPrompt, PromptFallback } from './fallback';
import { callReadHook, warnHookFailed } from './hook';
import { PromptCacheL2, withTimeout } from './l2';
import { ADAPTER_MODULE, cacheConfigFromEnv, loadAdapter } from './l2-env';
import { invalidLabelReason, labelCacheKey, labelItemKey, missingLabelReason, promptFromLabelItem } from './labels';
import { Lru } from './lru';
import { PromptClientOptions, ResolvedOptions, resolveOptions } from './options';
import { isDeleted, Prompt, promptFromItem, servedCopy, servedForLabel } from './prompt';
import { OnRead, provenance, readInfo } from './provenance';
import { logRolloutFault, RolloutState, ServeMode } from './rollout';
import { Counters, newCounters, PromptClientStats } from './stats';
import type { Deadline } from './store';
import { CacheFirstReader, Loaded, Token } from './tiers';
import type { PromptFor } from './typed';
import { logUnavailable } from './unavailable';
import { CURRENT, isValidPromptId, MAX_VERSION_NUMBER, PROMPT_ID_RULE, versionKey } from '../schema/keys';
import { compareTokens, l2EpochKey } from '../schema/l2';
import { LabelAttr, parseRollout } from '../schema/labels';

/** Options of one `getPrompt` call. */
export interface GetPromptOptions {
  /**
   * An exact version number (`v000003` in the table). Versions are immutable: once read, one stays in
   * memory until the size bound evicts it.
   * @default - the CURRENT version
   */
  readonly version?: number;
  /**
   * Returned (flagged `stale`, version 0) only when nothing can be read: the table fails, and neither the L2
   * nor memory holds a copy within `staleIfErrorSeconds`. Never used for a prompt that does not exist.
   * @default - no fallback: the read throws `PromptStoreError`
   */
  readonly fallback?: PromptFallback;
  /**
   * A label (`production`, `staging`, …: a lowercase letter, then up to 62 lowercase letters, digits, `-` or `_`)
   * instead of `CURRENT`: the version the label points at, cached, negative-cached and kept fresh exactly as
   * `CURRENT` is. An unknown label is not found. Not with `version`.
   * @default - the CURRENT version
   */
  readonly label?: string;
  /**
   * With `label`, while the label has a rollout: the key (a user or tenant id) that picks the arm, the same arm for
   * the same key for the whole rollout. Ignored without a rollout.
   * @default - each read picks its arm at random, by the rollout's share
   */
  readonly stickinessKey?: string;
}

/** Options of `preload`. */
export interface PreloadOptions {
  /**
   * Labels to read for every id as well (each label item and, when it has a rollout, its candidate version).
   * @default - no labels: the CURRENT version of each id only
   */
  readonly labels?: readonly string[];
}

/** One remembered prompt, with the settled promise the hot path returns so a hit allocates nothing. */
class Entry {
  /** The prompt as a hit serves it (provenance `l1`), built once. */
  readonly hit: Prompt;
  readonly resolved: Promise<Prompt>;
  /** The last read of this key failed: serve this copy at once (within the bound) while reads retry. */
  failing = false;
  /**
   * The epoch moved and the L2 could not confirm this copy: it is not served as fresh (nor stale-while-revalidate)
   * but kept as the last good copy for stale-if-error until a newer one is in hand.
   */
  invalidated = false;
  private staleVariant: Prompt | undefined;
  /** The label of a label entry (`undefined` for CURRENT and exact versions). */
  label: string | undefined;
  /** A label entry's rollout, when its item has a usable one. */
  rollout: RolloutState | undefined;
  /** Why a label entry's rollout map cannot be used (every read is served arm A and counted). */
  rolloutProblem: string | undefined;
  /** A label entry's hits, so only every 16th marks it used in the LRU. */
  labelHits = 0;

  constructor(
    readonly key: string,
    readonly prompt: Prompt,
    readonly version: number | undefined,
    public expiresAt: number,
    /** The stream value's ordering token (copies from the stream only): the epoch re-validation compares it. */
    readonly token: Token | undefined,
  ) {
    this.hit = servedCopy(prompt, 'l1', false);
    this.resolved = Promise.resolve(this.hit);
  }

  /** This prompt flagged `stale: true` (served from memory), built on first use. */
  get stale(): Prompt {
    return this.staleVariant ??= servedCopy(this.prompt, 'l1', true);
  }
}

/**
 * Reads prompts from a `PromptServingTable`. Create one per process (outside the Lambda handler) and share it.
 *
 * A read tries, in order: memory (fresh copy) → expired copy within `staleWhileRevalidateSeconds` (returned at
 * once, refreshed in the background) → the catalog (rules out unknown ids without a remote call) → the L2 →
 * one `GetItem` (retried on throttling within `requestTimeoutMs`) → on failure, the last good copy within
 * `staleIfErrorSeconds`. Concurrent reads of one key share one load.
 */
export class PromptClient {
  private readonly options: ResolvedOptions;
  private readonly counters: Counters = newCounters();
  /** CURRENT prompts under their id, exact versions under `#<version>#<id>` (no valid id starts with `#`). */
  private readonly prompts: Lru<Entry>;
  /** The exact-version entries of `prompts` by id and version, so a pinned hit builds no key string. */
  private readonly pinned = new Map<string, Map<number, Entry>>();
  /** The label entries of `prompts` (under `#<label>#<id>`) by label and id, so a labeled hit builds no key string. */
  private readonly labeled = new Map<string, Map<string, Entry>>();
  /** The label last read and its map of `labeled` (dropped with that map), so a hit of the usual label skips one lookup. */
  private lastLabel: string | undefined;
  private lastById: Map<string, Entry> | undefined;
  /** Label loads under way, by cache key (single-flight); they settle to the entry, so each read picks its arm. */
  private readonly labelFlights = new Map<string, Promise<Entry>>();
  /** Not-found answers from the table (expiry, epoch ms), kept apart so unknown ids cannot evict prompts. */
  private readonly notFound: Lru<number>;
  /** Loads under way, by cache key (single-flight). */
  private readonly flights = new Map<string, Promise<Prompt>>();
  /** Labels answered not found, so `invalidate(id)` forgets those answers too (bounded by `maxEntries`). */
  private readonly labelsAsked = new Set<string>();
  /** The rollout fault last logged per label entry key (each is logged once, not per read). */
  private readonly faultsLogged = new Map<string, string>();
  private readonly reader: CacheFirstReader;
  private readonly catalog: Catalog;
  private readonly l2: PromptCacheL2 | undefined;
  private readonly epoch: EpochWatcher | undefined;
  /** `true` when this client built its own L2 from the environment (it closes it in `close`). */
  private ownsL2 = false;
  /** The first catalog read finished: until then a cold read fetches the prompt beside it, not after it. */
  private catalogWarm = false;
  /** Epoch moves seen: a load that started before the latest one may carry what it replaced. */
  private generation = 0;
  /**
   * Until when a CURRENT copy may be served without reading the epoch first (set by the epoch watch after each
   * check: two poll intervals on); infinite without the watch. One number compare on the hot path.
   */
  private epochTrustedUntil = Number.POSITIVE_INFINITY;
  /** The per-read hook (`undefined`: the read path only compares it). */
  private readonly onRead: OnRead | undefined;
  private onReadFailed = false;

  /**
   * @throws PromptServingError if no table name is given or set in the environment, or an option is out of range
   * @example
   * // Outside the handler: one client per process. The construct sets PROMPT_SERVING_TABLE_NAME.
   * const prompts = new PromptClient({ maxAgeSeconds: 30 });
   */
  constructor(options: PromptClientOptions = {}) {
    this.options = resolveOptions(options);
    if (options.onRead !== undefined && typeof options.onRead !== 'function') {
      throw new PromptServingError(`onRead must be a function (info, client) => void, got ${typeof options.onRead}`);
    }
    this.onRead = options.onRead;
    this.prompts = new Lru(this.options.maxEntries, (entry) => this.unpin(entry));
    this.notFound = new Lru(this.options.maxEntries);
    const dynamoDB = options.dynamoDBClient ?? new DynamoDBClient({ maxAttempts: 1 });
    this.l2 = options.l2 ?? this.l2FromEnvironment(dynamoDB);
    this.reader = new CacheFirstReader(
      dynamoDB,
      this.options.tableName,
      this.options.requestTimeoutMs,
      this.options.maxAttempts,
      this.counters,
      {
        l2: this.l2,
        ...this.options,
        incarnation: () => this.epoch?.incarnation,
        epochReady: () => this.epoch?.ready() ?? Promise.resolve(),
      },
    );
    this.catalog = new Catalog(this.reader, this.options.catalogMaxAgeMs, this.counters);
    if (this.l2?.writeThrough === true) {
      const l2 = this.l2;
      const epochKey = l2EpochKey(this.options.tableName);
      let firstEpochRead = true;
      this.epoch = new EpochWatcher(
        async () => {
          // The first read waits for the first connection (bounded); cold reads send their own GETs beside it (one
          // round trip), and use a stream value once it names the incarnation.
          if (l2.ready !== undefined) await withTimeout(() => l2.ready!(), this.options.l2ConnectTimeoutMs).catch(() => undefined);
          // The first read is a start-up round trip (see CacheFirstReader.l2CallTimeoutMs), made at construction.
          const timeoutMs = firstEpochRead ? Math.max(this.options.l2ConnectTimeoutMs, this.options.l2TimeoutMs) : this.options.l2TimeoutMs;
          firstEpochRead = false;
          return withTimeout(() => l2.get(epochKey), timeoutMs);
        },
        this.options.epochPollIntervalMs,
        () => this.revalidate(),
        (trustedUntil) => { this.epochTrustedUntil = trustedUntil; },
      );
      this.epoch.start();
    }
    // A reader the L2 serves makes its first table read when the cache fails: warm the SDK before that, once the
    // L2's first connection is settled (not during it, which would slow this reader's start).
    const ready = this.l2?.ready;
    if (ready !== undefined) {
      void withTimeout(() => ready.call(this.l2), this.options.l2ConnectTimeoutMs).catch(() => undefined).then(() => this.reader.warmUp());
    }
  }

  /**
   * The CURRENT version of a prompt (one eventually consistent `GetItem` of its pointer when not cached), or an
   * exact version with `{ version }`.
   *
   * @throws PromptNotFoundError if the prompt does not exist, was deleted, or the id is invalid or reserved; with
   *   `label`, if the label does not exist or its name is invalid (the reason names the label)
   * @throws PromptStoreError if the table cannot be read and no copy within `staleIfErrorSeconds` is held
   * @throws PromptServingError (rejected) for `version` and `label` together, or a `stickinessKey` that is not a string
   * @example
   * const prompt = await prompts.getPrompt('support-triage');
   * if (prompt.templateType === 'TEXT') {
   *   const text = prompt.render({ ticket: event.body });
   * }
   * const pinned = await prompts.getPrompt('support-triage', { version: 3 });
   * // A label, with the caller's user id picking the arm while the label has a rollout:
   * const labeled = await prompts.getPrompt('support-triage', { label: 'production', stickinessKey: userId });
   * logger.info('served', { version: labeled.version, rollout: labeled.rollout });
   */
  getPrompt<K extends string>(promptId: K, options?: GetPromptOptions): Promise<PromptFor<K>> {
    if (options?.label !== undefined) return this.getLabeled(promptId, options.label, options) as Promise<PromptFor<K>>;
    const version = options?.version;
    // Ids are validated on the miss path only; the version check keeps an id like '#3#x' off a pinned entry.
    const entry = version === undefined ? this.prompts.get(promptId) : this.pinnedEntry(promptId, version);
    const now = Date.now();
    if (entry !== undefined && entry.expiresAt > now && entry.version === version && !entry.invalidated) {
      if (now <= this.epochTrustedUntil || version !== undefined) {
        this.counters.hits++;
        if (this.onRead !== undefined) this.reportRead(entry.hit, version);
        return entry.resolved as Promise<PromptFor<K>>;
      }
      return this.afterEpochCheck(promptId, options) as Promise<PromptFor<K>>; // reports the read itself
    }
    const cached = entry?.version === version ? entry : undefined;
    const fallback = options?.fallback;
    let read = this.miss(promptId, version, cached);
    if (fallback !== undefined) {
      read = read.catch((err: unknown) => {
        if (!(err instanceof PromptStoreError)) throw err;
        this.counters.fallbackServes++;
        return fallbackPrompt(promptId, fallback);
      });
    }
    return (this.onRead === undefined ? read : read.then((prompt) => {
      this.reportRead(prompt, version);
      return prompt;
    })) as Promise<PromptFor<K>>;
  }

  /** Calls `onRead`; a hook that throws or rejects never fails the read nor the process (reported once on stderr). */
  private reportRead(prompt: Prompt, requestedVersion: number | undefined): void {
    callReadHook(this.onRead!, readInfo(this.options.tableName, prompt, requestedVersion), this, (err) => {
      if (this.onReadFailed) return;
      this.onReadFailed = true;
      warnHookFailed(err);
    });
  }

  /** `getPrompt` with a label: a fresh copy in memory (then the rollout's arm), else {@link labeledMiss}. */
  private getLabeled(promptId: string, label: string, options: GetPromptOptions): Promise<Prompt> {
    const key = options.stickinessKey;
    if (key !== undefined && typeof key !== 'string') {
      return Promise.reject(new PromptServingError(`\`stickinessKey\` must be a string, got ${key === null ? 'null' : typeof key}`));
    }
    if (options.version !== undefined) {
      return Promise.reject(new PromptServingError('give `version` or `label`, not both: a label names its own version'));
    }
    // Most processes read one label: its id map is kept at hand, so a hit costs one Map lookup, as a CURRENT hit does.
    let byId = this.lastLabel === label ? this.lastById : undefined;
    if (byId === undefined) {
      byId = this.labeled.get(label);
      if (byId !== undefined) {
        this.lastLabel = label;
        this.lastById = byId;
      }
    }
    const entry = byId?.get(promptId);
    const now = Date.now();
    if (entry !== undefined && entry.expiresAt > now && !entry.invalidated) {
      if (now <= this.epochTrustedUntil) {
        // Marks it used for the size bound on every 16th hit: a hot label keeps its place for a third of the cost.
        if (entry.labelHits++ % 16 === 0) this.prompts.get(entry.key);
        this.counters.hits++;
        if (entry.rollout === undefined && entry.rolloutProblem === undefined) {
          if (this.onRead !== undefined) this.reportRead(entry.hit, undefined);
          return entry.resolved;
        }
        const served = this.serveArm(entry, key, 'hit');
        return this.onRead === undefined ? served : this.reported(served);
      }
      return this.epoch!.check().then(() => this.getLabeled(promptId, label, options)); // reports the read itself
    }
    const read = this.labeledMiss(promptId, label, options, entry);
    return this.onRead === undefined ? read : this.reported(read);
  }

  /** `read`, reported to `onRead` once it settles (a hook is set). */
  private reported(read: Promise<Prompt>): Promise<Prompt> {
    return read.then((prompt) => {
      this.reportRead(prompt, undefined);
      return prompt;
    });
  }

  /** A labeled read without a fresh copy: stale-while-revalidate, the negative cache, then one load of the label item. */
  private async labeledMiss(promptId: string, label: string, options: GetPromptOptions, cached: Entry | undefined): Promise<Prompt> {
    const key = labelCacheKey(label, promptId);
    const now = Date.now();
    if (cached !== undefined && ((!cached.invalidated && now < cached.expiresAt + this.options.staleWhileRevalidateMs)
      || (cached.failing && now < cached.expiresAt + this.options.staleIfErrorMs))) {
      this.counters.staleServes++;
      this.loadLabel(promptId, label, key).catch(() => undefined);
      return this.serveArm(cached, options.stickinessKey, 'stale');
    }
    this.assertValid(promptId, undefined);
    const invalid = invalidLabelReason(label);
    if (invalid !== undefined) throw new PromptNotFoundError(promptId, undefined, invalid);
    const notFoundUntil = this.notFound.get(key);
    if (notFoundUntil !== undefined && now < notFoundUntil) {
      this.counters.negativeHits++;
      throw new PromptNotFoundError(promptId, undefined, missingLabelReason(label));
    }
    this.counters.misses++;
    try {
      // The read that loaded the label item: served with that read's provenance (`l2` or `table`), not as a hit.
      return await this.serveArm(await this.loadLabel(promptId, label, key), options.stickinessKey, 'loaded');
    } catch (err) {
      if (!(err instanceof PromptStoreError)) throw err;
      if (cached !== undefined && Date.now() < cached.expiresAt + this.options.staleIfErrorMs) {
        this.counters.staleServes++;
        return this.serveArm(cached, options.stickinessKey, 'stale');
      }
      if (options.fallback === undefined) throw err;
      this.counters.fallbackServes++;
      // Served for the label asked for (no arm: the fallback is neither version), provenance `fallback`.
      return servedForLabel(fallbackPrompt(promptId, options.fallback), label, undefined, false);
    }
  }

  /**
   * The arm a read of a label entry serves (the entry's own prompt without a usable rollout), as `mode` says: a hit
   * (`l1`), the read that loaded the entry (its provenance), or stale. A read assigned arm B that waits for the
   * candidate's read is served the candidate as that read brought it.
   */
  private serveArm(entry: Entry, stickinessKey: string | undefined, mode: ServeMode): Promise<Prompt> {
    const rollout = entry.rollout;
    if (rollout === undefined) {
      if (entry.rolloutProblem !== undefined) this.rolloutFault(entry, entry.rolloutProblem);
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

  private armBOrFault(entry: Entry, rollout: RolloutState, mode: ServeMode): Prompt {
    if (rollout.armB !== undefined) return rollout.servedB(mode);
    this.rolloutFault(entry, rollout.problem ?? `candidate v${rollout.spec.candidateVersion} could not be read`);
    return rollout.servedA(mode);
  }

  /** A read served arm A because arm B cannot be: counted, and logged once per label item and reason. */
  private rolloutFault(entry: Entry, problem: string): void {
    this.counters.rolloutFaults++;
    if (this.faultsLogged.get(entry.key) === problem) return;
    if (this.faultsLogged.size >= this.options.maxEntries) this.faultsLogged.clear();
    this.faultsLogged.set(entry.key, problem);
    logRolloutFault(this.options.tableName, entry.prompt.id, entry.label!, entry.rollout?.spec.rolloutId ?? '', problem);
  }

  /** Puts the candidate version in hand: from memory at once, else one read (the catalog not consulted). */
  private prepareCandidate(entry: Entry, rollout: RolloutState): Promise<void> {
    const { candidateVersion } = rollout.spec;
    const promptId = entry.prompt.id;
    const held = this.pinned.get(promptId)?.get(candidateVersion);
    if (held !== undefined) {
      rollout.offer(held.hit); // in memory: a read assigned arm B is served from l1
      return Promise.resolve();
    }
    const loading = this.load(promptId, candidateVersion, `#${candidateVersion}#${promptId}`, true).then(
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

  /** The load of a label's entry under way, or a new one. Never leaves an unhandled rejection behind. */
  private loadLabel(promptId: string, label: string, key: string): Promise<Entry> {
    let flight = this.labelFlights.get(key);
    if (flight === undefined) {
      const started = this.fetchLabel(promptId, label, key);
      const settle = () => {
        if (this.labelFlights.get(key) === started) this.labelFlights.delete(key);
      };
      started.then(settle, (err: unknown) => {
        settle();
        const entry = this.prompts.get(key);
        if (err instanceof PromptStoreError && entry !== undefined) entry.failing = true;
      });
      this.labelFlights.set(key, started);
      flight = started;
    }
    return flight;
  }

  /**
   * L2 → table, within one `requestTimeoutMs`, like a CURRENT read but without the catalog: a label outlives its
   * prompt's deletion at the source, which takes the id out of the catalog. Waits for a rollout's candidate.
   */
  private async fetchLabel(promptId: string, label: string, key: string): Promise<Entry> {
    const deadline = this.reader.deadline();
    const sortKey = labelItemKey(label);
    const generation = this.generation;
    let loaded = await this.reader.read(promptId, sortKey, deadline);
    let entry: Entry;
    try {
      entry = this.acceptLabel(key, promptId, label, loaded, generation);
    } catch (err) {
      if (!(loaded?.fromL2 === true && err instanceof PromptStoreError)) throw err;
      this.counters.l2Errors++; // an L2 value that breaks the contract: read the table
      loaded = await this.reader.read(promptId, sortKey, deadline, true);
      entry = this.acceptLabel(key, promptId, label, loaded, generation);
    }
    if (entry.rollout?.loading !== undefined) await entry.rollout.loading;
    return entry;
  }

  /** Remembers a loaded label item (or that there is none); returns its entry. */
  private acceptLabel(key: string, promptId: string, label: string, loaded: Loaded | undefined, generation = this.generation): Entry {
    const item = loaded?.item;
    const served = item === undefined || loaded === undefined ? undefined
      : promptFromLabelItem(item, label, provenance(loaded.source === 'table' ? 'table' : 'l2', false, loaded.fetchedAt));
    if (loaded === undefined || item === undefined || served === undefined) {
      this.prompts.delete(key);
      this.notFound.set(key, Date.now() + this.options.notFoundMaxAgeMs);
      if (this.labelsAsked.size < this.options.maxEntries) this.labelsAsked.add(label);
      throw new PromptNotFoundError(promptId, undefined, item === undefined ? missingLabelReason(label) : `label '${label}' deleted`);
    }
    const fetchedAt = loaded.source === 'stream' ? Date.now() : loaded.fetchedAt;
    const held = this.prompts.get(key);
    if (held?.token !== undefined && !held.invalidated && held.expiresAt > Date.now()
      && (loaded.token === undefined || compareTokens(held.token, loaded.token) > 0)) {
      return held; // a late load: the stream's newer value arrived meanwhile
    }
    const parsed = item[LabelAttr.rollout] === undefined ? undefined : parseRollout(item[LabelAttr.rollout]);
    const rollout = parsed?.spec === undefined ? undefined : new RolloutState(parsed.spec, label, served.prompt);
    const entry = new Entry(key, rollout?.armA ?? served.prompt, undefined, fetchedAt + this.options.maxAgeMs, loaded.token);
    entry.label = label;
    entry.rollout = rollout;
    entry.rolloutProblem = parsed?.problem === undefined ? undefined : `the rollout map is malformed: ${parsed.problem}`;
    if (generation !== this.generation) entry.invalidated = true;
    this.prompts.set(key, entry);
    const byId = this.labeled.get(label) ?? new Map<string, Entry>();
    this.labeled.set(label, byId.set(promptId, entry));
    this.notFound.delete(key);
    if (rollout !== undefined) this.prepareCandidate(entry, rollout).catch(() => undefined);
    return entry;
  }

  /**
   * Drops in-process copies so the next read goes to the L2 (or the table): of one prompt (its CURRENT version,
   * its exact versions and any not-found answer), or of everything, the catalog included. The shared L2 is
   * kept fresh by the invalidation function and is not touched.
   *
   * @example
   * prompts.invalidate('support-triage'); // after an out-of-band change, or in a test
   * prompts.invalidate();                 // everything
   */
  invalidate(promptId?: string): void {
    if (promptId === undefined) {
      for (const entry of [...this.prompts.values()]) this.prompts.delete(entry.key);
      this.notFound.clear();
      void this.catalog.refresh();
      return;
    }
    this.prompts.delete(promptId);
    this.notFound.delete(promptId);
    for (const byId of [...this.labeled.values()]) {
      const entry = byId.get(promptId);
      if (entry !== undefined) this.prompts.delete(entry.key);
    }
    for (const label of this.labelsAsked) this.notFound.delete(labelCacheKey(label, promptId));
    for (const entry of [...(this.pinned.get(promptId)?.values() ?? [])]) {
      this.prompts.delete(entry.key);
      this.notFound.delete(entry.key);
    }
  }

  /**
   * Stops the freshness-epoch watch and closes the built-in L2 connection (tests, scripts; a Lambda function
   * never needs to). Reads still work afterwards, from memory and the table.
   *
   * @example
   * await prompts.close();
   */
  async close(): Promise<void> {
    this.epoch?.stop();
    const closable = this.l2 as { close?: () => Promise<void> } | undefined;
    if (this.l2 !== undefined && this.ownsL2 && closable?.close !== undefined) await closable.close();
  }

  /** The process was frozen past the epoch interval: check the epoch (bounded), then read again. */
  private async afterEpochCheck(promptId: string, options: GetPromptOptions | undefined): Promise<Prompt> {
    await this.epoch!.check();
    const entry = this.prompts.get(promptId);
    if (entry !== undefined && entry.version === undefined && entry.expiresAt > Date.now() && !entry.invalidated) {
      this.counters.hits++;
      if (this.onRead !== undefined) this.reportRead(entry.hit, undefined);
      return entry.resolved;
    }
    return this.getPrompt(promptId, options);
  }

  /**
   * Reads the catalog, and the CURRENT version of each listed prompt not fresh in memory (joining reads already
   * under way), so the first requests are served from memory. Unknown ids are remembered as not found and do
   * not fail.
   *
   * With `{ labels }`, each id's label items too (and a rollout's candidate version).
   *
   * @throws PromptNotFoundError for an id or a label name that can never be valid
   * @throws PromptStoreError if the table cannot be read for one of the prompts
   * @example
   * const prompts = new PromptClient();
   * await prompts.preload(['support-triage', 'summarise-ticket']); // at init, outside the handler
   * await prompts.preload(['support-triage'], { labels: ['production'] });
   */
  async preload(promptIds: Iterable<string> = [], options: PreloadOptions = {}): Promise<void> {
    if (this.l2?.ready !== undefined) {
      await withTimeout(() => this.l2!.ready!(), this.options.l2ConnectTimeoutMs).catch(() => undefined);
    }
    const ids = [...promptIds];
    // Every label name is checked before any load starts: a bad one throws with nothing left running unawaited.
    for (const label of options.labels ?? []) {
      const invalid = invalidLabelReason(label);
      if (invalid !== undefined) throw new PromptNotFoundError(String(ids[0] ?? ''), undefined, invalid);
    }
    const loads = ids.map(async (promptId) => {
      this.assertValid(promptId, undefined);
      const entry = this.prompts.get(promptId);
      if (entry !== undefined && entry.version === undefined && entry.expiresAt > Date.now() && !entry.invalidated) return entry.prompt;
      return this.load(promptId, undefined, promptId);
    });
    for (const label of options.labels ?? []) {
      for (const promptId of ids) {
        const entry = this.labeled.get(label)?.get(promptId);
        if (entry !== undefined && entry.expiresAt > Date.now() && !entry.invalidated) continue;
        loads.push(this.loadLabel(promptId, label, labelCacheKey(label, promptId)).then((e) => e.prompt));
      }
    }
    // After the loads: a cold load starts the catalog read beside its own item, under one deadline (one request, as a
    // cold getPrompt); this joins that read (or starts one when nothing was loaded).
    const catalog = this.catalog.refresh().then(() => { this.catalogWarm = true; });
    await catalog;
    for (const result of await Promise.allSettled(loads)) {
      if (result.status === 'rejected' && !(result.reason instanceof PromptNotFoundError)) throw result.reason;
    }
  }

  /**
   * Counters since the client was created: hits, misses, stale serves, store reads, catalog rejections, …
   *
   * @example
   * const { hits, misses, storeReads } = prompts.stats();
   * logger.info('prompt cache', prompts.stats());
   */
  stats(): PromptClientStats {
    return { ...this.counters, evictions: this.prompts.evictions, entries: this.prompts.size };
  }

  private l2FromEnvironment(dynamoDB: DynamoDBClient): PromptCacheL2 | undefined {
    const config = cacheConfigFromEnv(process.env, {
      credentials: () => dynamoDB.config.credentials(),
      region: () => dynamoDB.config.region(),
    });
    if (config === undefined) return undefined;
    let adapter: ReturnType<typeof loadAdapter>;
    try {
      adapter = loadAdapter();
    } catch (err) {
      // A bundled reader without the reader layer: loudly, once; reads go to the table.
      this.counters.l2Unavailable++;
      logUnavailable('node-redis (redis) cannot be loaded: attach the reader layer (addReader does, unless the function\'s own `layers` '
        + `replace it), which carries it with the client's cache adapter (${ADAPTER_MODULE}); reads go to the table `
        + `(${String((err as Error)?.message ?? err).split('\n')[0]})`, this.options.tableName);
      return undefined;
    }
    const l2 = adapter.createValkeyL2({ ...config, connectTimeoutMs: this.options.l2ConnectTimeoutMs, onError: () => { this.counters.l2Errors++; } },
      this.options.tableName,
      () => { this.counters.l2Unavailable++; });
    this.ownsL2 = true;
    return l2;
  }

  /**
   * The epoch moved: every CURRENT copy in memory is compared with the L2's stream value (one GET each, no table
   * read): replaced by a different one (the stream's is the newest applied), kept fresh by the same one, and
   * otherwise marked for re-validation — never dropped, so it stays the last good copy for stale-if-error until a
   * newer one is in hand. Not-found answers are forgotten and the catalog is re-read (from the L2).
   */
  private async revalidate(): Promise<void> {
    this.generation++;
    this.notFound.clear();
    const checks = [...this.prompts.values()].filter((e) => e.version === undefined).map(async (entry) => {
      const sortKey = entry.label === undefined ? CURRENT : labelItemKey(entry.label);
      const shared = await this.reader.readShared(entry.prompt.id, sortKey, false, true);
      if (this.prompts.get(entry.key) !== entry) return; // replaced meanwhile
      if (shared?.token === undefined) {
        entry.invalidated = true;
      } else if (entry.token !== undefined && compareTokens(shared.token, entry.token) === 0) {
        entry.expiresAt = Math.max(entry.expiresAt, Date.now() + this.options.maxAgeMs);
        entry.invalidated = false;
      } else {
        this.counters.revalidations++;
        try {
          if (entry.label === undefined) this.accept(entry.key, entry.prompt.id, undefined, shared);
          else this.acceptLabel(entry.key, entry.prompt.id, entry.label, shared);
        } catch (err) {
          if (!(err instanceof PromptNotFoundError)) entry.invalidated = true; // a value that breaks the contract
        }
      }
    });
    await Promise.all([...checks, this.catalog.refresh(undefined, true)]);
    this.counters.epochMoves++; // counted once every copy was re-validated
  }

  /** Remembers a loaded item (or its tombstone); returns the prompt. Throws `PromptNotFoundError` for a tombstone. */
  private accept(key: string, promptId: string, version: number | undefined, loaded: Loaded, generation = this.generation): Prompt {
    if (loaded.item === undefined || isDeleted(loaded.item)) {
      this.prompts.delete(key);
      this.notFound.set(key, Date.now() + this.options.notFoundMaxAgeMs);
      throw new PromptNotFoundError(promptId, version, loaded.item === undefined ? undefined : 'deleted');
    }
    const fetchedAt = loaded.source === 'stream' ? Date.now() : loaded.fetchedAt;
    const served = provenance(loaded.source === 'table' ? 'table' : 'l2', false, loaded.fetchedAt);
    return this.remember(key, promptFromItem(loaded.item, 1, served), version, fetchedAt, loaded.token, generation);
  }

  /** Everything but a fresh hit. `cached` is the expired copy of this key, if any. */
  private async miss(promptId: string, version: number | undefined, cached: Entry | undefined): Promise<Prompt> {
    const key = version === undefined ? promptId : `#${version}#${promptId}`;
    const now = Date.now();
    if (cached !== undefined && ((!cached.invalidated && now < cached.expiresAt + this.options.staleWhileRevalidateMs)
      || (cached.failing && now < cached.expiresAt + this.options.staleIfErrorMs))) {
      this.counters.staleServes++;
      void this.load(promptId, version, key);
      return cached.stale;
    }
    this.assertValid(promptId, version);
    const notFoundUntil = this.notFound.get(key);
    if (notFoundUntil !== undefined && now < notFoundUntil) {
      this.counters.negativeHits++;
      throw new PromptNotFoundError(promptId, version);
    }
    this.counters.misses++;
    try {
      return await this.load(promptId, version, key);
    } catch (err) {
      if (err instanceof PromptStoreError && cached !== undefined && Date.now() < cached.expiresAt + this.options.staleIfErrorMs) {
        this.counters.staleServes++;
        return cached.stale;
      }
      throw err;
    }
  }

  /** The load of `key` under way, or a new one. Never leaves an unhandled rejection behind. */
  private load(promptId: string, version: number | undefined, key: string, direct = false): Promise<Prompt> {
    let flight = this.flights.get(key);
    if (flight === undefined) {
      const started = direct ? this.fetchRemote(promptId, version, key, this.reader.deadline()) : this.fetch(promptId, version, key);
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
   * Catalog → L2 → table, within one `requestTimeoutMs`; remembers what it finds (or that nothing was found).
   * Until the first catalog read finished, the prompt is fetched beside it rather than after it, so a cold
   * read costs one round trip, not two, and never spends its deadline twice.
   */
  private async fetch(promptId: string, version: number | undefined, key: string): Promise<Prompt> {
    const deadline = this.reader.deadline();
    const known = this.catalog.verdictNow(promptId);
    if (known !== undefined) {
      this.catalogWarm = true;
      if (known) return this.fetchRemote(promptId, version, key, deadline);
      this.counters.catalogRejections++;
      this.prompts.delete(key);
      throw new PromptNotFoundError(promptId, version, 'not in the catalog');
    }
    const verdict = this.catalog.mightContain(promptId, deadline).finally(() => { this.catalogWarm = true; });
    let remote: Promise<Prompt> | undefined;
    if (!this.catalogWarm) {
      remote = this.fetchRemote(promptId, version, key, deadline);
      remote.catch(() => undefined); // awaited below, unless the catalog rules the id out first
    }
    if (!(await verdict)) {
      // The read fetched beside the catalog must not land in memory after this answer (found by the convergence test).
      await remote?.catch(() => undefined);
      this.counters.catalogRejections++;
      this.prompts.delete(key);
      throw new PromptNotFoundError(promptId, version, 'not in the catalog');
    }
    return remote ?? this.fetchRemote(promptId, version, key, deadline);
  }

  private async fetchRemote(promptId: string, version: number | undefined, key: string, deadline: Deadline): Promise<Prompt> {
    const sortKey = version === undefined ? CURRENT : versionKey(version);
    const generation = this.generation;
    let loaded = await this.reader.read(promptId, sortKey, deadline);
    if (loaded?.fromL2 && loaded.item !== undefined) {
      try {
        return this.accept(key, promptId, version, loaded, generation);
      } catch (err) {
        if (err instanceof PromptNotFoundError) throw err;
        this.counters.l2Errors++; // an L2 value that breaks the contract: read the table
        loaded = await this.reader.read(promptId, sortKey, deadline, true);
      }
    }
    if (loaded === undefined) {
      this.prompts.delete(key);
      this.notFound.set(key, Date.now() + this.options.notFoundMaxAgeMs);
      throw new PromptNotFoundError(promptId, version);
    }
    return this.accept(key, promptId, version, loaded, generation);
  }

  private remember(
    key: string, prompt: Prompt, version: number | undefined, fetchedAt: number, token: Token | undefined, generation = this.generation,
  ): Prompt {
    const held = this.prompts.get(key);
    if (held?.token !== undefined && !held.invalidated && held.expiresAt > Date.now()
      && (token === undefined || compareTokens(held.token, token) > 0)) {
      return held.hit; // a late load: the stream's newer value arrived meanwhile (served from memory)
    }
    const expiresAt = version === undefined ? fetchedAt + this.options.maxAgeMs : Number.POSITIVE_INFINITY;
    const entry = new Entry(key, prompt, version, expiresAt, token);
    // Loaded before an epoch move that re-validated everything else: served once, re-validated by the next read.
    if (version === undefined && generation !== this.generation) entry.invalidated = true;
    this.prompts.set(key, entry);
    if (version !== undefined) {
      const byVersion = this.pinned.get(prompt.id) ?? new Map<number, Entry>();
      this.pinned.set(prompt.id, byVersion.set(version, entry));
    }
    this.notFound.delete(key);
    return prompt;
  }

  /** The cached exact version, marked as used for the size bound. */
  private pinnedEntry(promptId: string, version: number): Entry | undefined {
    const entry = this.pinned.get(promptId)?.get(version);
    if (entry !== undefined) this.prompts.get(entry.key);
    return entry;
  }

  /** Keeps `pinned` in step with `prompts`: called for every entry that leaves it. */
  private unpin(entry: Entry): void {
    if (entry.label !== undefined) {
      const byId = this.labeled.get(entry.label);
      if (byId?.get(entry.prompt.id) !== entry) return;
      byId.delete(entry.prompt.id);
      if (byId.size === 0) {
        this.labeled.delete(entry.label);
        if (this.lastById === byId) this.lastLabel = this.lastById = undefined;
      }
      return;
    }
    if (entry.version === undefined) return;
    const byVersion = this.pinned.get(entry.prompt.id);
    if (byVersion?.get(entry.version) !== entry) return;
    byVersion.delete(entry.version);
    if (byVersion.size === 0) this.pinned.delete(entry.prompt.id);
  }

  /** Ids and versions that cannot exist are not found, without a remote call. */
  private assertValid(promptId: string, version: number | undefined): void {
    if (!isValidPromptId(promptId)) {
      throw new PromptNotFoundError(String(promptId), version,
        `not a valid prompt id (${PROMPT_ID_RULE}, which is reserved)`);
    }
    if (version !== undefined && !(Number.isInteger(version) && version >= 1 && version <= MAX_VERSION_NUMBER)) {
      throw new PromptNotFoundError(promptId, version, `a version is an integer from 1 to ${MAX_VERSION_NUMBER}`);
    }
  }
}
