/**
 * `PromptClient`: reads prompts from the serving table through an in-process cache (and an optional shared
 * L2), with single-flight loads, negative caching, a Bloom-filter catalog, stale-while-revalidate and
 * stale-if-error.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Catalog } from './catalog';
import type { Entry } from './entry';
import { PromptServingError } from './errors';
import type { PromptFallback } from './fallback';
import { callReadHook, warnHookFailed } from './hook';
import type { PromptCacheL2 } from './l2';
import { environmentTier } from './l2-env';
import type { LabelFeature } from './label-feature';
import { PromptClientOptions, ResolvedOptions, resolveOptions } from './options';
import type { Prompt } from './prompt';
import { OnRead, readInfo } from './provenance';
import { ReadPath } from './read-path';
import { Counters, newCounters, PromptClientStats } from './stats';
import { ItemReader, TableItemReader } from './store';
import { currentTarget, versionTarget } from './target';
import { AttachedTier, TIER_PROTOCOL, TierDeps, TierEpoch } from './tier';
import type { PromptFor } from './typed';

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

/**
 * Reads prompts from a `PromptServingTable`. Create one per process (outside the Lambda handler) and share it.
 *
 * A read tries, in order: memory (fresh copy) → expired copy within `staleWhileRevalidateSeconds` (returned at
 * once, refreshed in the background) → the catalog (rules out unknown ids without a remote call) → the L2 →
 * one `GetItem` (retried on throttling within `requestTimeoutMs`) → on failure, the last good copy within
 * `staleIfErrorSeconds`. Concurrent reads of one key share one load. The `CURRENT` pointer, an exact version and a
 * label are read targets (target.ts) of one read path (read-path.ts); a label's rollout is one step after it.
 */
