"""Loads of read targets (``src/runtime/loader.ts``): one load per key in memory at a time, whatever the number of
threads asking (single-flight), each through the catalog (when the target uses it), the L2 and the table within one
``request_timeout_ms``. What a load finds is handed to ``accept`` (the read path remembers it and builds the entry);
an absent item to ``forget``.

Thread safety: any number of threads; a load runs on the thread that started it (or on a background thread for a
refresh), the others wait for its outcome.
"""
import logging
import threading
from typing import Any, Callable, Dict, Hashable, Mapping, Optional, Tuple

from .catalog import Catalog
from .errors import PromptNotFoundError, PromptStoreError
from .prompt import Prompt
from .provenance import Provenance
from .rollout import RolloutState
from .stats import Counters
from .store import TableReader
from .targets import Target
from .tiers import SharedReader, Token

logger = logging.getLogger(__name__)


class Entry:
    """One remembered item of a target. ``hit``: the prompt as a hit serves it (provenance ``l1``), built once.
    ``failing``: the last load of this key failed, so this copy is served at once (within the stale-if-error bound)
    while reads retry. ``invalidated``: the epoch moved and the L2 could not confirm this copy: not served as fresh
    (nor stale-while-revalidate) but kept as the last good copy for stale-if-error. ``token``: the stream value's
    ordering token (stream copies only). ``rollout`` / ``rollout_problem``: a label entry's rollout, or why its map
    cannot be used (every read is served arm A and counted)."""

    __slots__ = ("target", "key", "prompt", "hit", "expires_at", "token", "failing", "invalidated", "used", "_stale",
                 "rollout", "rollout_problem")

    def __init__(self, target: Target, prompt: Prompt, expires_at: float, token: Optional[Token]) -> None:
        self.target = target
        self.key = target.key
        self.used = False
        self.prompt = prompt
        self.hit = prompt.served_copy("l1", False)
        self.expires_at = expires_at
        self.token = token
        self.failing = False
        self.invalidated = False
        self._stale: Optional[Prompt] = None
        self.rollout: Optional[RolloutState] = None
        self.rollout_problem: Optional[str] = None

    @property
    def stale(self) -> Prompt:
        s = self._stale
        if s is None:
            s = self._stale = self.prompt.served_copy("l1", True)
        return s


Loaded = Tuple[Entry, bool]
"""A load's outcome: the entry, and whether it was already held (a late load: the stream's newer value arrived
meanwhile, so the read is served from memory)."""

Accept = Callable[[Target, Optional[Mapping[str, Any]], float, Optional[Token], Optional[int], Provenance], Loaded]


class _Flight:
    __slots__ = ("done", "outcome", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.outcome: Optional[Loaded] = None
        self.error: Optional[BaseException] = None


class Loader:
    """Single-flight loads: catalog → L2 → table.

    :param accept: remembers what a load found (an item, or ``None``: absent) and returns the entry; raises
        :class:`PromptNotFoundError` for an absent or deleted item, :class:`PromptStoreError` for one that breaks
        the wire contract
    :param drop: drops the entry of a key the catalog rules out (no not-found answer is remembered: the catalog is)
    :param mark_failing: a load of this key failed: the held copy is served at once while reads retry
    :param generation: the epoch moves seen so far (a load remembers the value it started with)
    """

    def __init__(self, reader: TableReader, tiers: SharedReader, catalog: Catalog, counters: Counters,
                 clock: Callable[[], float], accept: Accept, drop: Callable[[Hashable], None],
                 mark_failing: Callable[[Hashable], None], generation: Callable[[], int]) -> None:
        self._reader = reader
        self._tiers = tiers
        self._catalog = catalog
        self._counters = counters
        self._clock = clock
        self._accept = accept
        self._drop = drop
        self._mark_failing = mark_failing
        self._generation = generation
        self._flights: Dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()

    def load(self, target: Target) -> Loaded:
        """The load of ``target`` under way (waited for as long as it may take), or a new one run on this thread."""
        flight, owner = self._join_or_start(target.key)
        if owner:
            self._run(flight, target)
        elif not flight.done.wait(self._reader.request_timeout * target.remote_reads + 1.0):
            self._counters.store_errors += 1
            raise PromptStoreError(f"GetItem {target.describe()} on table {self._reader.table_name} timed out after "
                                   f"{round(self._reader.request_timeout * 1000)} ms")
        if flight.error is not None:
            raise flight.error
        assert flight.outcome is not None
        return flight.outcome

    def load_in_background(self, target: Target) -> None:
        """Starts a load on a background thread unless one of this key is under way (stale-while-revalidate)."""
        flight, owner = self._join_or_start(target.key)
        if owner:
            threading.Thread(target=self._run, args=(flight, target), name="prompt-refresh", daemon=True).start()

    def _join_or_start(self, key: Hashable) -> Tuple[_Flight, bool]:
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                return flight, False
            flight = self._flights[key] = _Flight()
            return flight, True

    def _run(self, flight: _Flight, target: Target) -> None:
        """Runs a flight's load and hands its outcome to every waiter; a store failure marks the held copy failing."""
        try:
            flight.outcome = self._fetch(target)
        except BaseException as err:  # noqa: BLE001 - handed to every waiter
            flight.error = err
            if isinstance(err, PromptStoreError):
                self._mark_failing(target.key)
        finally:
            with self._lock:
                if self._flights.get(target.key) is flight:
                    del self._flights[target.key]
            flight.done.set()

    def _fetch(self, target: Target) -> Loaded:
        """Catalog → L2 → table, within one ``request_timeout_ms``."""
        deadline = self._reader.deadline()
        if target.uses_catalog and not self._catalog.might_contain(target.prompt_id, deadline):
            self._counters.catalog_rejections += 1
            self._drop(target.key)
            raise PromptNotFoundError(target.prompt_id, target.version, "not in the catalog")
        generation = self._generation()
        shared = self._tiers.read_shared(target.prompt_id, target.sort_key)
        if shared is not None:
            try:
                return self._accept(target, shared.item, self._clock() if shared.source == "stream" else shared.fetched_at,
                                    shared.token, generation, Provenance("l2", False, shared.fetched_at, self._clock))
            except PromptStoreError as err:  # an L2 value that breaks the contract: read the table
                self._counters.l2_errors += 1
                logger.debug("L2 value of %s ignored: %s", target.describe(), err)
        item, fetched_at = self._tiers.read_table(target.prompt_id, target.sort_key, deadline)
        return self._accept(target, item, fetched_at, None, generation, Provenance("table", False, fetched_at, self._clock))
