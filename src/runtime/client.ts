/**
 * `PromptClient`: reads prompts from the serving table through an in-process cache (and an optional shared
 * L2), with single-flight loads, negative caching, a Bloom-filter catalog, stale-while-revalidate and
 * stale-if-error.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CURRENT, isValidPromptId, MAX_VERSION_NUMBER, versionKey } from '../schema';
import { Catalog } from './catalog';
import { PromptNotFoundError, PromptStoreError } from './errors';
import { decodeL2Value, encodeL2Value, L2_IMMUTABLE_TTL_SECONDS, l2Key, PromptCacheL2, withTimeout } from './l2';
import { Lru } from './lru';
import { PromptClientOptions, ResolvedOptions, resolveOptions } from './options';
import { isDeleted, Prompt, promptFromItem, staleCopy } from './prompt';
import { Counters, newCounters, PromptClientStats } from './stats';
import { TableReader } from './store';

/** Options of one `getPrompt` call. */
export interface GetPromptOptions {
  /**
   * An exact version number (`v000003` in the table). Versions are immutable: once read, one stays in
   * memory until the size bound evicts it.
   * @default - the CURRENT version
   */
  readonly version?: number;
}

/** One remembered prompt, with the settled promise the hot path returns so a hit allocates nothing. */
class Entry {
  readonly resolved: Promise<Prompt>;
  /** The last read of this key failed: serve this copy at once (within the bound) while reads retry. */
  failing = false;
  private staleVariant: Prompt | undefined;

  constructor(
    readonly key: string,
    readonly prompt: Prompt,
    readonly version: number | undefined,
    readonly expiresAt: number,
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
  private readonly reader: TableReader;
  private readonly catalog: Catalog;
  private readonly l2: PromptCacheL2 | undefined;

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
    this.reader = new TableReader(
      options.dynamoDBClient ?? new DynamoDBClient({ maxAttempts: 1 }),
      this.options.tableName,
      this.options.requestTimeoutMs,
      this.options.maxAttempts,
      this.counters,
    );
    this.catalog = new Catalog(this.reader, this.options.catalogMaxAgeMs, this.counters);
    this.l2 = options.l2;
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
    if (entry !== undefined && entry.expiresAt > Date.now() && entry.version === version) {
      this.counters.hits++;
      return entry.resolved;
    }
    return this.miss(promptId, version, entry?.version === version ? entry : undefined);
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
    const catalog = this.catalog.refresh();
    const loads = [...promptIds].map(async (promptId) => {
      this.assertValid(promptId, undefined);
      const entry = this.prompts.get(promptId);
      if (entry !== undefined && entry.version === undefined && entry.expiresAt > Date.now()) return entry.prompt;
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

  /** Everything but a fresh hit. `cached` is the expired copy of this key, if any. */
  private async miss(promptId: string, version: number | undefined, cached: Entry | undefined): Promise<Prompt> {
    const key = version === undefined ? promptId : `#${version}#${promptId}`;
    const now = Date.now();
    if (cached !== undefined && (now < cached.expiresAt + this.options.staleWhileRevalidateMs
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

  /** Catalog → L2 → table, within one `requestTimeoutMs`; remembers what it finds (or that nothing was found). */
  private async fetch(promptId: string, version: number | undefined, key: string): Promise<Prompt> {
    const deadline = this.reader.deadline();
    if (!(await this.catalog.mightContain(promptId, deadline))) {
      this.counters.catalogRejections++;
      this.prompts.delete(key);
      throw new PromptNotFoundError(promptId, version, 'not in the catalog');
    }
    const sortKey = version === undefined ? CURRENT : versionKey(version);
    const sharedKey = this.l2 && l2Key(this.options.tableName, promptId, sortKey);
    if (sharedKey !== undefined) {
      const shared = await this.readL2(sharedKey, promptId, version);
      if (shared !== undefined) return this.remember(key, shared.prompt, version, shared.fetchedAt);
    }
    const fetchedAt = Date.now();
    const item = await this.reader.getItem(promptId, sortKey, deadline);
    if (item === undefined || isDeleted(item)) {
      this.prompts.delete(key);
      this.notFound.set(key, Date.now() + this.options.notFoundMaxAgeMs);
      if (sharedKey !== undefined) this.deleteL2(sharedKey);
      throw new PromptNotFoundError(promptId, version, item === undefined ? undefined : 'deleted');
    }
    const prompt = this.remember(key, promptFromItem(item), version, fetchedAt);
    if (sharedKey !== undefined) this.writeL2(sharedKey, item, version, fetchedAt);
    return prompt;
  }

  private remember(key: string, prompt: Prompt, version: number | undefined, fetchedAt: number): Prompt {
    const expiresAt = version === undefined ? fetchedAt + this.options.maxAgeMs : Number.POSITIVE_INFINITY;
    const entry = new Entry(key, prompt, version, expiresAt);
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

  /** A fresh prompt from the L2, or `undefined` (absent, too old, unreadable, failing or slow L2). */
  private async readL2(
    sharedKey: string, promptId: string, version: number | undefined,
  ): Promise<{ prompt: Prompt; fetchedAt: number } | undefined> {
    try {
      const raw = await withTimeout(() => this.l2!.get(sharedKey), this.options.l2TimeoutMs);
      const value = raw === undefined || raw === null ? undefined : decodeL2Value(raw, promptId);
      if (value !== undefined && (version !== undefined || Date.now() < value.fetchedAt + this.options.maxAgeMs)) {
        const prompt = promptFromItem(value.item);
        this.counters.l2Hits++;
        return { prompt, fetchedAt: value.fetchedAt };
      }
      if (raw !== undefined && raw !== null && value === undefined) this.deleteL2(sharedKey);
      this.counters.l2Misses++;
    } catch {
      this.counters.l2Errors++;
    }
    return undefined;
  }

  /** Shares a table read with other processes; in the background, failures only counted. */
  private writeL2(sharedKey: string, item: Record<string, unknown>, version: number | undefined, fetchedAt: number): void {
    const ttlSeconds = version === undefined
      ? Math.ceil((fetchedAt + this.options.maxAgeMs - Date.now()) / 1000)
      : L2_IMMUTABLE_TTL_SECONDS;
    if (ttlSeconds < 1) return;
    withTimeout(() => this.l2!.set(sharedKey, encodeL2Value({ fetchedAt, item }), ttlSeconds), this.options.l2TimeoutMs)
      .catch(() => { this.counters.l2Errors++; });
  }

  private deleteL2(sharedKey: string): void {
    const l2 = this.l2!;
    if (l2.delete === undefined) return;
    withTimeout(() => l2.delete!(sharedKey), this.options.l2TimeoutMs).catch(() => { this.counters.l2Errors++; });
  }

  /** Ids and versions that cannot exist are not found, without a remote call. */
  private assertValid(promptId: string, version: number | undefined): void {
    if (!isValidPromptId(promptId)) {
      throw new PromptNotFoundError(String(promptId), version,
        "not a valid prompt id (1 to 1024 bytes of UTF-8, not starting with '#', which is reserved)");
    }
    if (version !== undefined && !(Number.isInteger(version) && version >= 1 && version <= MAX_VERSION_NUMBER)) {
      throw new PromptNotFoundError(promptId, version, `a version is an integer from 1 to ${MAX_VERSION_NUMBER}`);
    }
  }
}