export class PromptClient {
  // `options`, `path`, `catalog`, `l2` and `labels` are read by `preload` (preload.ts) too. Fields without an
  // initializer are `declare`d (assigned in the constructor): the bundle spells each name once.
  private declare readonly options: ResolvedOptions;
  private readonly counters: Counters = newCounters();
  private declare readonly path: ReadPath;
  private declare readonly reader: ItemReader;
  private declare readonly catalog: Catalog;
  private declare readonly l2: PromptCacheL2 | undefined;
  /** The cache tier (`l2: cacheTier(store)`, or the environment's from the reader layer), when there is one. */
  private declare readonly tier: AttachedTier | undefined;
  private declare readonly epoch: TierEpoch | undefined;
  /**
   * Until when a copy that can change may be served without reading the epoch first (set by the epoch watch after each
   * check: two poll intervals on); infinite without the watch. One number compare on the hot path.
   */
  private epochTrustedUntil = Number.POSITIVE_INFINITY;
  /** The per-read hook (`undefined`: the read path only compares it). */
  private declare readonly onRead: OnRead | undefined;
  private onReadFailed = false;
  /** The labels feature, when the reader passed it in `features`. */
  private declare readonly labels: LabelFeature | undefined;

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
    this.labels = options.features?.find((feature) => feature !== undefined && typeof feature.target === 'function');
    const dynamoDB = options.dynamoDBClient ?? new DynamoDBClient({ maxAttempts: 1 });
    const table = new TableItemReader(dynamoDB, this.options.tableName, this.options.requestTimeoutMs, this.options.maxAttempts, this.counters);
    const deps: TierDeps = {
      protocol: TIER_PROTOCOL,
      table,
      dynamoDB,
      ownClient: options.dynamoDBClient === undefined,
      options: this.options,
      counters: this.counters,
      error: (m) => new PromptServingError(m),
    };
    const l2 = options.l2;
    if (l2 !== undefined && typeof l2.attach !== 'function') {
      throw new PromptServingError("`l2` takes the cache tier over your store: `l2: cacheTier(store)`, with `cacheTier` from 'cdk-prompt-serving/runtime'");
    }
    this.tier = l2 !== undefined ? l2.attach(deps) : environmentTier(deps);
    this.l2 = this.tier?.l2;
    this.reader = this.tier?.reader ?? table;
    this.catalog = new Catalog(this.reader, this.options.catalogMaxAgeMs, this.counters);
    this.path = new ReadPath(this.options, this.counters, this.reader, this.catalog, this.labels);
    this.epoch = this.tier?.start(this.path, this.catalog, (trustedUntil) => { this.epochTrustedUntil = trustedUntil; });
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
   *   const text = render(prompt, { ticket: event.body }); // render from 'cdk-prompt-serving/runtime'
   * }
   * const pinned = await prompts.getPrompt('support-triage', { version: 3 });
   * // A label, with the caller's user id picking the arm while the label has a rollout:
   * const labeled = await prompts.getPrompt('support-triage', { label: 'production', stickinessKey: userId });
   * logger.info('served', { version: labeled.version, rollout: labeled.rollout });
   */
  getPrompt<K extends string>(promptId: K, options?: GetPromptOptions): Promise<PromptFor<K>> {
    if (options === undefined) {
      // The usual read, a fresh CURRENT copy, without a call more: the same test as `read` makes.
      const entry = this.path.prompts.get(promptId);
      const now = Date.now();
      if (entry !== undefined && entry.current && entry.expiresAt > now && !entry.invalidated && now <= this.epochTrustedUntil) {
        this.counters.hits++;
        if (this.onRead !== undefined) this.reportRead(entry.hit, undefined);
        return entry.resolved as Promise<PromptFor<K>>;
      }
    }
    return this.read(promptId, options, false) as Promise<PromptFor<K>>;
  }

  /** A fresh copy in memory (the epoch checked first after a freeze), else the read path's miss; reported to `onRead`. */
  private read(promptId: string, options: GetPromptOptions | undefined, epochChecked: boolean): Promise<Prompt> {
    const version = options?.version;
    const label = options?.label;
    const stickinessKey = options?.stickinessKey;
    let entry: Entry | undefined;
    if (label === undefined) {
      // Ids are validated on the miss path only.
      entry = version === undefined ? this.path.currentEntry(promptId) : this.path.pinnedEntry(promptId, version);
    } else {
      const refused = this.labels === undefined ? noLabels() : this.labels.refuse(version, stickinessKey);
      if (refused !== undefined) return Promise.reject(refused);
      entry = this.path.labels!.get(label, promptId);
    }
    const now = Date.now();
    if (entry !== undefined && entry.expiresAt > now && !entry.invalidated) {
      if (epochChecked || now <= this.epochTrustedUntil || entry.immutable) {
        this.counters.hits++;
        if (entry.plain) {
          if (this.onRead !== undefined) this.reportRead(entry.hit, version);
          return entry.resolved;
        }
        return this.reported(this.path.rollouts!.serve(entry, stickinessKey, 'hit'), version);
      }
      // The process was frozen past the epoch interval: check the epoch (bounded), then read again.
      return this.epoch!.check().then(() => this.read(promptId, options, true)); // reports the read itself
    }
    const target = label !== undefined ? this.labels!.target(promptId, label)
      : version === undefined ? currentTarget(promptId) : versionTarget(promptId, version);
    return this.reported(this.path.miss(target, entry, options?.fallback, stickinessKey), version);
  }

  /** `read`, reported to `onRead` once it settles (when a hook is set). */
  private reported(read: Promise<Prompt>, requestedVersion: number | undefined): Promise<Prompt> {
    if (this.onRead === undefined) return read;
    return read.then((prompt) => {
      this.reportRead(prompt, requestedVersion);
      return prompt;
    });
  }

  /** Calls `onRead`; a hook that throws or rejects never fails the read nor the process (reported once on stderr). */
  private reportRead(prompt: Prompt, requestedVersion: number | undefined): void {
    callReadHook(this.onRead!, readInfo(this.options.tableName, prompt, requestedVersion), this, (err) => {
      if (this.onReadFailed) return;
      this.onReadFailed = true;
      warnHookFailed(err);
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
      this.path.prompts.clear();
      this.path.notFound.clear();
      void this.catalog.refresh();
      return;
    }
    this.path.forget(promptId);
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
    if (this.tier?.owned === true && closable?.close !== undefined) await closable.close();
  }

  /**
   * Counters since the client was created: hits, misses, stale serves, store reads, catalog rejections, …
   *
   * @example
   * const { hits, misses, storeReads } = prompts.stats();
   * logger.info('prompt cache', prompts.stats());
   */
  stats(): PromptClientStats {
    return { ...this.counters, evictions: this.path.prompts.evictions, entries: this.path.prompts.size };
  }
}

/** A label read by a client not given the labels feature. */
export function noLabels(): PromptServingError {
  return new PromptServingError("reading a label needs the labels feature: `new PromptClient({ features: [labels] })`, with `labels` from 'cdk-prompt-serving/runtime'");
}
