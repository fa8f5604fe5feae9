package io.github.cdkpromptserving.runtime;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;

/**
 * Reads prompts from a {@code PromptServingTable}. Create one per process (a static field of the handler class, outside
 * {@code handleRequest}) and share it: it is thread-safe.
 *
 * <p>A read tries, in order: memory (a fresh copy) → an expired copy within {@code staleWhileRevalidateSeconds} (served at
 * once, refreshed in the background) → the catalog (rules out unknown ids without a remote call) → the L2 → one
 * {@code GetItem} (retried on throttling within {@code requestTimeoutMs}) → on failure, the last good copy within
 * {@code staleIfErrorSeconds}. Concurrent reads of one key, from any number of threads, share one load.
 *
 * <pre>{@code
 * static final PromptClient PROMPTS = PromptClient.builder().maxAgeSeconds(30).build();
 * Prompt p = PROMPTS.getPrompt("support-triage");
 * String text = p.renderText(Map.of("ticket", body), null);
 * }</pre>
 */
public final class PromptClient implements AutoCloseable {
  // counter slots (the order of PromptClientStats)
  static final int HITS = 0, MISSES = 1, STALE_SERVES = 2, NEGATIVE_HITS = 3, CATALOG_REJECTIONS = 4, STORE_READS = 5, STORE_ERRORS = 6,
      RETRIES = 7, CATALOG_LOADS = 8, L2_HITS = 9, L2_MISSES = 10, L2_ERRORS = 11, L2_UNAVAILABLE = 12, FALLBACK_SERVES = 13,
      EPOCH_MOVES = 14, REVALIDATIONS = 15, ROLLOUT_FAULTS = 16;

