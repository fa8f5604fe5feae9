package io.github.cdkpromptserving.runtime;

/**
 * A shared second cache tier (Valkey/Redis) in front of the table. The client builds its own from the environment when
 * {@code PROMPT_SERVING_CACHE_ENDPOINT} is set (Jedis, loaded only then); tests and custom setups pass one to the builder.
 * Calls are bounded by {@code l2TimeoutMs}; any failure makes the read go to the table.
 */
public interface PromptCacheL2 extends AutoCloseable {
  /** The value under {@code key}, or null. */
  String get(String key);

  /** Stores {@code value} under {@code key} for {@code ttlSeconds}. */
  void set(String key, String value, int ttlSeconds);

  /** Whether the table's stream writes values through (the client then watches the freshness epoch). */
  default boolean writeThrough() {
    return false;
  }

  @Override
  default void close() {}
}
