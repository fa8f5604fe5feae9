package io.github.cdkpromptserving.runtime;

import java.util.Map;

/**
 * Builds the L2 from {@code PROMPT_SERVING_CACHE_*} (null without an endpoint). Jedis is loaded only here, by name, so
 * a reader without the cache (or without Jedis on its class path) never loads it: without Jedis the reads go to the
 * table, counted in {@code l2Unavailable} and said once on stderr.
 */
final class L2FromEnvironment {
  private L2FromEnvironment() {}

  /**
   * The L2 of a new client: the one given, else the environment's (none when told so, or when the client is given
   * another table than the environment's: the environment's cache serves the environment's table).
   */
  static SharedTier forClient(PromptClient client, PromptCacheL2 given, boolean none, String tableName, Map<String, String> env) {
    PromptCacheL2 cache = given;
    boolean owns = false;
    String envTable = env.get(ResolvedOptions.TABLE_NAME_VARIABLE);
    boolean envNamesAnotherTable = tableName != null && envTable != null && !envTable.isEmpty() && !envTable.equals(tableName);
    if (cache == null && !none && !envNamesAnotherTable) {
      cache = create(env, client.options, client);
      owns = cache != null;
    }
    return cache == null ? null : new SharedTier(cache, owns, client);
  }

  static PromptCacheL2 create(Map<String, String> env, ResolvedOptions options, PromptClient client) {
    String endpoint = env.get("PROMPT_SERVING_CACHE_ENDPOINT");
    if (endpoint == null || endpoint.trim().isEmpty()) return null;
    try {
      Class.forName("redis.clients.jedis.UnifiedJedis", false, L2FromEnvironment.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      client.counters.count(Counters.L2_UNAVAILABLE);
      Map<String, Object> line = new java.util.LinkedHashMap<>();
      line.put("level", "WARN");
      line.put("message", "cdk-prompt-serving: PROMPT_SERVING_CACHE_ENDPOINT is set but Jedis (redis.clients:jedis) is not on the class path: "
          + "add it to the function's jar to use the cache; reads go to the table");
      line.put("table", options.tableName);
      System.err.println(Json.stringify(line));
      return null;
    }
    return JedisL2.fromEnvironment(env, options);
  }
}
