package io.github.cdkpromptserving.runtime;

import java.util.concurrent.locks.LockSupport;

/**
 * The wall clock as a cache hit reads it: a volatile field a daemon thread refreshes every {@link #TICK_MS} ms, so a hit
 * costs a field read instead of a clock read (about 130 ns on some virtual machines, more than the whole map lookup).
 *
 * <p>A hit may trust the field only while the ticker is known to be running ({@link #state}); otherwise it reads the
 * real clock. The ticker disarms itself when a tick saw no hit (so an idle process, the state Lambda freezes, holds
 * no trusted value: the first hit after a thaw reads the real clock and re-arms), when a tick comes late (the process
 * or the ticker was stalled), and it stops, disarmed, before a SnapStart snapshot ({@link #suspend}). A hit also reads
 * the real clock when its entry expires within {@link #GUARD_MS} of the field's value, which covers the field's lag
 * while the ticker runs. What remains: a freeze that begins within one tick of the last hit, followed after the thaw
 * by a hit that runs before the ticker's first tick, judges that hit with the time of the freeze.
 */
final class CoarseClock {
  static final long TICK_MS = 1;
  /** A tick later than this (since the previous one) disarms: the field may have lagged by that much. */
  static final long STALL_MS = 20;
  /** An entry expiring within this of the field's value is judged with the real clock. */
  static final long GUARD_MS = 50;

  static final CoarseClock SYSTEM = new CoarseClock();

  /** The wall clock in epoch ms, as of the last tick (or the last real read by a hit). */
  volatile long now = System.currentTimeMillis();
  /**
   * {@link #DISARMED}: a hit reads the real clock; {@link #ARMED}: a hit may judge freshness by {@link #now};
   * {@link #HIT}: armed, and a hit came since the last tick. The ticker turns HIT into ARMED and ARMED (a tick without
   * hits) into DISARMED. One field, so a hit makes one read of it and at most one write per tick.
   */
  volatile int state;
  static final int DISARMED = 0, ARMED = 1, HIT = 2;
  private Thread ticker;
  private boolean suspended;

  /** The time a hit judges {@code expiresAt} by: the field when armed and the entry is not near expiry, else the real clock. */
  long forHit(long deadline) {
    int s = state;
    long c = now;
    if (s == DISARMED || deadline - c <= GUARD_MS) return real();
    if (s == ARMED) state = HIT;
    return c;
  }

  /** Reads the real clock; re-arms (starting the ticker if need be) unless suspended for a snapshot. */
  long real() {
    long t = System.currentTimeMillis();
    now = t;
    if (state != HIT) arm();
    return t;
  }

  private synchronized void arm() {
    if (suspended) return;
    if (ticker == null) {
      Thread t = new Thread(this::run, "prompt-serving-clock");
      t.setDaemon(true);
      ticker = t;
      t.start();
    }
    state = HIT;
    LockSupport.unpark(ticker); // a disarmed ticker sleeps until a hit arms it again
  }

  private void run() {
    long last = System.currentTimeMillis();
    while (true) {
      LockSupport.parkNanos(TICK_MS * 1_000_000L);
      long t = System.currentTimeMillis();
      boolean idle;
      synchronized (this) {
        if (ticker != Thread.currentThread()) return; // suspended: never re-arm after suspend() disarmed
        now = t;
        // a race with a hit can only disarm (the safe side): the hit's next read re-arms
        state = state == HIT && t - last <= STALL_MS ? ARMED : DISARMED;
        idle = state == DISARMED;
      }
      // disarmed: no wake-ups until a hit arms the clock again (arm() unparks; a permit given before this park is kept)
      if (idle) LockSupport.park(this);
      last = System.currentTimeMillis();
    }
  }

  /** Before a snapshot: stop the ticker, disarmed (a restored process reads the real clock until a hit re-arms it). */
  synchronized void suspend() {
    suspended = true;
    state = DISARMED;
    Thread t = ticker;
    ticker = null;
    if (t != null) LockSupport.unpark(t);
  }

  /** After a restore: hits may re-arm (and restart the ticker) again. */
  synchronized void resume() {
    suspended = false;
    state = DISARMED;
  }

  /** Whether the ticker thread is running (tests). */
  synchronized boolean ticking() {
    return ticker != null && ticker.isAlive();
  }
}
