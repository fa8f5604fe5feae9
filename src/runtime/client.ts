/**
 * `PromptClient`: reads prompts from the serving table through an in-process cache (and an optional shared
 * L2), with single-flight loads, negative caching, a Bloom-filter catalog, stale-while-revalidate and
 * stale-if-error.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Catalog } from './catalog';
import { EpochWatcher } from './epoch';
import { PromptNotFoundError, PromptStoreError } from './errors';
import { fallbackPrompt, PromptFallback } from './fallback';
import { PromptCacheL2, withTimeout } from './l2';
import { ADAPTER_MODULE, cacheConfigFromEnv, loadAdapter } from './l2-env';
import { Lru } from './lru';
import { PromptClientOptions, ResolvedOptions, resolveOptions } from './options';
import { isDeleted, Prompt, promptFromItem, staleCopy } from './prompt';
import { Counters, newCounters, PromptClientStats } from './stats';
import { CacheFirstReader, Loaded, Token } from './tiers';
import { logUnavailable } from './unavailable';
import { CURRENT, isValidPromptId, MAX_VERSION_NUMBER, PROMPT_ID_RULE, versionKey } from '../schema/keys';
import { compareTokens, l2EpochKey } from '../schema/l2';

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
}

/** One remembered prompt, with the settled promise the hot path returns so a hit allocates nothing. */
class Entry {
  readonly resolved: Promise<Prompt>;
  /** The last read of this key failed: serve this copy at once (within the bound) while reads retry. */
  failing = false;
  /**
   * The epoch moved and the L2 could not confirm this copy: it is not served as fresh (nor stale-while-revalidate)
   * but kept as the last good copy for stale-if-error until a newer one is in hand.
   */
  invalidated = false;
  private staleVariant: Prompt | undefined;

  constructor(
    readonly key: string,
    readonly prompt: Prompt,
    readonly version: number | undefined,
    public expiresAt: number,
    /** The stream value's ordering token (copies from the stream only): the epoch re-validation compares it. */
    readonly token: Token | undefined,
  ) {
    this.resolved = Promise.resolve(prompt);
  }

  /** This prompt flagged `stale: true`, built on first use. */
  get stale(): Prompt {
    return this.staleVariant ??= staleCopy(this.prompt);
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
  /** Not-found answers from the table (expiry, epoch ms), kept apart so unknown ids cannot evict prompts. */
  private readonly notFound: Lru<number>;
  /** Loads under way, by cache key (single-flight). */
  private readonly flights = new Map<string, Promise<Prompt>>();
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

  /**
   * @throws PromptServingError if no table name is given or set in the environment, or an option is out of range
   * @example
   * // Outside the handler: one client per process. The construct sets PROMPT_SERVING_TABLE_NAME.
   * const prompts = new PromptClient({ maxAgeSeconds: 30 });
   */
  constructor(options: PromptClientOptions = {}) {
    this.options = resolveOptions(options);
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
      this.epoch = new EpochWatcher(
        async () => {
          // The first read waits for the first connection (bounded); cold reads send their own GETs beside it (one
          // round trip), and use a stream value once it names the incarnation.
          if (l2.ready !== undefined) await withTimeout(() => l2.ready!(), this.options.l2ConnectTimeoutMs).catch(() => undefined);
          return withTimeout(() => l2.get(epochKey), this.options.l2TimeoutMs);
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
   * @throws PromptNotFoundError if the prompt does not exist, was deleted, or the id is invalid or reserved
   * @throws PromptStoreError if the table cannot be read and no copy within `staleIfErrorSeconds` is held
   * @example
   * const prompt = await prompts.getPrompt('support-triage');
   * if (prompt.templateType === 'TEXT') {
   *   const text = prompt.render({ ticket: event.body });
   * }
   * const pinned = await prompts.getPrompt('support-triage', { version: 3 });
   */
  getPrompt(promptId: string, options?: GetPromptOptions): Promise<Prompt> {
    const version = options?.version;
    // Ids are validated on the miss path only; the version check keeps an id like '#3#x' off a pinned entry.
    const entry = version === undefined ? this.prompts.get(promptId) : this.pinnedEntry(promptId, version);
    const now = Date.now();
    if (entry !== undefined && entry.expiresAt > now && entry.version === version && !entry.invalidated) {
      if (now <= this.epochTrustedUntil || version !== undefined) {
        this.counters.hits++;
        return entry.resolved;
      }
      return this.afterEpochCheck(promptId, options);
    }
    const cached = entry?.version === version ? entry : undefined;
    const fallback = options?.fallback;
    if (fallback === undefined) return this.miss(promptId, version, cached);
    return this.miss(promptId, version, cached).catch((err: unknown) => {
      if (!(err instanceof PromptStoreError)) throw err;
      this.counters.fallbackServes++;
      return fallbackPrompt(promptId, fallback);
    });
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
      return entry.resolved;
    }
    return this.getPrompt(promptId, options);
  }

  /**
   * Reads the catalog, and the CURRENT version of each listed prompt not fresh in memory (joining reads already
   * under way), so the first requests are served from memory. Unknown ids are remembered as not found and do
   * not fail.
   *
   * @throws PromptStoreError if the table cannot be read for one of the prompts
   * @example
   * const prompts = new PromptClient();
   * await prompts.preload(['support-triage', 'summarise-ticket']); // at init, outside the handler
   */
  async preload(promptIds: Iterable<string> = []): Promise<void> {
    if (this.l2?.ready !== undefined) {
      await withTimeout(() => this.l2!.ready!(), this.options.l2ConnectTimeoutMs).catch(() => undefined);
    }
    const catalog = this.catalog.refresh().then(() => { this.catalogWarm = true; });
    const loads = [...promptIds].map(async (promptId) => {
      this.assertValid(promptId, undefined);
      const entry = this.prompts.get(promptId);
      if (entry !== undefined && entry.version === undefined && entry.expiresAt > Date.now() && !entry.invalidated) return entry.prompt;
      return this.load(promptId, undefined, promptId);
    });
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
      const shared = await this.reader.readShared(entry.prompt.id, CURRENT, false, true);
      if (this.prompts.get(entry.key) !== entry) return; // replaced meanwhile
      if (shared?.token === undefined) {
        entry.invalidated = true;
      } else if (entry.token !== undefined && compareTokens(shared.token, entry.token) === 0) {
        entry.expiresAt = Math.max(entry.expiresAt, Date.now() + this.options.maxAgeMs);
        entry.invalidated = false;
      } else {
        this.counters.revalidations++;
        try {
          this.accept(entry.key, entry.prompt.id, undefined, shared);
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
    return this.remember(key, promptFromItem(loaded.item), version, fetchedAt, loaded.token, generation);
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
  private load(promptId: string, version: number | undefined, key: string): Promise<Prompt> {
    let flight = this.flights.get(key);
    if (flight === undefined) {
      const started = this.fetch(promptId, version, key);
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

  private async fetchRemote(promptId: string, version: number | undefined, key: string, deadline: AbortSignal): Promise<Prompt> {
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
      return held.prompt; // a late load: the stream's newer value arrived meanwhile
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
