package io.github.cdkpromptserving.runtime;

import java.util.Map;

/**
 * The Bloom catalog (src/runtime/catalog.ts), read from the table (or the L2) and re-read after
 * {@code catalogMaxAgeSeconds}: it rules out CURRENT and exact-version reads of unknown ids without a remote call. An
 * unreadable catalog never rejects an id.
 */
final class Catalog {
  private final PromptClient client;
  private volatile byte[] bytes;
  private volatile long bits;
  private volatile int hashes;
  private volatile long readAt = -1;
  /** The filter came from an L2 fill: it may predate the table's, so it never rules an id out alone. */
  private volatile boolean fromFill;

  Catalog(PromptClient client) {
    this.client = client;
  }

  private boolean admits(String id) {
    byte[] b = bytes;
    return b == null || Schema.bloomMightContain(b, bits, hashes, id);
  }

  /** The verdict without a remote call, or null when the catalog must be read first. */
  Boolean verdictNow(String id) {
    long at = readAt;
    if (at < 0) return null;
    boolean fresh = client.now() - at < client.options.catalogMaxAgeMs;
    if (!admits(id)) return fresh && !fromFill ? Boolean.FALSE : null;
    if (!fresh) ReadPath.BACKGROUND.execute(this::refresh);
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
        item = client.store.getItem(Schema.CATALOG_ID, Schema.CURRENT);
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
      client.counters.count(Counters.CATALOG_LOADS);
    } catch (RuntimeException e) {
      // keep the filter we have (or none): an unreadable catalog never rejects an id
    }
    readAt = client.now();
  }
}
