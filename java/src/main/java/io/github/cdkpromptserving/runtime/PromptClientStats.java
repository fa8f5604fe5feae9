package io.github.cdkpromptserving.runtime;

import java.util.LinkedHashMap;
import java.util.Map;

/** Counters since the client was created (fields in the order of surface.json's stats). */
public final class PromptClientStats {
  public final long hits;
  public final long misses;
  public final long staleServes;
  public final long negativeHits;
  public final long catalogRejections;
  public final long storeReads;
  public final long storeErrors;
  public final long retries;
  public final long catalogLoads;
  public final long l2Hits;
  public final long l2Misses;
  public final long l2Errors;
  public final long l2Unavailable;
  public final long fallbackServes;
  public final long epochMoves;
  public final long revalidations;
  public final long rolloutFaults;
  public final long evictions;
  public final long entries;

  PromptClientStats(long[] c, long evictions, long entries) {
    hits = c[0];
    misses = c[1];
    staleServes = c[2];
    negativeHits = c[3];
    catalogRejections = c[4];
    storeReads = c[5];
    storeErrors = c[6];
    retries = c[7];
    catalogLoads = c[8];
    l2Hits = c[9];
    l2Misses = c[10];
    l2Errors = c[11];
    l2Unavailable = c[12];
    fallbackServes = c[13];
    epochMoves = c[14];
    revalidations = c[15];
    rolloutFaults = c[16];
    this.evictions = evictions;
    this.entries = entries;
  }

  /** The counters by name, in order (for a structured log line). */
  public Map<String, Long> toMap() {
    Map<String, Long> m = new LinkedHashMap<>();
    for (java.lang.reflect.Field f : PromptClientStats.class.getFields()) {
      try {
        m.put(f.getName(), f.getLong(this));
      } catch (IllegalAccessException e) {
        throw new IllegalStateException(e);
      }
    }
    return m;
  }

  @Override
  public String toString() {
    return toMap().toString();
  }
}