  /** Background refreshes (stale-while-revalidate, the catalog beside a cold read): daemon threads, made on demand. */
  private static final ExecutorService BACKGROUND = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "prompt-serving-refresh");
    t.setDaemon(true);
    return t;
  });

  private final ResolvedOptions options;
  /** The wall clock (a test hook replaces it; Provenance ages count on it too). */
  private final java.util.function.LongSupplier clock;
  /** The clock a hit judges freshness by (null when a test clock is given: every read uses {@link #clock}). */
  private final CoarseClock coarse;
  /** Volatile: a client this one made is closed before a SnapStart snapshot and made again after the restore. */
  private volatile DynamoDbClient dynamoDb;
  private final boolean ownsDynamoDb;
  private final OnRead onRead;
  private volatile boolean onReadFailed;
  private final AtomicLongArray counters = new AtomicLongArray(17);
  /**
   * Hits of {@link #getPrompt(String)} (CURRENT): a plain field, since an atomic increment costs as much as the whole hit
   * otherwise does; under concurrent hits from many threads it may undercount (never the other counters).
   */
  private long hitCount;
  private final AtomicLong evictions = new AtomicLong();
  private final AtomicLong tick = new AtomicLong();
  /** Every remembered copy, by its target's cache key (bounded by maxEntries, least recently used first out). */
  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
  /** Not-found answers from the table (kept apart, so unknown ids cannot evict prompts). */
  private final ConcurrentHashMap<String, NotFoundMark> notFound = new ConcurrentHashMap<>();
  /** Loads under way, by cache key: one per key across threads (single-flight). */
  private final ConcurrentHashMap<String, CompletableFuture<Entry>> flights = new ConcurrentHashMap<>();
  private final Catalog catalog;
  private final SharedTier l2;
  /**
   * Until when CURRENT and label copies may be served without reading the epoch first (set by each epoch check: two
   * poll intervals on); MAX_VALUE without a write-through L2. One compare on the hot path.
   */
  private volatile long epochTrustedUntil = Long.MAX_VALUE;
  /** Whether {@link #epochTrustedUntil} can ever be below MAX_VALUE (a write-through L2): a hit reads it only then. */
  private final boolean epochGuarded;

  /** One remembered copy: as loaded, as a hit serves it, and stale (built on first use). */
  static final class Entry {
    final ReadTarget target;
    /** Whether this is a CURRENT copy (the one compare the common hit makes). */
    final boolean current;
    final Prompt loaded;
    final Prompt hit;
    private volatile Prompt staleCopy;
    final long expiresAt;
    /** {@code expiresAt} while the copy may be served as a hit; MIN_VALUE once invalidated (one read on the hot path). */
    volatile long hitUntil;
    volatile boolean failing;
    volatile boolean invalidated;
    /** Plain: written on every 16th hit, read (approximately) only to pick an entry to evict. */
    long lastUsed;
    int hits;
    /** A label entry's rollout (null without one). */
    final Rollout rollout;

    Entry(ReadTarget target, Prompt loaded, long expiresAt, Rollout rollout) {
      this.target = target;
      this.current = target.kind == ReadTarget.Kind.CURRENT;
      this.loaded = loaded;
      this.hit = loaded.served("l1", false);
      this.expiresAt = expiresAt;
      this.hitUntil = expiresAt;
      this.rollout = rollout;
    }

    Prompt stale() {
      Prompt s = staleCopy;
      if (s == null) staleCopy = s = loaded.served(loaded.getProvenance().getSource().equals("fallback") ? "fallback" : "l1", true);
      return s;
    }
  }

  /** One label entry's rollout: arm A always; arm B once its candidate is in hand with the map's checksum. */
  static final class Rollout {
    final Schema.RolloutSpec spec;
    final Prompt armA;
    final Prompt armAHit;
    volatile Prompt armB;
    volatile Prompt armBHit;
    volatile String problem;
    private final ConcurrentHashMap<String, Integer> buckets = new ConcurrentHashMap<>();

    /** {@code spec} null: a map that cannot be used ({@code problem} says why): every read is served arm A, counted. */
    Rollout(Schema.RolloutSpec spec, String problem, String label, Prompt labelPrompt) {
      this.spec = spec;
      this.problem = problem;
      this.armA = spec == null ? labelPrompt : labelPrompt.forLabel(label, report(label, "A"), labelPrompt.isSourceDeleted());
      this.armAHit = armA.served("l1", false);
    }

    private PromptRollout report(String label, String arm) {
      return new PromptRollout(label, spec.rolloutId, arm, spec.percentBp, spec.candidateVersion);
    }

    void offer(Prompt candidate, String label) {
      if (!candidate.getChecksum().equals(spec.candidateChecksum)) {
        problem = "candidate " + Schema.versionKey(spec.candidateVersion) + " has checksum " + candidate.getChecksum()
            + ", the rollout names " + spec.candidateChecksum;
        return;
      }
      Prompt b = candidate.forLabel(label, report(label, "B"), armA.isSourceDeleted());
      armBHit = b.served("l1", false);
      armB = b;
      problem = null;
    }

    String arm(String promptId, String label, String key) {
      if (spec == null) return "B"; // never served: the fault path serves arm A and counts it
      int percent = spec.percentBp;
      if (percent <= 0) return "A";
      if (percent >= Schema.ROLLOUT_SCALE) return "B";
      if (key == null) return ThreadLocalRandom.current().nextInt(Schema.ROLLOUT_SCALE) < percent ? "B" : "A";
      Integer bucket = buckets.get(key);
      if (bucket == null) {
        bucket = Schema.rolloutBucket(promptId, label, key);
        if (buckets.size() >= 1024) buckets.clear();
        buckets.put(key, bucket);
      }
      return bucket < percent ? "B" : "A";
    }
  }

  private static final class NotFoundMark {
    final long until;
    final String reason;

    NotFoundMark(long until, String reason) {
      this.until = until;
      this.reason = reason;
    }
  }

  /** What a remote read brought: the item (null: none), where from, when read. */
  static final class Loaded {
    final Map<String, Object> item;
    final String source;
    final long fetchedAt;

    Loaded(Map<String, Object> item, String source, long fetchedAt) {
      this.item = item;
      this.source = source;
      this.fetchedAt = fetchedAt;
    }
  }

  private PromptClient(Builder b) {
    Map<String, String> env = b.environment != null ? b.environment : System.getenv();
    this.options = ResolvedOptions.resolve(b.tableName, b.numbers, env);
    this.clock = b.clock != null ? b.clock : System::currentTimeMillis;
    this.coarse = b.clock != null ? null : CoarseClock.SYSTEM;
    this.onRead = b.onRead;
    if (b.dynamoDbClient != null) {
      this.dynamoDb = b.dynamoDbClient;
      this.ownsDynamoDb = false;
    } else {
      this.dynamoDb = DefaultClients.dynamoDb(options);
      this.ownsDynamoDb = true;
    }
    this.catalog = new Catalog(this);
    PromptCacheL2 cache = b.l2;
    boolean owns = false;
    // The environment's cache serves the environment's table: a client given another table does not use it.
    String envTable = env.get(ResolvedOptions.TABLE_NAME_VARIABLE);
    boolean envNamesAnotherTable = b.tableName != null && envTable != null && !envTable.isEmpty() && !envTable.equals(b.tableName);
    if (cache == null && !b.noL2 && !envNamesAnotherTable) {
      cache = L2FromEnvironment.create(env, options, this);
      owns = cache != null;
    }
    this.l2 = cache == null ? null : new SharedTier(cache, owns, this);
    this.epochGuarded = l2 != null && l2.writeThrough();
    if (epochGuarded) {
      epochTrustedUntil = 0;
      l2.start();
    }
  }

  /** The epoch moved: every CURRENT and label copy is re-validated by its next read, not-found answers and the catalog forgotten. */
  void epochMoved() {
    for (Entry e : entries.values()) {
      if (e.target.kind == ReadTarget.Kind.VERSION) continue;
      e.invalidated = true;
      e.hitUntil = Long.MIN_VALUE;
    }
    notFound.clear();
    catalog.forget();
    counters.incrementAndGet(EPOCH_MOVES);
  }

  void trustCopiesUntil(long until) {
    epochTrustedUntil = until;
  }

  /** A frozen process thawed past its trust: read the epoch (bounded) before serving from memory. */
  private void checkEpochFirst() {
    try {
      l2.checkEpoch();
    } catch (RuntimeException e) {
      counters.incrementAndGet(L2_ERRORS);
    }
  }

  long now() {
    return clock.getAsLong();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The client with every option from the environment (what a function with {@code addReader} needs). */
  public static PromptClient create() {
    return builder().build();
  }

  public ResolvedOptions options() {
    return options;
  }

  // -- reads -----------------------------------------------------------------------------------------------------

  /**
   * The CURRENT version of a prompt (one eventually consistent {@code GetItem} when not cached).
   * @throws PromptNotFoundException if it does not exist, was deleted, or the id can never be valid
   * @throws PromptStoreException if the table cannot be read and no copy within {@code staleIfErrorSeconds} is held
   */
  public Prompt getPrompt(String promptId) {
    if (promptId == null) throw invalidNull();
    // The hit: one map lookup (keyed by the id itself for CURRENT: no key is built) and a clock field read.
    Entry entry = entries.get(promptId);
    if (entry != null && entry.current) {
      long until = entry.hitUntil;
      if (epochGuarded) until = Math.min(until, epochTrustedUntil);
      if (until > hitNow(until)) {
        // plain: a locked increment per hit would cost more than the map lookup (see stats()); every 16th hit marks
        // its entry used for the size bound (a hot prompt keeps its place at a fraction of the cost)
        if ((hitCount++ & 15) == 0) entry.lastUsed = tick.get() + 1;
        if (onRead != null) report(entry.hit, null);
        return entry.hit;
      }
    }
    return getCurrentSlow(promptId);
  }

  /** The time a hit judges a deadline by: the coarse clock (see {@link CoarseClock}), or the test clock. */
  private long hitNow(long deadline) {
    CoarseClock c = coarse;
    return c != null ? c.forHit(deadline) : clock.getAsLong();
  }

  private Prompt getCurrentSlow(String promptId) {
    Entry entry = entries.get(promptId);
    long now = now();
    if (now > epochTrustedUntil) {
      checkEpochFirst();
      entry = entries.get(promptId);
    }
    if (entry != null && entry.target.kind == ReadTarget.Kind.CURRENT && !entry.invalidated && entry.expiresAt > now) {
      touch(entry);
      hitCount++; // plain: a locked increment per hit would cost more than the map lookup (see stats())
      if (onRead != null) report(entry.hit, null);
      return entry.hit;
    }
    return read(ReadTarget.current(promptId), GetOptions.NONE, entry != null && entry.target.kind == ReadTarget.Kind.CURRENT ? entry : null);
  }

  /**
   * A prompt by CURRENT, an exact version or a label (with a rollout's arm picked by {@code stickinessKey}).
   * @throws PromptNotFoundException as {@link #getPrompt(String)}; with a label, if the label does not exist or its name is invalid
   * @throws PromptServingException for {@code version} and {@code label} together
   */
  public Prompt getPrompt(String promptId, GetOptions get) {
    if (promptId == null) throw invalidNull();
    if (get == null) get = GetOptions.NONE;
    ReadTarget target;
    if (get.label != null) {
      if (get.version != null) throw new PromptServingException("give `version` or `label`, not both: a label names its own version");
      target = ReadTarget.label(promptId, get.label);
    } else if (get.version != null) {
      target = ReadTarget.version(promptId, get.version);
    } else {
      if (get.fallback == null) return getPrompt(promptId);
      target = ReadTarget.current(promptId);
    }
    if (target.kind != ReadTarget.Kind.VERSION) {
      long trusted = epochTrustedUntil;
      if (hitNow(trusted) > trusted) checkEpochFirst();
    }
    Entry entry = entries.get(target.cacheKey);
    if (entry != null && entry.target.kind != target.kind) entry = null; // an id like '#3#x' never meets a pinned entry
    if (entry != null && !entry.invalidated && entry.expiresAt > hitNow(entry.expiresAt)) {
      touch(entry);
      counters.incrementAndGet(HITS);
      Prompt served = serve(entry, get.stickinessKey, "hit");
      if (onRead != null) report(served, target.version);
      return served;
    }
    return read(target, get, entry);
  }

  private static PromptNotFoundException invalidNull() {
    return new PromptNotFoundException("null", null, "not a valid prompt id (" + Schema.PROMPT_ID_RULE + ", which is reserved)");
  }

  /** Everything but a fresh hit, for any target. {@code cached} is the expired copy of this key, if any. */
  private Prompt read(ReadTarget target, GetOptions get, Entry cached) {
    Prompt served;
    try {
      served = miss(target, get, cached);
    } catch (PromptStoreException e) {
      if (get.fallback == null) throw e;
      counters.incrementAndGet(FALLBACK_SERVES);
      Prompt fallback = get.fallback.toPrompt(target.promptId, clock);
      served = target.kind == ReadTarget.Kind.LABEL ? fallback.forLabel(target.label, null, false) : fallback;
    }
    if (onRead != null) report(served, target.version);
    return served;
  }

  private Prompt miss(ReadTarget target, GetOptions get, Entry cached) {
    long now = now();
    if (cached != null && ((!cached.invalidated && now < cached.expiresAt + options.staleWhileRevalidateMs)
        || (cached.failing && now < cached.expiresAt + options.staleIfErrorMs))) {
      counters.incrementAndGet(STALE_SERVES);
      BACKGROUND.execute(() -> {
        try {
          load(target);
        } catch (RuntimeException ignored) {
          // counted where it happened; the stale copy keeps being served within its bounds
        }
      });
      return serve(cached, get.stickinessKey, "stale");
    }
    String problem = target.problem();
    if (problem != null) throw target.notFound(problem);
    NotFoundMark mark = notFound.get(target.cacheKey);
    if (mark != null && now < mark.until) {
      counters.incrementAndGet(NEGATIVE_HITS);
      throw target.notFound(mark.reason);
    }
    counters.incrementAndGet(MISSES);
    try {
      return serve(load(target), get.stickinessKey, "loaded");
    } catch (PromptStoreException e) {
      if (cached != null && now() < cached.expiresAt + options.staleIfErrorMs) {
        counters.incrementAndGet(STALE_SERVES);
        return serve(cached, get.stickinessKey, "stale");
      }
      throw e;
    }
  }

  /** The copy of {@code entry} a read serves: by mode, and by the rollout's arm for a label with a rollout. */
  private Prompt serve(Entry entry, String stickinessKey, String mode) {
    Rollout r = entry.rollout;
    if (r == null) return "hit".equals(mode) ? entry.hit : "loaded".equals(mode) ? entry.loaded : entry.stale();
    String arm = r.arm(entry.target.promptId, entry.target.label, stickinessKey);
    if ("B".equals(arm)) {
      if (r.spec != null && r.armB == null && r.problem == null) loadCandidate(entry);
      Prompt b = r.armB;
      if (b != null) return "hit".equals(mode) ? r.armBHit : "loaded".equals(mode) ? b : b.served("l1", true);
      counters.incrementAndGet(ROLLOUT_FAULTS);
      logRolloutFault(entry, r.problem);
    }
    return "hit".equals(mode) ? r.armAHit : "loaded".equals(mode) ? r.armA : r.armA.served("l1", true);
  }

  private final ConcurrentHashMap<String, String> faultsLogged = new ConcurrentHashMap<>();

  private void logRolloutFault(Entry entry, String problem) {
    String key = entry.target.cacheKey;
    if (problem == null || problem.equals(faultsLogged.put(key, problem))) return;
    Map<String, Object> line = new java.util.LinkedHashMap<>();
    line.put("level", "WARN");
    line.put("message", "cdk-prompt-serving: the rollout of label '" + entry.target.label + "' of prompt '" + entry.target.promptId
        + "' cannot serve arm B (" + problem + "); arm A is served to its share until the rollout is fixed or removed");
    line.put("table", options.tableName);
    line.put("promptId", entry.target.promptId);
    line.put("label", entry.target.label);
    line.put("rolloutId", entry.rollout.spec == null ? null : entry.rollout.spec.rolloutId);
    System.out.println(Json.stringify(line));
  }

  private void loadCandidateOf(Entry entry) {
    try {
      loadCandidate(entry);
    } catch (RuntimeException e) {
      // the label is served (arm A) whatever the candidate read did
    }
  }

  /** Arm B's candidate version, read through the same cached path as any pinned read. */
  private void loadCandidate(Entry entry) {
    Rollout r = entry.rollout;
    try {
      Prompt candidate = getPromptInternal(ReadTarget.version(entry.target.promptId, r.spec.candidateVersion));
      r.offer(candidate, entry.target.label);
    } catch (PromptNotFoundException e) {
      r.problem = "candidate " + Schema.versionKey(r.spec.candidateVersion) + " does not exist";
    } catch (PromptStoreException e) {
      // not permanent: arm A is served this time, the next read assigned B tries again
      counters.incrementAndGet(ROLLOUT_FAULTS);
    }
  }

  /** A cached read of an exact version (for a rollout's candidate), as served: its loaded or l1 copy. */
  private Prompt getPromptInternal(ReadTarget target) {
    Entry entry = entries.get(target.cacheKey);
    if (entry != null && entry.target.kind == target.kind && !entry.invalidated && entry.expiresAt > now()) {
      return entry.hit;
    }
    String problem = target.problem();
    if (problem != null) throw target.notFound(problem);
    return load(target).loaded;
  }

  /** The load of {@code target} under way (joined), or a new one made by this thread. One per key across threads. */
  private Entry load(ReadTarget target) {
    CompletableFuture<Entry> mine = new CompletableFuture<>();
    CompletableFuture<Entry> running = flights.putIfAbsent(target.cacheKey, mine);
    if (running != null) {
      try {
        return running.join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof RuntimeException) throw (RuntimeException) e.getCause();
        throw e;
      }
    }
    try {
      // A load that finished between this thread's look at memory and its flight: use its copy (one read per key).
      Entry held = entries.get(target.cacheKey);
      if (held != null && held.target.kind == target.kind && !held.invalidated && held.expiresAt > now()) {
        mine.complete(held);
        return held;
      }
      Entry entry = fetch(target);
      mine.complete(entry);
      return entry;
    } catch (RuntimeException e) {
      mine.completeExceptionally(e);
      if (e instanceof PromptStoreException) {
        Entry held = entries.get(target.cacheKey);
        if (held != null) held.failing = true;
      }
      throw e;
    } finally {
      flights.remove(target.cacheKey, mine);
    }
  }

  /** Catalog → L2 → table; remembers what it finds, or that nothing was found. */
  private Entry fetch(ReadTarget target) {
    Loaded loaded;
    if (target.usesCatalog()) {
      Boolean known = catalog.verdictNow(target.promptId);
      if (known == null) {
        // Cold: the item is read beside the catalog (one round trip, not two); the verdict still rules first.
        CompletableFuture<Boolean> verdict = CompletableFuture.supplyAsync(() -> catalog.mightContain(target.promptId), BACKGROUND);
        Loaded item = null;
        RuntimeException failure = null;
        try {
          item = readRemote(target);
        } catch (RuntimeException e) {
          failure = e;
        }
        if (!verdict.join()) return rejected(target);
        if (failure != null) throw failure;
        loaded = item;
      } else if (!known) {
        return rejected(target);
      } else {
        loaded = readRemote(target);
      }
    } else {
      loaded = readRemote(target);
    }
    if (loaded != null && !"table".equals(loaded.source) && loaded.item != null) {
      try {
        return accept(target, loaded);
      } catch (PromptStoreException e) {
        counters.incrementAndGet(L2_ERRORS); // an L2 value that breaks the contract: read the table
        long fetchedAt = now();
        Map<String, Object> item = getItem(target.promptId, target.sortKey);
        l2.fill(target.promptId, target.sortKey, item, fetchedAt);
        loaded = new Loaded(item, "table", fetchedAt);
      }
    }
    return accept(target, loaded);
  }

  private Entry rejected(ReadTarget target) {
    counters.incrementAndGet(CATALOG_REJECTIONS);
    entries.remove(target.cacheKey);
    throw target.notFound("not in the catalog");
  }

  /** Remembers a loaded item; throws not-found for none or a tombstone, PromptStoreException for a broken item. */
  private Entry accept(ReadTarget target, Loaded loaded) {
    if (loaded.item == null || Prompt.isDeleted(loaded.item)) {
      entries.remove(target.cacheKey);
      String reason = loaded.item == null ? target.missingReason() : target.kind == ReadTarget.Kind.LABEL ? target.missingReason() : "deleted";
      notFound.put(target.cacheKey, new NotFoundMark(now() + options.notFoundMaxAgeMs, target.missingReason()));
      if (notFound.size() > options.maxEntries) notFound.clear();
      throw target.notFound(reason);
    }
    Provenance provenance = new Provenance(loaded.source.equals("table") ? "table" : "l2", false, loaded.fetchedAt, clock);
    Entry entry;
    if (target.kind == ReadTarget.Kind.LABEL) {
      Prompt prompt = LabelItems.promptFromLabelItem(loaded.item, target.label, provenance);
      Rollout rollout = null;
      if (loaded.item.containsKey("rollout")) {
        Schema.ParsedRollout parsed = Schema.parseRollout(loaded.item.get("rollout"));
        rollout = new Rollout(parsed.spec, parsed.problem, target.label, prompt);
      }
      entry = new Entry(target, prompt, target.expiresAt(loaded.fetchedAt, options.maxAgeMs), rollout);
      // The candidate is read with the label item (not on the first arm-B read), so stale-if-error can serve either arm.
      if (rollout != null && rollout.spec != null && rollout.spec.percentBp > 0) loadCandidateOf(entry);
    } else {
      Prompt prompt = Prompt.fromItem(loaded.item, 1, provenance);
      entry = new Entry(target, prompt, target.expiresAt(loaded.fetchedAt, options.maxAgeMs), null);
    }
    remember(entry);
    return entry;
  }

  private void remember(Entry entry) {
    entry.lastUsed = tick.incrementAndGet();
    entries.put(entry.target.cacheKey, entry);
    notFound.remove(entry.target.cacheKey);
    while (entries.size() > options.maxEntries) evictOne();
  }

  /** Marks an entry used for the size bound on every 16th hit (a hot prompt keeps its place for a fraction of the cost). */
  private void touch(Entry entry) {
    if ((entry.hits++ & 15) == 0) entry.lastUsed = tick.get() + 1;
  }

  private void evictOne() {
    Map.Entry<String, Entry> oldest = null;
    for (Map.Entry<String, Entry> e : entries.entrySet()) {
      if (oldest == null || e.getValue().lastUsed < oldest.getValue().lastUsed) oldest = e;
    }
    if (oldest != null && entries.remove(oldest.getKey(), oldest.getValue())) evictions.incrementAndGet();
  }

  /** One remote read of the target's item: the L2 first when there is one, then the table (filling the L2). */
  private Loaded readRemote(ReadTarget target) {
    if (l2 != null) {
      Loaded shared = l2.read(target.promptId, target.sortKey);
      if (shared != null) return shared;
    }
    long fetchedAt = now();
    Map<String, Object> item = getItem(target.promptId, target.sortKey);
    if (l2 != null) l2.fill(target.promptId, target.sortKey, item, fetchedAt);
    return new Loaded(item, "table", fetchedAt);
  }

  /** One eventually consistent GetItem, retried on throttling and server errors within {@code requestTimeoutMs}. */
  Map<String, Object> getItem(String promptId, String sortKey) {
    long deadline = now() + options.requestTimeoutMs;
    Map<String, AttributeValue> key = new HashMap<>(4);
    key.put(Schema.PARTITION_KEY, AttributeValue.builder().s(promptId).build());
    key.put(Schema.SORT_KEY, AttributeValue.builder().s(sortKey).build());
    for (int attempt = 1;; attempt++) {
      long left = deadline - now();
      counters.incrementAndGet(STORE_READS);
      try {
        GetItemResponse response = dynamoDb().getItem(GetItemRequest.builder().tableName(options.tableName).key(key)
            .overrideConfiguration(o -> o.apiCallTimeout(Duration.ofMillis(Math.max(1, left)))).build());
        return response.hasItem() && !response.item().isEmpty() ? DdbCodec.fromItem(response.item()) : null;
      } catch (SdkException e) {
        long backoff = Math.min(1000, 25L << Math.min(attempt, 5)) / 2 + ThreadLocalRandom.current().nextLong(Math.min(1000, 25L << Math.min(attempt, 5)) / 2 + 1);
        boolean retryable = e.retryable() || (e instanceof SdkServiceException && (((SdkServiceException) e).isThrottlingException()
            || ((SdkServiceException) e).statusCode() >= 500));
        if (retryable && attempt < options.maxAttempts && now() + backoff < deadline) {
          counters.incrementAndGet(RETRIES);
          try {
            Thread.sleep(backoff);
          } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
          }
          continue;
        }
        counters.incrementAndGet(STORE_ERRORS);
        throw new PromptStoreException("cannot read " + promptId + "/" + sortKey + " from table " + options.tableName + ": "
            + e.getMessage(), e);
      }
    }
  }

  void count(int slot) {
    counters.incrementAndGet(slot);
  }

  /** Calls {@code onRead}; a hook that throws never fails the read (reported once on stderr). */
  private void report(Prompt prompt, Integer requestedVersion) {
    try {
      onRead.onRead(new ReadInfo(options.tableName, prompt, requestedVersion), this);
    } catch (RuntimeException e) {
      if (onReadFailed) return;
      onReadFailed = true;
      Map<String, Object> line = new java.util.LinkedHashMap<>();
      line.put("level", "WARN");
      line.put("message", "cdk-prompt-serving: the onRead hook threw (reads are served regardless; reported once): " + e.getMessage());
      System.err.println(Json.stringify(line));
    }
  }

  // -- the rest of the surface -----------------------------------------------------------------------------------

  /**
   * Reads the catalog and the CURRENT version of each listed prompt (and each label's item, and a rollout's candidate),
   * so the first requests are served from memory. Unknown ids are remembered as not found and do not fail.
   * @throws PromptNotFoundException for an id or a label name that can never be valid
   * @throws PromptStoreException if the table cannot be read for one of them
   */
  public void preload(Collection<String> promptIds, Collection<String> labels) {
    List<String> ids = new ArrayList<>(promptIds == null ? List.of() : promptIds);
    List<String> names = labels == null ? List.of() : new ArrayList<>(labels);
    for (String label : names) {
      String p = Schema.labelNameProblem(label);
      if (p != null) throw new PromptNotFoundException(ids.isEmpty() ? "" : ids.get(0), null, "not a valid label (" + p + ")");
    }
    for (String id : ids) {
      String p = ReadTarget.current(id).problem();
      if (p != null) throw new PromptNotFoundException(id, null, p);
    }
    catalog.refresh();
    List<CompletableFuture<?>> loads = new ArrayList<>();
    for (String id : ids) {
      loads.add(CompletableFuture.runAsync(() -> quietly(() -> getPrompt(id)), BACKGROUND));
      for (String label : names) {
        loads.add(CompletableFuture.runAsync(() -> quietly(() -> {
          Entry e = load(ReadTarget.label(id, label));
          if (e.rollout != null && e.rollout.spec != null && e.rollout.spec.percentBp > 0 && e.rollout.armB == null) loadCandidate(e);
        }), BACKGROUND));
      }
    }
    for (CompletableFuture<?> f : loads) {
      try {
        f.join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof RuntimeException) throw (RuntimeException) e.getCause();
        throw e;
      }
    }
  }

  public void preload(Collection<String> promptIds) {
    preload(promptIds, null);
  }

  private static void quietly(Runnable r) {
    try {
      r.run();
    } catch (PromptNotFoundException ignored) {
      // unknown ids do not fail a preload
    }
  }

  /**
   * Forgets every copy of a prompt held by this process (CURRENT, exact versions, labels) and its not-found answers;
   * the next read goes to the L2 or the table.
   */
  public void invalidate(String promptId) {
    entries.values().removeIf(e -> e.target.promptId.equals(promptId));
    notFound.keySet().removeIf(k -> k.equals(promptId) || k.endsWith("#" + promptId) && k.startsWith("#"));
  }

  /** Forgets everything held in memory, the catalog included. */
  public void invalidateAll() {
    entries.clear();
    notFound.clear();
    catalog.forget();
  }

  /** Counters since the client was created. */
  public PromptClientStats stats() {
    long[] c = new long[counters.length()];
    for (int i = 0; i < c.length; i++) c[i] = counters.get(i);
    c[HITS] += hitCount;
    return new PromptClientStats(c, evictions.get(), entries.size());
  }

  /**
   * Registers this client for SnapStart (CRaC): before the snapshot it preloads {@code primeIds} (and their
   * {@code primeLabels}) so the restored function serves them from memory, then closes every connection it opened and
   * forgets credentials (the L2 connection, its IAM token, and the DynamoDB client it made, with its credentials
   * provider); after the restore it makes them again lazily and re-reads the freshness epoch before serving from memory.
   * A no-op outside a CRaC runtime (the registration is kept, and never called).
   * @return the CRaC resource (tests call its methods to simulate a snapshot and a restore)
   */
  public SnapStart registerSnapStart(Collection<String> primeIds, Collection<String> primeLabels) {
    SnapStart hook = new SnapStart(this, primeIds, primeLabels);
    try {
      org.crac.Core.getGlobalContext().register(hook);
    } catch (RuntimeException | LinkageError e) {
      // no CRaC API on the class path or no global context: nothing is snapshotted
    }
    return hook;
  }

  void beforeCheckpoint() {
    if (coarse != null) coarse.suspend();
    if (l2 != null) l2.beforeCheckpoint();
    if (ownsDynamoDb) {
      DynamoDbClient old = dynamoDb;
      dynamoDb = null;
      if (old != null) old.close();
    }
    notFound.clear();
    if (l2 != null && l2.writeThrough()) epochTrustedUntil = 0;
  }

  void afterRestore() {
    if (coarse != null) coarse.resume();
    if (ownsDynamoDb && dynamoDb == null) dynamoDb = DefaultClients.dynamoDb(options);
    if (l2 != null) l2.afterRestore();
  }

  /** Whether this client holds an open DynamoDB client (false between a snapshot and a restore). */
  boolean holdsDynamoDbClient() {
    return dynamoDb != null;
  }

  private DynamoDbClient dynamoDb() {
    DynamoDbClient c = dynamoDb;
    if (c == null) {
      synchronized (this) {
        c = dynamoDb;
        if (c == null) dynamoDb = c = DefaultClients.dynamoDb(options);
      }
    }
    return c;
  }

  /** Closes what this client opened (its own L2 connection and DynamoDB client); a client given to it is left open. */
  @Override
  public void close() {
    if (l2 != null) l2.close();
    DynamoDbClient c = dynamoDb;
    if (ownsDynamoDb && c != null) c.close();
  }

  ResolvedOptions resolved() {
    return options;
  }

  SharedTier sharedTier() {
    return l2;
  }

  /** The Bloom catalog, read from the table (or the L2) and re-read after {@code catalogMaxAgeSeconds}. */
  static final class Catalog {
    private final PromptClient client;
    private volatile byte[] bytes;
    private volatile long bits;
    private volatile int hashes;
    private volatile long readAt = -1;

    Catalog(PromptClient client) {
      this.client = client;
    }

    private boolean admits(String id) {
      byte[] b = bytes;
      return b == null || Schema.bloomMightContain(b, bits, hashes, id);
    }

    /** The filter came from an L2 fill: it may predate the table's, so it never rules an id out alone. */
    private volatile boolean fromFill;

    /** The verdict without a remote call, or null when the catalog must be read first. */
    Boolean verdictNow(String id) {
      long at = readAt;
      if (at < 0) return null;
      boolean fresh = client.now() - at < client.options.catalogMaxAgeMs;
      if (!admits(id)) return fresh && !fromFill ? Boolean.FALSE : null;
      if (!fresh) BACKGROUND.execute(this::refresh);
      return Boolean.TRUE;
    }

    boolean mightContain(String id) {
      long at = readAt;
      if (at < 0 || client.now() - at >= client.options.catalogMaxAgeMs) refresh();
      if (admits(id) || !fromFill) return admits(id);
      read(true); // a fill's "absent" is confirmed by the table's catalog
      return admits(id);
    }

    void forget() {
      readAt = -1;
      bytes = null;
    }

    /** One read at a time; a caller arriving during a read waits for it and uses its answer. */
    synchronized void refresh() {
      long before = readAt;
      if (before >= 0 && client.now() - before < 50) return; // read just now by the thread we waited for
      read(false);
    }

    private synchronized void read(boolean fromTable) {
      try {
        Map<String, Object> item;
        SharedTier l2 = client.l2;
        Loaded shared = l2 == null || fromTable ? null : l2.read(Schema.CATALOG_ID, Schema.CURRENT);
        if (shared != null) {
          item = shared.item;
        } else {
          long fetchedAt = client.now();
          item = client.getItem(Schema.CATALOG_ID, Schema.CURRENT);
          if (l2 != null) l2.fill(Schema.CATALOG_ID, Schema.CURRENT, item, fetchedAt);
        }
        fromFill = shared != null && "fill".equals(shared.source);
        if (item == null || Schema.catalogProblem(item.get("bloom"), item.get("bloom_bits"), item.get("bloom_hashes"), item.get("count"),
            item.get("revision")) != null) {
          bytes = null;
        } else {
          bits = ((Number) item.get("bloom_bits")).longValue();
          hashes = ((Number) item.get("bloom_hashes")).intValue();
          bytes = (byte[]) item.get("bloom");
        }
        client.counters.incrementAndGet(CATALOG_LOADS);
      } catch (RuntimeException e) {
        // keep the filter we have (or none): an unreadable catalog never rejects an id
      }
      readAt = client.now();
    }
  }

  /** Options of {@link PromptClient}: the surface of surface.json's clientOptions, in Java's spelling. */
  public static final class Builder {
    private String tableName;
    private DynamoDbClient dynamoDbClient;
    private final Map<String, Double> numbers = new HashMap<>();
    private PromptCacheL2 l2;
    private boolean noL2;
    private OnRead onRead;
    private Map<String, String> environment;
    private java.util.function.LongSupplier clock;

    private Builder() {}

    /** Test hook: the wall clock in epoch milliseconds (the Python client's {@code clock}). */
    public Builder clock(java.util.function.LongSupplier clock) {
      this.clock = clock;
      return this;
    }

    /** The serving table (default: {@code PROMPT_SERVING_TABLE_NAME}, which {@code addReader} sets). */
    public Builder tableName(String tableName) {
      this.tableName = tableName;
      return this;
    }

    /** The DynamoDB client to read with (default: one with the URL-connection HTTP client, made by this client). */
    public Builder dynamoDbClient(DynamoDbClient client) {
      this.dynamoDbClient = client;
      return this;
    }

    public Builder maxAgeSeconds(double v) {
      return number("maxAgeSeconds", v);
    }

    public Builder maxEntries(int v) {
      return number("maxEntries", v);
    }

    public Builder notFoundMaxAgeSeconds(double v) {
      return number("notFoundMaxAgeSeconds", v);
    }

    public Builder staleWhileRevalidateSeconds(double v) {
      return number("staleWhileRevalidateSeconds", v);
    }

    public Builder staleIfErrorSeconds(double v) {
      return number("staleIfErrorSeconds", v);
    }

    public Builder catalogMaxAgeSeconds(double v) {
      return number("catalogMaxAgeSeconds", v);
    }

    public Builder requestTimeoutMs(long v) {
      return number("requestTimeoutMs", v);
    }

    public Builder maxAttempts(int v) {
      return number("maxAttempts", v);
    }

    public Builder l2TimeoutMs(long v) {
      return number("l2TimeoutMs", v);
    }

    public Builder epochPollIntervalMs(long v) {
      return number("epochPollIntervalMs", v);
    }

    /** A shared cache tier to use instead of the one the environment describes. */
    public Builder l2(PromptCacheL2 l2) {
      this.l2 = l2;
      this.noL2 = false;
      return this;
    }

    /** No shared cache tier, whatever the environment says. */
    public Builder withoutL2() {
      this.l2 = null;
      this.noL2 = true;
      return this;
    }

    public Builder onRead(OnRead onRead) {
      this.onRead = onRead;
      return this;
    }

    /** Test hook: the environment to read instead of {@link System#getenv()}. */
    public Builder environment(Map<String, String> environment) {
      this.environment = environment;
      return this;
    }

    Builder number(String name, double value) {
      numbers.put(name, value);
      return this;
    }

    /** @throws PromptServingException if no table name is given or set, or an option is out of range */
    public PromptClient build() {
      return new PromptClient(this);
    }
  }
}
