/**
 * Read deadlines: one read's budget (`requestTimeoutMs`, retries and backoff included), shared by the reads made
 * together, and the abort signal each request to the SDK is given under it. Used by the table reader (./store.ts).
 */

/**
 * Why a read's deadline aborted it: one value for every deadline (an abort without a reason, as
 * `AbortSignal.timeout` does, builds a `DOMException` each time, and every deadline fires).
 */
export const TIMED_OUT = new DOMException('The read did not finish within requestTimeoutMs', 'TimeoutError');
/** Deadlines made within this long of each other expire together, and groups due within it are expired by one timer. */
const DEADLINE_GRANULARITY_MS = 5;

/**
 * What the SDK is given to abort one request when its deadline passes: the smallest object its HTTP handler and retry
 * race accept (`aborted`, `reason`, `abort` listeners). A Node `AbortSignal` per request costs a miss about 25 µs of
 * CPU in the SDK (`EventTarget` listeners in its retry race and HTTP handler; bench/reader-cost.bench.ts).
 */
class RequestSignal {
  aborted = false;
  reason: unknown;
  private listeners: ((event: { type: 'abort' }) => void)[] = [];

  addEventListener(type: string, listener: (event: { type: 'abort' }) => void): void {
    if (type === 'abort') this.listeners.push(listener);
  }

  removeEventListener(_type: string, listener: (event: { type: 'abort' }) => void): void {
    this.listeners = this.listeners.filter((l) => l !== listener);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    for (const listener of this.listeners.splice(0)) {
      try {
        listener.call(this, { type: 'abort' });
      } catch {
        // one listener's failure must not keep the others from aborting their request
      }
    }
  }
}

/** Deadlines made together: when they expire, and the requests sent under them. */
interface DeadlineGroup {
  readonly madeAt: number;
  readonly at: number;
  expired: boolean;
  /** The requests sent, and the backoffs waited, under it: aborted when it expires. */
  requests: RequestSignal[];
}

/**
 * One read's budget: `requestTimeoutMs` from when it was made, retries and backoff included. Reads asked for in the
 * same tick under the same `Deadline` go out together (a cold read's pointer and `#catalog`: one `BatchGetItem`).
 * Deadlines made within {@link DEADLINE_GRANULARITY_MS} of each other expire together.
 */
export class Deadline {
  private declare readonly group: DeadlineGroup;

  constructor(group: DeadlineGroup) {
    this.group = group;
  }

  get expired(): boolean {
    return this.group.expired;
  }

  /** A signal for one request (one attempt) sent to the SDK under this deadline. */
  requestSignal(): AbortSignal {
    const signal = new RequestSignal();
    if (this.group.expired) signal.abort(TIMED_OUT);
    else this.group.requests.push(signal);
    return signal as unknown as AbortSignal;
  }

  /**
   * Waits `ms` (a retry's backoff); rejects with the deadline's reason as soon as it expires. Through the group's
   * own abort list, as a request: no Node `AbortController` (and its listener limit) per backoff.
   */
  wait(ms: number): Promise<void> {
    const signal = this.requestSignal();
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(TIMED_OUT);
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(TIMED_OUT);
      });
    });
  }
}

/**
 * Read deadlines, all of one duration, so they expire in the order they were made. Deadlines made within
 * {@link DEADLINE_GRANULARITY_MS} of each other form one group, and every group shares one timer, instead of an `AbortSignal.timeout` per read (a timer, a weak reference and an exception per read). So a
 * read gets between `durationMs` and `durationMs` plus twice the granularity. Measured with `performance.now()`,
 * which a test faking `Date` leaves alone.
 */
export class Deadlines {
  private queue: DeadlineGroup[] = [];
  private head = 0;
  private declare timer: NodeJS.Timeout | undefined;
  private declare readonly durationMs: number;

  constructor(durationMs: number) {
    this.durationMs = durationMs;
  }

  next(): Deadline {
    const now = performance.now();
    // The newest group, unless it was made too long ago (an expired one has left the queue).
    let last = this.queue.length > this.head ? this.queue[this.queue.length - 1] : undefined;
    if (last === undefined || now - last.madeAt > DEADLINE_GRANULARITY_MS) {
      last = { madeAt: now, at: now + this.durationMs + DEADLINE_GRANULARITY_MS, expired: false, requests: [] };
      this.queue.push(last);
      if (this.timer === undefined) this.arm(last.at - now);
    }
    return new Deadline(last);
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(() => this.expire(), delayMs);
    this.timer.unref(); // never keeps a process alive, as AbortSignal.timeout does not
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    const queue = this.queue;
    while (this.head < queue.length && queue[this.head].at <= now) {
      const group = queue[this.head++];
      group.expired = true;
      const requests = group.requests;
      group.requests = [];
      for (const request of requests) request.abort(TIMED_OUT);
    }
    if (this.head === queue.length) {
      this.queue = [];
      this.head = 0;
      return;
    }
    if (this.head > 1024) {
      this.queue = queue.slice(this.head);
      this.head = 0;
    }
    this.arm(Math.max(this.queue[this.head].at - now, DEADLINE_GRANULARITY_MS));
  }
}
