import { epochIncarnation } from '../schema/l2';

/**
 * Watches the table's freshness epoch in the L2 (`…/<table>/#epoch`, `<counter> <incarnation>`, moved by the
 * invalidation function after each batch it wrote through): one small `GET` per interval per process, whatever
 * the number of prompts. When it moves, the client re-validates its in-process copies against the L2 (no table
 * read). The incarnation it names is the only one whose stream values the client uses.
 */
export class EpochWatcher {
  /** The table incarnation of the last epoch read; `undefined` before one, or when the epoch is absent or garbage. */
  incarnation: string | undefined;
  /** The first check (settled, never rejects). */
  private first: Promise<void> | undefined;
  /** The last value seen; `undefined` before the first successful read. */
  private seen: string | null | undefined;
  /** A read failed before the first success: copies loaded meanwhile are re-validated then. */
  private missedSome = false;
  private checking: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the last check finished (epoch ms). */
  private checkedAt = Date.now();

  /**
   * @param onChecked told, after every check, until when copies may be served without one more (two intervals
   *   later): the client keeps that timestamp, so its hot path compares one number instead of calling in here.
   *   Past it, no check ran for two intervals: the process was frozen (a Lambda between invocations), so a change
   *   may have been missed, and the next read waits for one check.
   */
  constructor(
    private readonly read: () => Promise<string | null | undefined>,
    private readonly intervalMs: number,
    private readonly onMove: () => Promise<void>,
    private readonly onChecked: (trustedUntil: number) => void = () => undefined,
  ) {
    this.onChecked(this.checkedAt + 2 * intervalMs);
  }

  start(): void {
    this.first = this.check();
    this.timer = setInterval(() => void this.check(), this.intervalMs);
    this.timer.unref(); // never keeps a process alive
  }

  /** Resolves once the first check finished. */
  ready(): Promise<void> {
    return this.first ?? Promise.resolve();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Reads the epoch now (one check at a time); re-validates when it moved. Never rejects. */
  check(): Promise<void> {
    this.checking ??= this.run().finally(() => {
      this.checking = undefined;
      this.checkedAt = Date.now();
      this.onChecked(this.checkedAt + 2 * this.intervalMs);
    });
    return this.checking;
  }

  private async run(): Promise<void> {
    let value: string | null | undefined;
    try {
      value = (await this.read()) ?? null;
    } catch {
      this.missedSome = true;
      return; // an unreachable L2: copies keep their own expiry
    }
    this.incarnation = epochIncarnation(value);
    const moved = this.seen === undefined ? this.missedSome : value !== this.seen;
    if (moved) {
      try {
        await this.onMove();
      } catch {
        return; // keep the old value: the next check re-validates again
      }
    }
    this.seen = value;
    this.missedSome = false;
  }
}
