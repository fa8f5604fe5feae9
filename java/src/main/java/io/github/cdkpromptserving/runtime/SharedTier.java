package io.github.cdkpromptserving.runtime;

import java.util.Map;

/** The L2 tier as the read path uses it: keys and value formats of src/schema/l2.ts, every failure a table read. */
final class SharedTier {
  private final PromptCacheL2 cache;
  private final boolean owned;
  private final PromptClient client;

  SharedTier(PromptCacheL2 cache, boolean owned, PromptClient client) {
    this.cache = cache;
    this.owned = owned;
    this.client = client;
  }

  /** The item under the shared key (null: go to the table). */
  PromptClient.Loaded read(String promptId, String sortKey) {
    return null;
  }

  /** Stores what the table answered, for the other processes. */
  void fill(String promptId, String sortKey, Map<String, Object> item, long fetchedAt) {}

  void close() {
    if (owned) cache.close();
  }
}
