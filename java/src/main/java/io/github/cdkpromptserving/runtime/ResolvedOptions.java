package io.github.cdkpromptserving.runtime;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Option resolution (options.json): an explicit option, then its {@code PROMPT_SERVING_*} variable (read as JavaScript's
 * {@code Number()} reads text), then the default. Times in milliseconds.
 */
public final class ResolvedOptions {
  /** Defaults, as the Node and Python clients have them. */
  public static final Map<String, Double> DEFAULTS = new LinkedHashMap<>();
  /** The environment variable of each option. */
  public static final Map<String, String> ENV_VARS = new LinkedHashMap<>();
  public static final long MAX_TIMER_MS = 2147483647L;
  public static final String TABLE_NAME_VARIABLE = "PROMPT_SERVING_TABLE_NAME";

  static {
    def("maxAgeSeconds", 60, "PROMPT_SERVING_MAX_AGE_SECONDS");
    def("maxEntries", 1000, "PROMPT_SERVING_MAX_ENTRIES");
    def("notFoundMaxAgeSeconds", 10, "PROMPT_SERVING_NOT_FOUND_MAX_AGE_SECONDS");
    def("staleWhileRevalidateSeconds", 60, "PROMPT_SERVING_STALE_WHILE_REVALIDATE_SECONDS");
    def("staleIfErrorSeconds", 3600, "PROMPT_SERVING_STALE_IF_ERROR_SECONDS");
    def("catalogMaxAgeSeconds", 60, "PROMPT_SERVING_CATALOG_MAX_AGE_SECONDS");
    def("requestTimeoutMs", 2000, "PROMPT_SERVING_REQUEST_TIMEOUT_MS");
    def("maxAttempts", 3, "PROMPT_SERVING_MAX_ATTEMPTS");
    def("l2TimeoutMs", 100, "PROMPT_SERVING_L2_TIMEOUT_MS");
    def("l2ConnectTimeoutMs", 1000, "PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS");
    def("epochPollIntervalMs", 500, "PROMPT_SERVING_EPOCH_POLL_INTERVAL_MS");
  }

  private static void def(String name, double value, String variable) {
    DEFAULTS.put(name, value);
    ENV_VARS.put(name, variable);
  }

  public final String tableName;
  public final long maxAgeMs;
  public final int maxEntries;
  public final long notFoundMaxAgeMs;
  public final long staleWhileRevalidateMs;
  public final long staleIfErrorMs;
  public final long catalogMaxAgeMs;
  public final long requestTimeoutMs;
  public final int maxAttempts;
  public final long l2TimeoutMs;
  public final long l2ConnectTimeoutMs;
  public final long epochPollIntervalMs;

  private final Map<String, Double> options;
  private final Map<String, String> env;

  /**
   * @param options explicit options by their camelCase name (null or absent: not given)
   * @param env the environment
   * @throws PromptServingException naming the option or the variable and its value
   */
  public static ResolvedOptions resolve(String tableName, Map<String, Double> options, Map<String, String> env) {
    return new ResolvedOptions(tableName, options, env);
  }

  private ResolvedOptions(String tableName, Map<String, Double> options, Map<String, String> env) {
    this.options = options;
    this.env = env;
    String table = tableName != null ? tableName : env.get(TABLE_NAME_VARIABLE);
    if (table == null || table.isEmpty()) {
      throw new PromptServingException("no table name: pass `tableName` or set the " + TABLE_NAME_VARIABLE
          + " environment variable (the construct sets it)");
    }
    this.tableName = table;
    maxAgeMs = seconds("maxAgeSeconds");
    maxEntries = (int) Math.floor(number("maxEntries", 1, 9007199254740991.0));
    notFoundMaxAgeMs = seconds("notFoundMaxAgeSeconds");
    staleWhileRevalidateMs = seconds("staleWhileRevalidateSeconds");
    staleIfErrorMs = seconds("staleIfErrorSeconds");
    catalogMaxAgeMs = seconds("catalogMaxAgeSeconds");
    requestTimeoutMs = (long) number("requestTimeoutMs", 1, MAX_TIMER_MS);
    maxAttempts = (int) Math.floor(number("maxAttempts", 1, 9007199254740991.0));
    l2TimeoutMs = (long) number("l2TimeoutMs", 1, MAX_TIMER_MS);
    l2ConnectTimeoutMs = (long) number("l2ConnectTimeoutMs", 1, MAX_TIMER_MS);
    epochPollIntervalMs = (long) number("epochPollIntervalMs", 10, MAX_TIMER_MS);
  }

  private long seconds(String name) {
    return Math.round(number(name, 0, 9007199254740991.0) * 1000);
  }

  private double number(String name, double min, double max) {
    String raw = env.get(ENV_VARS.get(name));
    Double fromEnv = raw == null || Json.trimJs(raw).isEmpty() ? null : Json.jsNumber(raw);
    Double given = options.get(name);
    double value = given != null ? given : fromEnv != null ? fromEnv : DEFAULTS.get(name);
    if (!Double.isFinite(value) || value < min || value > max) {
      String where = given != null ? "`" + name + "`" : ENV_VARS.get(name) + "=" + Json.stringify(raw);
      String range = max == 9007199254740991.0 ? "of at least " + Json.numberToString(min)
          : "from " + Json.numberToString(min) + " to " + Json.numberToString(max);
      throw new PromptServingException(where + " must be a number " + range + ", got " + Json.numberToString(value));
    }
    return value;
  }
}
