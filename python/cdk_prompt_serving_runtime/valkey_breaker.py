"""The Valkey adapter's breaker (:class:`~cdk_prompt_serving_runtime.valkey.ValkeyL2`; the Node client's in
``src/runtime/valkey.ts``).

After a call fails to reach the cache (refused, closed, timed out), every call fails at once (no socket timeout
waited) while one background probe per adapter (a daemon thread) looks for the cache every 0.2 to 0.6 s: a ``PING``
within ``timeout_ms`` on a fresh connection (the failed one was closed). Calls resume as soon as a probe is answered,
so a cache that comes back serves again within about half a second, and a cache that is down costs a reader one
timeout, then nothing but a counter. A refused login (an ACL user deleted, a bad token) is probed on a growing,
jittered pause instead (1 s doubling to 10 s, times 1 to 1.25): at most one connection attempt per second.

Thread safety: any number of threads; the state is changed under a lock, ``tripped`` is read without it.
"""
import logging
import random
import threading
import time
from typing import Callable

logger = logging.getLogger(__name__)

PAUSE_MIN_SECONDS = 1.0
PAUSE_MAX_SECONDS = 10.0
PROBE_INTERVAL_SECONDS = 0.4
"""The breaker's probe runs this long after the previous one, times a jitter of 0.5 to 1.5."""


class L2UnavailableError(Exception):
    """The adapter's breaker is open after a failure (a probe is looking for the cache); the read goes to the table."""


class Breaker:
    """Open after a failure until ``ping`` answers; one probe thread at a time.

    :param ping: one ``PING`` of the cache on a fresh connection, bounded by the adapter's call timeout; raises when
        the cache does not answer
    :param refused: whether an error is a refused login (probed on the growing pause)
    """

    def __init__(self, ping: Callable[[], object], refused: Callable[[BaseException], bool]) -> None:
        self._ping = ping
        self._refused = refused
        self._lock = threading.Lock()
        self._pause = 0.0
        self._probing = False
        self._closed = False
        self.tripped = False
        """Whether the breaker is open: calls fail at once while a background probe looks for the cache."""
        self.probes = 0
        """Probes run so far (tests, diagnostics)."""

    def trip(self, err: BaseException) -> None:
        """Opens the breaker and starts its probe (one per adapter)."""
        with self._lock:
            self.tripped = True
            if self._probing or self._closed:
                return
            self._probing = True
        logger.debug("L2 cache unreachable, skipped until a probe answers: %s", err)
        threading.Thread(target=self._probe, args=(self._refused(err),), name="prompt-l2-probe", daemon=True).start()

    def close(self) -> None:
        """No probe after this one (the adapter is closed)."""
        with self._lock:
            self._closed = True

    def _probe(self, refused: bool) -> None:
        """Until a ``PING`` is answered: waits (0.2–0.6 s; after a refused login the growing pause), then pings."""
        try:
            while not self._closed:
                if refused:
                    self._pause = min(PAUSE_MAX_SECONDS, max(PAUSE_MIN_SECONDS, self._pause * 2))
                    time.sleep(self._pause * (1 + random.random() / 4))
                else:
                    time.sleep(PROBE_INTERVAL_SECONDS * (0.5 + random.random()))
                self.probes += 1
                try:
                    self._ping()
                except Exception as err:  # noqa: BLE001 - any failure: probe again
                    logger.debug("L2 probe failed: %s", err)
                    refused = self._refused(err)
                    continue
                with self._lock:
                    self._pause = 0.0
                    self.tripped = False
                return
        finally:
            with self._lock:
                self._probing = False
