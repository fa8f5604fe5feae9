"""The Bloom-filter catalog (``#catalog`` / ``CURRENT``, written by the sync; ``src/runtime/catalog.ts``): lets the
client answer "no such prompt" for ids that were never synced without any remote call. A filter has no false
negatives, so an id it rules out is certainly absent; a false positive (about 1 %) falls through to the table.

Thread safety: one read at a time; concurrent callers wait for it (bounded by their deadline).
"""
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from .ddb_codec import from_item
from .schema.catalog import bloom_might_contain, catalog_problem
from .schema.keys import CATALOG_ID, CURRENT, Attr
from .stats import Counters
from .store import TableReader

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BloomFilter:
    data: bytes
    bits: int
    hashes: int


def parse_catalog(item: Optional[Mapping[str, Any]]) -> Optional[BloomFilter]:
    """The filter of a decoded catalog item; ``None`` when there is no item or it fails the contract's integrity
    rules (``catalog_problem``): an unverifiable catalog rules nothing out (fail open)."""
    if item is None:
        return None
    data, bits, hashes = item.get(Attr.bloom), item.get(Attr.bloom_bits), item.get(Attr.bloom_hashes)
    if catalog_problem(data, bits, hashes, item.get(Attr.count), item.get(Attr.revision)) is not None:
        return None
    return BloomFilter(bytes(data), bits, hashes)  # type: ignore[arg-type]


SharedRead = Callable[[], Any]
"""Returns the L2's usable catalog value (with ``.item``: the decoded item, ``None`` when removed) or ``None``."""
SharedFill = Callable[[Mapping[str, Any], float], None]


class Catalog:
    """``shared_read`` / ``shared_fill`` (given when an L2 is configured) read the catalog from the L2 before the
    table and fill the L2 after a table read, so a fleet cold start reads ``#catalog`` from the table about once."""

    def __init__(self, reader: TableReader, max_age: float, counters: Counters, clock: Callable[[], float],
                 shared_read: Optional[SharedRead] = None, shared_fill: Optional[SharedFill] = None) -> None:
        self._shared_read = shared_read
        self._shared_fill = shared_fill
        self._reader = reader
        self._max_age = max_age
        self._counters = counters
        self._clock = clock
        self._filter: Optional[BloomFilter] = None
        self._read_at: Optional[float] = None
        self._lock = threading.Lock()
        self._reading: Optional[threading.Event] = None
        self._from_fill = False
        """The filter came from a reader's fill in the L2: a table read up to ``max_age_seconds`` old, of whatever
        lineage the epoch had then (none, when it was absent or garbage), so it may predate a prompt now in the
        table. It never rules an id out alone: the table is read first (:meth:`_confirm`)."""
        self._confirm_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._filter is not None

    def might_contain(self, prompt_id: str, deadline: float) -> bool:
        """``False`` only if the catalog proves ``prompt_id`` absent. Waits for the first read. Past ``max_age`` an
        id the old filter admits is answered at once while the catalog is re-read in the background; an id the
        old filter rules out waits for the re-read, so a prompt created since is served within ``max_age``. A filter
        from a reader's fill in the L2 rules nothing out alone: the table's catalog is read first."""
        if self._verdict(prompt_id, deadline) or not self._from_fill:
            return self._admits(prompt_id)
        return not self._confirm(deadline) or self._admits(prompt_id)

    def _verdict(self, prompt_id: str, deadline: float) -> bool:
        if self._read_at is None:
            self.refresh(deadline)
            return self._admits(prompt_id)
        if self._clock() - self._read_at < self._max_age:
            return self._admits(prompt_id)
        if self._admits(prompt_id):
            self.refresh_in_background()
            return True
        self.refresh(deadline)
        return self._admits(prompt_id)

    def _admits(self, prompt_id: str) -> bool:
        f = self._filter
        if f is None:
            return True
        try:
            return bloom_might_contain(f.data, f.bits, f.hashes, prompt_id)
        except UnicodeEncodeError:
            return False

    def refresh(self, deadline: Optional[float] = None) -> None:
        """Reads the catalog now; concurrent callers share one read (each waits at most until its deadline).
        Never raises: an unreadable catalog keeps the filter held (or none) and rules nothing out."""
        with self._lock:
            event = self._reading
            owner = event is None
            if owner:
                event = self._reading = threading.Event()
        assert event is not None
        if not owner:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            event.wait(timeout)
            return
        try:
            self._read(deadline)
        finally:
            with self._lock:
                self._reading = None
            event.set()

    def refresh_in_background(self) -> None:
        with self._lock:
            if self._reading is not None:
                return
        threading.Thread(target=self.refresh, name="prompt-catalog-refresh", daemon=True).start()

    def _confirm(self, deadline: float) -> bool:
        """A fill ruled an id out: reads the catalog from the table, past the L2 (concurrent callers share the read,
        each waiting at most until its deadline). ``False`` when the table could not be read: nothing is ruled out."""
        if not self._confirm_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return False
        try:
            if not self._from_fill:  # another caller confirmed meanwhile
                return True
            return self._read(deadline, from_table=True)
        finally:
            self._confirm_lock.release()

    def _read(self, deadline: Optional[float], from_table: bool = False) -> bool:
        ok = False
        try:
            shared = self._shared_read() if self._shared_read is not None and not from_table else None
            if shared is not None:
                self._filter = parse_catalog(shared.item)
                self._from_fill = getattr(shared, "source", None) == "fill"
            else:
                fetched_at = self._clock()
                raw = self._reader.get_item(CATALOG_ID, CURRENT, deadline)
                item = from_item(raw) if raw is not None else None
                self._filter = parse_catalog(item)
                self._from_fill = False
                if raw is not None and self._shared_fill is not None:
                    self._shared_fill(raw, fetched_at)
            self._counters.catalog_loads += 1
            ok = True
        except Exception as err:  # noqa: BLE001 - an unreadable catalog must never reject an id
            logger.debug("catalog read failed (nothing is ruled out): %s", err)
        self._read_at = self._clock()
        return ok

    def revalidate(self) -> bool:
        """The epoch moved: re-reads the catalog now (from the L2 first). A read already under way may have started
        before the move, so it is waited for and followed by one more. Never raises."""
        if self._read_at is None:
            return False
        with self._lock:
            event = self._reading
        if event is not None:
            event.wait(10.0)
        self.refresh()
        return True
