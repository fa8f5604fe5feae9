"""A size-bounded map that evicts a least recently used key, tuned for read-mostly hot paths
(``src/runtime/lru.ts`` has the same contract; this one uses the "second chance" (CLOCK) approximation).

A ``dict`` iterates in insertion order. A hit only marks its value ``used`` (one attribute store, no lock, no
re-insertion); an insertion past the bound looks at the oldest key: used since it was last looked at, it is
cleared and moved to the end (a second chance), else it is evicted. A key used between two passes of the
eviction hand is never evicted; an unused one goes first.

Values must have a writable ``used`` attribute (:class:`Slot` gives one to any value).

Thread safety: ``get`` takes no lock (``dict.get`` is atomic in CPython); ``set``/``delete`` hold the lock.
"""
import threading
from typing import Callable, Dict, Generic, Hashable, List, Optional, Tuple, TypeVar

V = TypeVar("V")


class Slot(Generic[V]):
    """Wraps a value that has no ``used`` attribute of its own."""

    __slots__ = ("value", "used")

    def __init__(self, value: V) -> None:
        self.value = value
        self.used = False


class Lru(Generic[V]):
    def __init__(self, max_entries: int, on_remove: Optional[Callable[[V], None]] = None,
                 take_reference: Optional[Callable[[Hashable, None], object]] = None) -> None:
        """:param take_reference: a second "used" mark kept outside the values (a key's presence in an index of hot
            keys: ``dict.pop``), taken (cleared) by the eviction hand like ``used``; ``None`` when absent"""
        self.max_entries = max_entries
        self._take_reference = take_reference
        self.map: Dict[Hashable, V] = {}
        self.evictions = 0
        self._on_remove = on_remove
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.map)

    def get(self, key: Hashable) -> Optional[V]:
        value = self.map.get(key)
        if value is not None:
            value.used = True  # type: ignore[attr-defined]
        return value

    def set(self, key: Hashable, value: V) -> None:
        removed: List[V] = []
        value.used = False  # type: ignore[attr-defined]
        with self._lock:
            m = self.map
            old = m.pop(key, None)
            if old is not None:
                removed.append(old)
            m[key] = value
            while len(m) > self.max_entries:
                oldest = next(iter(m))
                candidate = m.pop(oldest)
                referenced = self._take_reference is not None and self._take_reference(oldest, None) is not None
                if (candidate.used or referenced) and candidate is not value:  # type: ignore[attr-defined]
                    candidate.used = False  # type: ignore[attr-defined]
                    m[oldest] = candidate
                else:
                    removed.append(candidate)
                    self.evictions += 1
        if self._on_remove is not None:
            for v in removed:
                self._on_remove(v)

    def delete(self, key: Hashable) -> None:
        with self._lock:
            value = self.map.pop(key, None)
        if value is not None and self._on_remove is not None:
            self._on_remove(value)

    def clear(self) -> None:
        """Removes every entry (without the removal hook: used for maps that have none)."""
        with self._lock:
            self.map.clear()

    def items(self) -> List[Tuple[Hashable, V]]:
        with self._lock:
            return list(self.map.items())
