package io.github.cdkpromptserving.runtime;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The one read path (src/runtime/read-path.ts) every {@link ReadTarget} takes past a fresh hit: an expired copy within
 * {@code staleWhileRevalidateSeconds} (served, refreshed in the background) → the target's rule (an id or label that
 * can never exist) → a remembered not-found → one load per key across threads (single-flight) of catalog → L2 → table
 * → on failure, the last good copy within {@code staleIfErrorSeconds}, else the read's fallback. A label read then
 * takes the {@link RolloutStep}; every read is reported to the {@link Hook}.
 */
final class ReadPath {
  /** Background refreshes (stale-while-revalidate, the catalog beside a cold read): daemon threads, made on demand. */
  static final ExecutorService BACKGROUND = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "prompt-serving-refresh");
    t.setDaemon(true);
    return t;
  });

  private final PromptClient client;
  private final ResolvedOptions options;
  private final Counters counters;
  private final L1Cache l1;
  private final Catalog catalog;
  private final SharedTier l2;
  private final Store store;
  private final Hook hook;
  final RolloutStep rollouts;
  /** Loads under way, by cache key: one per key across threads (single-flight). */
  private final ConcurrentHashMap<String, CompletableFuture<Entry>> flights = new ConcurrentHashMap<>();

  ReadPath(PromptClient client) {
    this.client = client;
    this.options = client.options;
    this.counters = client.counters;
    this.l1 = client.l1;
    this.catalog = client.catalog;
    this.l2 = client.l2;
    this.store = client.store;
    this.hook = client.hook;
    this.rollouts = new RolloutStep(this, counters, options.tableName);
  }

  static PromptNotFoundException invalidNull() {
    return new PromptNotFoundException("null", null, "not a valid prompt id (" + Schema.PROMPT_ID_RULE + ", which is reserved)");
  }

  /** CURRENT past the client's hit: the epoch checked when its trust ran out, the entry re-checked, else a read. */
  Prompt current(String promptId) {
    Entry entry = l1.get(promptId);
    long now = client.now();
    if (now > client.epochTrustedUntil) {
      checkEpochFirst();
      entry = l1.get(promptId);
    }
    if (entry != null && entry.target.kind == ReadTarget.Kind.CURRENT && !entry.invalidated && entry.expiresAt > now) {
      l1.touch(entry);
      client.hitCount++; // plain: a locked increment per hit would cost more than the map lookup (see stats())
      if (hook != null) hook.report(entry.hit, null);
      return entry.hit;
    }
    return read(ReadTarget.current(promptId), GetOptions.NONE, entry != null && entry.target.kind == ReadTarget.Kind.CURRENT ? entry : null);
  }

  /** A frozen process thawed past its trust: read the epoch (bounded) before serving from memory. */
  private void checkEpochFirst() {
    try {
      l2.checkEpoch();
    } catch (RuntimeException e) {
      counters.count(Counters.L2_ERRORS);
    }
  }

  /** Any target, from a fresh copy in memory when there is one. */
  Prompt get(ReadTarget target, GetOptions get) {
    if (target.kind != ReadTarget.Kind.VERSION) {
      long trusted = client.epochTrustedUntil;
      if (client.hitNow(trusted) > trusted) checkEpochFirst();
    }
    Entry entry = l1.get(target.cacheKey);
    if (entry != null && entry.target.kind != target.kind) entry = null; // an id like '#3#x' never meets a pinned entry
    if (entry != null && !entry.invalidated && entry.expiresAt > client.hitNow(entry.expiresAt)) {
      l1.touch(entry);
      counters.count(Counters.HITS);
      Prompt served = rollouts.serve(entry, get.stickinessKey, "hit");
      if (hook != null) hook.report(served, target.version);
      return served;
    }
    return read(target, get, entry);
  }

  /** Everything but a fresh hit, for any target. {@code cached} is the expired copy of this key, if any. */
  private Prompt read(ReadTarget target, GetOptions get, Entry cached) {
    Prompt served;
    try {
      served = miss(target, get, cached);
    } catch (PromptStoreException e) {
      if (get.fallback == null) throw e;
      counters.count(Counters.FALLBACK_SERVES);
      served = get.fallback.servedFor(target, client.clock);
    }
    if (hook != null) hook.report(served, target.version);
    return served;
  }

  private Prompt miss(ReadTarget target, GetOptions get, Entry cached) {
    long now = client.now();
    if (cached != null && ((!cached.invalidated && now < cached.expiresAt + options.staleWhileRevalidateMs)
        || (cached.failing && now < cached.expiresAt + options.staleIfErrorMs))) {
      counters.count(Counters.STALE_SERVES);
      BACKGROUND.execute(() -> {
        try {
          load(target);
        } catch (RuntimeException ignored) {
          // counted where it happened; the stale copy keeps being served within its bounds
        }
      });
      return rollouts.serve(cached, get.stickinessKey, "stale");
    }
    String problem = target.problem();
    if (problem != null) throw target.notFound(problem);
    L1Cache.NotFoundMark mark = l1.notFound(target.cacheKey);
    if (mark != null && now < mark.until) {
      counters.count(Counters.NEGATIVE_HITS);
      throw target.notFound(mark.reason);
    }
    counters.count(Counters.MISSES);
    try {
      return rollouts.serve(load(target), get.stickinessKey, "loaded");
    } catch (PromptStoreException e) {
      if (cached != null && client.now() < cached.expiresAt + options.staleIfErrorMs) {
        counters.count(Counters.STALE_SERVES);
        return rollouts.serve(cached, get.stickinessKey, "stale");
      }
      throw e;
    }
  }

  /** A cached read of an exact version (a rollout's candidate), as served: its loaded or l1 copy. */
  Prompt pinned(ReadTarget target) {
    Entry entry = l1.fresh(target, client.now());
    if (entry != null) return entry.hit;
    String problem = target.problem();
    if (problem != null) throw target.notFound(problem);
    return load(target).loaded;
  }

  /** The load of {@code target} under way (joined), or a new one made by this thread. One per key across threads. */
  Entry load(ReadTarget target) {
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
      Entry held = l1.fresh(target, client.now());
      if (held != null) {
        mine.complete(held);
        return held;
      }
      Entry entry = fetch(target);
      mine.complete(entry);
      return entry;
    } catch (RuntimeException e) {
      mine.completeExceptionally(e);
      if (e instanceof PromptStoreException) {
        Entry held = l1.get(target.cacheKey);
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
        counters.count(Counters.L2_ERRORS); // an L2 value that breaks the contract: read the table
        long fetchedAt = client.now();
        Map<String, Object> item = store.getItem(target.promptId, target.sortKey);
        l2.fill(target.promptId, target.sortKey, item, fetchedAt);
        loaded = new Loaded(item, "table", fetchedAt);
      }
    }
    return accept(target, loaded);
  }

  /** One remote read of the target's item: the L2 first when there is one, then the table (filling the L2). */
  private Loaded readRemote(ReadTarget target) {
    if (l2 != null) {
      Loaded shared = l2.read(target.promptId, target.sortKey);
      if (shared != null) return shared;
    }
    long fetchedAt = client.now();
    Map<String, Object> item = store.getItem(target.promptId, target.sortKey);
    if (l2 != null) l2.fill(target.promptId, target.sortKey, item, fetchedAt);
    return new Loaded(item, "table", fetchedAt);
  }

  private Entry rejected(ReadTarget target) {
    counters.count(Counters.CATALOG_REJECTIONS);
    l1.remove(target.cacheKey);
    throw target.notFound("not in the catalog");
  }

  /** Remembers a loaded item; throws not-found for none or a tombstone, PromptStoreException for a broken item. */
  private Entry accept(ReadTarget target, Loaded loaded) {
    if (loaded.item == null || Prompt.isDeleted(loaded.item)) {
      l1.remove(target.cacheKey);
      String reason = loaded.item == null ? target.missingReason() : target.kind == ReadTarget.Kind.LABEL ? target.missingReason() : "deleted";
      l1.markNotFound(target.cacheKey, client.now() + options.notFoundMaxAgeMs, target.missingReason());
      throw target.notFound(reason);
    }
    Provenance provenance = new Provenance(loaded.source.equals("table") ? "table" : "l2", false, loaded.fetchedAt, client.clock);
    long expiresAt = target.expiresAt(loaded.fetchedAt, options.maxAgeMs);
    Entry entry;
    if (target.kind == ReadTarget.Kind.LABEL) {
      Prompt prompt = LabelItems.promptFromLabelItem(loaded.item, target.label, provenance);
      entry = new Entry(target, prompt, expiresAt, Rollout.of(loaded.item, target.label, prompt));
      rollouts.afterLabelRead(entry);
    } else {
      entry = new Entry(target, Prompt.fromItem(loaded.item, 1, provenance), expiresAt, null);
    }
    l1.remember(entry);
    return entry;
  }
}
