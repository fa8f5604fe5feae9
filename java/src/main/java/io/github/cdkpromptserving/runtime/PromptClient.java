package io.github.cdkpromptserving.runtime;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * Reads prompts from a {@code PromptServingTable}. Create one per process (a static field of the handler class, outside
 * {@code handleRequest}) and share it: it is thread-safe.
 *
 * <p>A read tries, in order: memory (a fresh copy) → an expired copy within {@code staleWhileRevalidateSeconds} (served at
 * once, refreshed in the background) → the catalog (rules out unknown ids without a remote call) → the L2 → one
 * {@code GetItem} (retried on throttling within {@code requestTimeoutMs}) → on failure, the last good copy within
 * {@code staleIfErrorSeconds}. Concurrent reads of one key, from any number of threads, share one load.
 *
 * <p>Here: the surface, the CURRENT hit, the builder. Past a fresh hit every target takes {@link ReadPath}; each concern
 * has its file (docs/ARCHITECTURE.md, "The Java client").
 *
 * <pre>{@code
 * static final PromptClient PROMPTS = PromptClient.builder().maxAgeSeconds(30).build();
 * Prompt p = PROMPTS.getPrompt("support-triage");
 * String text = p.renderText(Map.of("ticket", body), null);
 * }</pre>
 */
public final class PromptClient implements AutoCloseable {
  final ResolvedOptions options;
  /** The wall clock (a test hook replaces it; Provenance ages count on it too). */
  final LongSupplier clock;
  /** The clock a hit judges freshness by (null when a test clock is given: every read uses {@link #clock}). */
  final CoarseClock coarse;
  final Counters counters = new Counters();
  /**
   * Hits of {@link #getPrompt(String)} (CURRENT): a plain field, since an atomic increment costs as much as the whole hit
   * otherwise does; under concurrent hits from many threads it may undercount (never the other counters).
   */
  long hitCount;
  final L1Cache l1;
  /** The L1's map, held here too: the hit is one map lookup. */
  private final java.util.concurrent.ConcurrentHashMap<String, Entry> entries;
  final Store store;
  final Catalog catalog;
  final SharedTier l2;
  /** Null without an onRead hook. */
  final Hook hook;
  final ReadPath readPath;
  /**
   * Until when CURRENT and label copies may be served without reading the epoch first (set by each epoch check: two
   * poll intervals on); MAX_VALUE without a write-through L2. One compare on the hot path.
   */
  volatile long epochTrustedUntil = Long.MAX_VALUE;
  /** Whether {@link #epochTrustedUntil} can ever be below MAX_VALUE (a write-through L2): a hit reads it only then. */
  private final boolean epochGuarded;

  private PromptClient(Builder b) {
    Map<String, String> env = b.environment != null ? b.environment : System.getenv();
    this.options = ResolvedOptions.resolve(b.tableName, b.numbers, env);
    this.clock = b.clock != null ? b.clock : System::currentTimeMillis;
    this.coarse = b.clock != null ? null : CoarseClock.SYSTEM;
    this.hook = b.onRead == null ? null : new Hook(b.onRead, options.tableName, this);
    this.store = new Store(options, clock, counters, b.dynamoDbClient);
    this.l1 = new L1Cache(options.maxEntries, counters);
    this.entries = l1.entries;
    this.catalog = new Catalog(this);
    this.l2 = L2FromEnvironment.forClient(this, b.l2, b.noL2, b.tableName, env);
    this.readPath = new ReadPath(this);
    this.epochGuarded = l2 != null && l2.writeThrough();
    if (epochGuarded) {
      epochTrustedUntil = 0;
      l2.start();
    }
  }

  long now() {
    return clock.getAsLong();
  }

  /** The time a hit judges a deadline by: the coarse clock (see {@link CoarseClock}), or the test clock. */
  long hitNow(long deadline) {
    CoarseClock c = coarse;
    return c != null ? c.forHit(deadline) : clock.getAsLong();
  }

  SharedTier sharedTier() {
    return l2;
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
    if (promptId == null) throw ReadPath.invalidNull();
    // The hit: one map lookup (keyed by the id itself for CURRENT: no key is built) and a clock field read.
    Entry entry = entries.get(promptId);
    if (entry != null && entry.current) {
      long until = entry.hitUntil;
      if (epochGuarded) until = Math.min(until, epochTrustedUntil);
      if (until > hitNow(until)) {
        // plain: a locked increment per hit would cost more than the map lookup (see stats()); every 16th hit marks
        // its entry used for the size bound (a hot prompt keeps its place at a fraction of the cost)
        if ((hitCount++ & 15) == 0) entry.lastUsed = l1.tick.get() + 1;
        if (hook != null) hook.report(entry.hit, null);
        return entry.hit;
      }
    }
    return readPath.current(promptId);
  }

  /**
   * A prompt by CURRENT, an exact version or a label (with a rollout's arm picked by {@code stickinessKey}).
   * @throws PromptNotFoundException as {@link #getPrompt(String)}; with a label, if the label does not exist or its name is invalid
   * @throws PromptServingException for {@code version} and {@code label} together
   */
  public Prompt getPrompt(String promptId, GetOptions get) {
    if (promptId == null) throw ReadPath.invalidNull();
    if (get == null) get = GetOptions.NONE;
    if (get.label == null && get.version == null && get.fallback == null) return getPrompt(promptId);
    return readPath.get(ReadTarget.of(promptId, get), get);
  }

  // -- the rest of the surface -----------------------------------------------------------------------------------

  /**
   * Reads the catalog and the CURRENT version of each listed prompt (and each label's item, and a rollout's candidate),
   * so the first requests are served from memory. Unknown ids are remembered as not found and do not fail.
   * @throws PromptNotFoundException for an id or a label name that can never be valid
   * @throws PromptStoreException if the table cannot be read for one of them
   */
  public void preload(Collection<String> promptIds, Collection<String> labels) {
    Preload.preload(this, promptIds, labels);
  }

  public void preload(Collection<String> promptIds) {
    preload(promptIds, null);
  }

  /**
   * Forgets every copy of a prompt held by this process (CURRENT, exact versions, labels) and its not-found answers;
   * the next read goes to the L2 or the table.
   */
  public void invalidate(String promptId) {
    l1.invalidate(promptId);
  }

  /** Forgets everything held in memory, the catalog included. */
  public void invalidateAll() {
    l1.clear();
    catalog.forget();
  }

  /** Counters since the client was created. */
  public PromptClientStats stats() {
    return counters.snapshot(hitCount, l1.size());
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
    return SnapStart.register(this, primeIds, primeLabels);
  }

  /** Whether this client holds an open DynamoDB client (false between a snapshot and a restore). */
  boolean holdsDynamoDbClient() {
    return store.holdsClient();
  }

  /** Closes what this client opened (its own L2 connection and DynamoDB client); a client given to it is left open. */
  @Override
  public void close() {
    if (l2 != null) l2.close();
    store.close();
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
