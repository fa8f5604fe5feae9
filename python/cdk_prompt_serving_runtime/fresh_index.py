"""The index of fresh copies: the hot path of ``get_prompt`` (:meth:`FreshIndex.getter`), for the one read path
(:mod:`.read_path`).

A hit is a closure call: a subscript of the target's key in the index (two for a version or a label: by id then
version, by label then id), an expiry check, a counter. The index holds only what a slow read found fresh (until its
expiry or the next epoch poll, whichever is first), and an entry leaves it whenever the entry changes; presence in it
is also the LRU's "used" mark (:meth:`FreshIndex.take`). Entries with a rollout are never in it: a rollout picks an
arm per read.

Thread safety: written under :attr:`FreshIndex.lock` (the LRU's eviction hand takes entries under its own), read
without a lock.
"""
import threading
from typing import Callable, Dict, Hashable, Optional, Tuple

from .fallback import PromptFallback
from .prompt import Prompt
from .targets import Target

Fresh = Tuple[Prompt, float]
"""An entry of the index: the prompt a hit serves, and until when it may be served so."""


class FreshIndex:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.current: Dict[Hashable, Fresh] = {}
        """CURRENT copies, by key in memory (the id)."""
        self.pinned: Dict[str, Dict[int, Fresh]] = {}
        """Versions, by id then version (two lookups of hashed keys cost less than a tuple built)."""
        self.labeled: Dict[str, Dict[str, Fresh]] = {}
        """Labels without a rollout, by label then id."""

    def getter(self, clock: Callable[[], float], read: Callable[..., Prompt]
               ) -> Tuple[Callable[..., Prompt], Callable[[], int]]:
        """``get_prompt`` as a closure (no attribute lookups on its hit path) and a function reading its hit count.
        ``read`` is the slow path, called with every argument."""
        current = self.current
        pinned = self.pinned
        labeled = self.labeled
        hits = 0

        # Positional-or-keyword on purpose: a keyword-only parameter left out costs a dict lookup per call (its
        # default is looked up in __kwdefaults__), three of them a tenth of the hit. The method on the class, which
        # documents and types the call, keeps fallback, label and stickiness_key keyword-only. Subscripts, not
        # ``dict.get``: a method call costs more than the lookup, and a key not held raises into the slow path,
        # which reads anyway. A version must be an exact ``int`` (``True`` and ``1.0`` hash and compare as ``1``).
        def get_prompt(prompt_id: str, version: Optional[int] = None, fallback: Optional[PromptFallback] = None,
                       label: Optional[str] = None, stickiness_key: Optional[str] = None) -> Prompt:
            nonlocal hits
            try:
                if label is None:
                    if version is None:
                        held = current[prompt_id]
                    elif type(version) is int:
                        held = pinned[prompt_id][version]
                    else:
                        held = None
                elif version is None and stickiness_key is None:
                    held = labeled[label][prompt_id]
                else:
                    held = None
            except (KeyError, TypeError):  # not held, or an unhashable id or label: the slow path reads or says why
                held = None
            if held is not None and held[1] > clock():
                hits += 1
                return held[0]
            return read(prompt_id, version, fallback, label, stickiness_key)

        def read_hits() -> int:
            return hits

        return get_prompt, read_hits

    def put(self, target: Target, key: Hashable, fresh: Fresh) -> None:
        """Indexes ``fresh`` for ``target`` (held under ``key`` in memory). The caller holds :attr:`lock`."""
        if target.label is not None:
            self.labeled.setdefault(target.label, {})[target.prompt_id] = fresh
        elif target.version is not None:
            self.pinned.setdefault(target.prompt_id, {})[target.version] = fresh
        else:
            self.current[key] = fresh

    def take(self, key: Hashable, default: None = None) -> Optional[Fresh]:
        """Takes a key out of the index (also the LRU's "used" mark: what it returns says whether it was in)."""
        if key.__class__ is not tuple:
            return self.current.pop(key, None)
        outer, outer_key, inner_key = ((self.pinned, key[0], key[1]) if len(key) == 2  # type: ignore[arg-type, index]
                                       else (self.labeled, key[1], key[2]))  # type: ignore[index]
        inner = outer.get(outer_key)
        if inner is None:
            return None
        taken = inner.pop(inner_key, None)
        if not inner:  # an empty map left behind per id would grow with every id ever held
            outer.pop(outer_key, None)
        return taken

    def clear(self) -> None:
        with self.lock:
            self.current.clear()
            self.pinned.clear()
            self.labeled.clear()
