package io.github.cdkpromptserving.runtime;

/** Where a served copy came from ({@code l1}, {@code l2}, {@code table}, {@code fallback}), whether stale, and how old. */
public final class Provenance {
  private final String source;
  private final boolean stale;
  private final long readAt;
  private final java.util.function.LongSupplier clock;

  Provenance(String source, boolean stale, long readAt) {
    this(source, stale, readAt, System::currentTimeMillis);
  }

  Provenance(String source, boolean stale, long readAt, java.util.function.LongSupplier clock) {
    this.source = source;
    this.stale = stale;
    this.readAt = readAt;
    this.clock = clock;
  }

  Provenance with(String source, boolean stale) {
    return new Provenance(source, stale, readAt, clock);
  }

  public String getSource() {
    return source;
  }

  public boolean isStale() {
    return stale;
  }

  /** When the copy was read from the L2 or the table (epoch milliseconds). */
  public long getReadAt() {
    return readAt;
  }

  /** Seconds since {@link #getReadAt()}, at least 0. */
  public double getAgeSeconds() {
    return Math.max(0, (clock.getAsLong() - readAt) / 1000.0);
  }

  @Override
  public String toString() {
    return "Provenance{source=" + source + ", stale=" + stale + ", readAt=" + readAt + "}";
  }
}
