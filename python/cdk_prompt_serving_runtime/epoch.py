"""Watches the table's freshness epoch in the L2 (``src/runtime/epoch.ts``): ``…/<table>/#epoch``,
``<counter> <incarnation>``, moved by the invalidation function after each batch it wrote through. One small ``GET``
per interval per process, whatever the number of prompts; when it moves, the client re-validates its in-process
copies against the L2 (no table read). The incarnation it names is the only one whose stream values the client uses.

Private to the client: an application never polls the epoch itself (the Node client does not expose it either).
Polls are started by reads (at most one per interval, on a short-lived daemon thread), not by a timer, so a process
frozen between Lambda invocations polls again at its first read after it thaws.

Thread safety: one poll at a time per watcher; ``poll`` may be called from any thread.
"""
import logging
import math
import threading
from typing import Any, Callable, Optional

from .l2 import PromptCacheL2
from .schema.l2 import epoch_incarnation
from .stats import Counters

logger = logging.getLogger(__name__)

_NEVER_POLLED = object()
"""The epoch before the first poll (an absent epoch key reads as ``None``, a value like any other)."""


class EpochWatcher:
    """``on_move`` re-validates the client's copies; it runs on the polling thread before ``poll`` returns."""

    def __init__(self, l2: Optional[PromptCacheL2], key: str, interval: float, clock: Callable[[], float],
                 counters: Counters, on_move: Callable[[], None]) -> None:
        self._l2 = l2
        self._key = key
        self._interval = interval
        self._clock = clock
        self._counters = counters
        self._on_move = on_move
        self._lock = threading.Lock()
        self._seen: Any = _NEVER_POLLED
        self._polling = False
        self.incarnation: Optional[str] = None
        """The table incarnation of the last epoch read; ``None`` before one, or when the epoch is absent or garbage."""
        self.due = 0.0 if l2 is not None else math.inf
        """When the next background poll is due (the clock's seconds); ``inf`` without an L2 or once stopped."""
        self.polls = 0
        """Epoch reads that completed (for tests and diagnostics; not part of ``stats()``)."""

    @property
    def polled(self) -> bool:
        """Whether the epoch was read at least once."""
        return self._seen is not _NEVER_POLLED

    def first_incarnation(self) -> Optional[str]:
        """The incarnation, after the first poll: a read that comes before any poll makes it (on its own thread), so
        it learns the incarnation before it trusts a stream value."""
        if self._seen is _NEVER_POLLED and self.due != math.inf:
            self.due = self._clock() + self._interval
            self.poll()
        return self.incarnation

    def tick(self, now: float) -> None:
        """At most one poll per interval, in the background."""
        with self._lock:
            if self._polling or now < self.due:
                return
            self._polling = True
            self.due = now + self._interval
        threading.Thread(target=self._poll_in_background, name="prompt-epoch", daemon=True).start()

    def stop(self) -> None:
        """No more polls (``PromptClient.close``)."""
        self.due = math.inf

    def _poll_in_background(self) -> None:
        try:
            self.poll()
        finally:
            self._polling = False

    def seed(self, raw: Any) -> None:
        """Takes an epoch value the client read itself at start-up as this watcher's first read, so the first
        ``get_prompt`` does not read it again before it asks for the item (one round trip fewer on a cold start). The
        next background poll is due an interval later. Ignored once the watcher has read the epoch itself."""
        with self._lock:
            if self._seen is not _NEVER_POLLED or self._l2 is None:
                return
            epoch = raw.decode() if isinstance(raw, bytes) else raw
            self.incarnation = epoch_incarnation(epoch)
            self._seen = epoch
            self.due = self._clock() + self._interval

    def poll(self) -> bool:
        """Reads the epoch now; when it moved since the last poll, runs ``on_move`` (then counts ``epoch_moves``).
        Returns whether it moved. Never raises: a failed read is counted in ``l2_errors``."""
        if self._l2 is None:
            return False
        try:
            raw: Any = self._l2.get(self._key)
            self.polls += 1
        except Exception as err:  # noqa: BLE001
            self._counters.l2_errors += 1
            logger.debug("L2 epoch read failed: %s", err)
            return False
        epoch = raw.decode() if isinstance(raw, bytes) else raw
        self.incarnation = epoch_incarnation(epoch)
        previous, self._seen = self._seen, epoch
        if previous is _NEVER_POLLED or epoch == previous:
            return False
        self._on_move()
        self._counters.epoch_moves += 1  # counted once every copy was re-validated, as the Node client does
        return True
