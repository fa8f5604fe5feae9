package io.github.cdkpromptserving.runtime;

import java.util.Map;

/**
 * Calls the user's {@link OnRead} after every read (src/runtime/hook.ts); a hook that throws never fails the read
 * (reported once on stderr). Ready-made hooks are in {@link ReadHooks}.
 */
final class Hook {
  private final OnRead onRead;
  private final String tableName;
  private final PromptClient client;
  private volatile boolean failed;

  Hook(OnRead onRead, String tableName, PromptClient client) {
    this.onRead = onRead;
    this.tableName = tableName;
    this.client = client;
  }

  void report(Prompt prompt, Integer requestedVersion) {
    try {
      onRead.onRead(new ReadInfo(tableName, prompt, requestedVersion), client);
    } catch (RuntimeException e) {
      if (failed) return;
      failed = true;
      Map<String, Object> line = new java.util.LinkedHashMap<>();
      line.put("level", "WARN");
      line.put("message", "cdk-prompt-serving: the onRead hook threw (reads are served regardless; reported once): " + e.getMessage());
      System.err.println(Json.stringify(line));
    }
  }
}
