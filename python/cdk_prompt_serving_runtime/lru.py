"""A size-bounded map evicting the least recently used key, tuned for read-mostly hot paths (``src/runtime/lru.ts``).

A ``dict`` iterates in insertion order, so re-inserting a key on use keeps the oldest key first. A hit re-inserts
only keys that drifted into the older half (more than ``max_entries / 2`` insertions ago), so a hot key costs one
``dict.get`` per hit and any key used at least once every ``max_entries / 2`` insertions is never evicted.

Thread safety: reads take no lock (``dict.get`` is atomic in CPython); writes and promotions hold the lock.
"""
import threading
from typing import Callable, Dict, Generic, Hashable, List, Optional, TypeVar

V = TypeVar("V")


class _Node(Generic[V]):
    __slots__ = ("value", "stamp")

    def __init__(self, value: V, stamp: int) -> None:
        self.value = value
        self.stamp = stamp


class Lru(Generic[V]):
    def __init__(self, max_entries: int, on_remove: Optional[Callable[[V], None]] = None) -> None:
        self.max_entries = max_entries
        self.promote_after = max_entries // 2
        self.map: Dict[Hashable, _Node[V]] = {}
        self.clock = 0
        self.evictions = 0
        self._on_remove = on_remove
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.map)

    def get(self, key: Hashable) -> Optional[V]:
        node = self.map.get(key)
        if node is None:
            return None
        if self.clock - node.stamp > self.promote_after:
            self.promote(key, node)
        return node.value

    def promote(self, key: Hashable, node: "_Node[V]") -> None:
        with self._lock:
            if self.map.get(key) is node:
                del self.map[key]
                self.map[key] = node
                self.clock += 1
                node.stamp = self.clock

    def set(self, key: Hashable, value: V) -> None:
        removed: List[V] = []
        with self._lock:
            old = self.map.pop(key, None)
            if old is not None:
                removed.append(old.value)
            self.clock += 1
            self.map[key] = _Node(value, self.clock)
            if len(self.map) > self.max_entries:
                oldest = next(iter(self.map))
                removed.append(self.map.pop(oldest).value)
                self.evictions += 1
        if self._on_remove is not None:
            for v in removed:
                self._on_remove(v)

    def delete(self, key: Hashable) -> None:
        with self._lock:
            node = self.map.pop(key, None)
        if node is not None and self._on_remove is not None:
            self._on_remove(node.value)

    def items(self) -> List["tuple[Hashable, V]"]:
        with self._lock:
            return [(k, n.value) for k, n in self.map.items()]
