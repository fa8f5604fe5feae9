package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Ready-made {@link OnRead} hooks (src/runtime/provenance.ts): a structured log line per read, CloudWatch EMF counts
 * per tier, OpenTelemetry span attributes, and several hooks as one. Lines go to stdout unless a writer is given.
 */
public final class ReadHooks {
  private ReadHooks() {}

  private static final Consumer<String> STDOUT = System.out::println;

  /** Calls each hook in turn (null ones skipped). */
  public static OnRead combineReadHooks(OnRead... hooks) {
    List<OnRead> set = new ArrayList<>();
    for (OnRead h : hooks) if (h != null) set.add(h);
    return (info, client) -> {
      for (OnRead h : set) h.onRead(info, client);
    };
  }

  /** One JSON line per read: {@code {"level":"INFO","message":"prompt read","promptId",…}}. */
  public static OnRead logReads() {
    return logReads(STDOUT, "INFO");
  }

  public static OnRead logReads(Consumer<String> write, String level) {
    return (info, client) -> write.accept(logLine(info, level));
  }

  static String logLine(ReadInfo info, String level) {
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("level", level);
    line.put("message", "prompt read");
    line.put("promptId", info.promptId);
    line.put("version", (double) info.version);
    line.put("source", info.source);
    line.put("stale", info.stale);
    line.put("ageSeconds", Math.round(info.ageSeconds * 1000) / 1000.0);
    line.put("checksum", info.checksum);
    if (info.requestedVersion != null) line.put("requestedVersion", (double) info.requestedVersion);
    if (info.label != null) line.put("label", info.label);
    if (info.rolloutId != null) {
      line.put("rolloutId", info.rolloutId);
      line.put("arm", info.arm);
    }
    return Json.stringify(line);
  }

  /** The OpenTelemetry attributes of one read ({@code gen_ai.prompt.name}, …); null fields unset. */
  public static Map<String, Object> otelAttributes(ReadInfo info) {
    Map<String, Object> a = new LinkedHashMap<>();
    a.put("gen_ai.prompt.name", info.promptId);
    a.put("gen_ai.prompt.version", info.version);
    a.put("prompt.source", info.source);
    a.put("prompt.stale", info.stale);
    a.put("prompt.age_seconds", info.ageSeconds);
    if (info.label != null) a.put("prompt.label", info.label);
    if (info.rolloutId != null) a.put("prompt.rollout.id", info.rolloutId);
    if (info.arm != null) a.put("prompt.rollout.arm", info.arm);
    return a;
  }

  /**
   * Sets {@link #otelAttributes} on the current span through {@code setAttributes} (this library carries no OpenTelemetry
   * dependency: pass {@code attrs -> attrs.forEach((k, v) -> Span.current().setAttribute(k, String.valueOf(v)))} or similar).
   */
  public static OnRead otelReadAttributes(Consumer<Map<String, Object>> setAttributes) {
    return (info, client) -> setAttributes.accept(otelAttributes(info));
  }

  /** EMF counts per tier, one line per table per flush interval (a fallback serve is written at once). */
  public static final class EmfReadMetrics {
    private final long intervalMs;
    private final Consumer<String> write;
    private final String namespace;
    private final String tableNameOverride;
    private final Map<String, long[]> counts = new LinkedHashMap<>(); // reads l1 l2 table fallback stale
    private final Map<String, Map<PromptClient, long[]>> clients = new LinkedHashMap<>();
    private final Map<PromptClient, String> clientTables = new IdentityHashMap<>();
    private long lastFlush = System.currentTimeMillis();

    EmfReadMetrics(double flushIntervalSeconds, String tableName, String namespace, Consumer<String> write) {
      this.intervalMs = Math.round(flushIntervalSeconds * 1000);
      this.tableNameOverride = tableName;
      this.namespace = namespace == null ? "CdkPromptServing" : namespace;
      this.write = write == null ? STDOUT : write;
    }

    public final OnRead onRead = this::record;

    private synchronized void record(ReadInfo info, PromptClient from) {
      String table = clientTables.get(from);
      if (table == null) {
        table = tableNameOverride != null ? tableNameOverride : info.tableName;
        clientTables.put(from, table);
        clients.computeIfAbsent(table, t -> new IdentityHashMap<>()).put(from, new long[2]);
      }
      long[] c = counts.computeIfAbsent(table, t -> new long[6]);
      c[0]++;
      switch (info.source) {
        case "l1": c[1]++; break;
        case "l2": c[2]++; break;
        case "table": c[3]++; break;
        default: c[4]++;
      }
      if (info.stale && !"fallback".equals(info.source)) c[5]++;
      if ("fallback".equals(info.source) || System.currentTimeMillis() - lastFlush >= intervalMs) flush();
    }

    /** Writes the counts since the last flush. */
    public synchronized void flush() {
      lastFlush = System.currentTimeMillis();
      for (Map.Entry<String, Map<PromptClient, long[]>> t : clients.entrySet()) {
        long tableReads = 0;
        long l2Errors = 0;
        for (Map.Entry<PromptClient, long[]> e : t.getValue().entrySet()) {
          PromptClientStats s = e.getKey() == null ? null : e.getKey().stats();
          if (s == null) continue;
          tableReads += s.storeReads - e.getValue()[0];
          l2Errors += s.l2Errors - e.getValue()[1];
          e.getValue()[0] = s.storeReads;
          e.getValue()[1] = s.l2Errors;
        }
        long[] c = counts.getOrDefault(t.getKey(), new long[6]);
        if (c[0] == 0 && tableReads == 0 && l2Errors == 0) continue;
        counts.put(t.getKey(), new long[6]);
        write.accept(line(t.getKey(), c, tableReads, l2Errors, lastFlush));
      }
    }

    String line(String table, long[] c, long tableReads, long l2Errors, long timestamp) {
      Map<String, Object> values = new LinkedHashMap<>();
      values.put("ReaderServedL1", (double) c[1]);
      values.put("ReaderServedL2", (double) c[2]);
      values.put("ReaderServedTable", (double) c[3]);
      values.put("ReaderServedFallback", (double) c[4]);
      values.put("ReaderServedStale", (double) c[5]);
      values.put("ReaderTableReads", (double) tableReads);
      values.put("ReaderL2Errors", (double) l2Errors);
      List<Object> metrics = new ArrayList<>();
      for (String name : values.keySet()) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("Name", name);
        m.put("Unit", "Count");
        metrics.add(m);
      }
      Map<String, Object> directive = new LinkedHashMap<>();
      directive.put("Namespace", namespace);
      directive.put("Dimensions", List.of(List.of("TableName")));
      directive.put("Metrics", metrics);
      Map<String, Object> aws = new LinkedHashMap<>();
      aws.put("Timestamp", (double) timestamp);
      aws.put("CloudWatchMetrics", List.of(directive));
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("_aws", aws);
      out.put("TableName", table);
      out.putAll(values);
      return Json.stringify(out);
    }
  }

  /** EMF read metrics flushed every {@code flushIntervalSeconds} (default 60), namespace CdkPromptServing, to stdout. */
  public static EmfReadMetrics emfReadMetrics() {
    return new EmfReadMetrics(60, null, null, null);
  }

  public static EmfReadMetrics emfReadMetrics(double flushIntervalSeconds, String tableName, String namespace, Consumer<String> write) {
    return new EmfReadMetrics(flushIntervalSeconds, tableName, namespace, write);
  }
}
