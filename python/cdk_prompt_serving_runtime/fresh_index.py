"""The index of fresh copies: the hot path of ``get_prompt`` (:meth:`FreshIndex.getter`), for the one read path
(:mod:`.read_path`).

A hit is a closure call: one subscript by id and an expiry check (which also counts it). CURRENT copies are held by id; versions and
labels by id then version or label, with each id's latest indexed one also held by id alone (its *head*, which names
its version or label): a read of it is served by one subscript and an identity check, any other by a second
subscript. The index holds only what a slow read found fresh (until its expiry or the next epoch poll, whichever is
first), and an entry leaves it whenever the entry changes; presence in it is also the LRU's "used" mark
(:meth:`FreshIndex.take`). Entries with a rollout are never in it: a rollout picks an arm per read.

Thread safety: written under :attr:`FreshIndex.lock`, read without a lock.
"""
import itertools
import math
import operator
import sys
import threading
from typing import Any, Callable, Dict, Hashable, Optional, Tuple

from .fallback import PromptFallback
from .prompt import Prompt
from .targets import Target

Fresh = Tuple[Prompt, float]
"""A CURRENT entry of the index: the prompt a hit serves, and until when it may be served so."""

Named = Tuple[Any, Prompt, float]
"""A version's or a label's entry: the version (an exact ``int``) or the label, then as :data:`Fresh`."""

Head = Tuple[int, Prompt, float, Dict[int, Named]]
"""An id's entry in the index of versions: one of its versions, as :data:`Named`, and all of them by version."""

_MISSING: Named = (None, None, -math.inf)  # type: ignore[assignment]
"""Stands for a version or label not held: never fresh."""


class FreshIndex:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.current: Dict[Hashable, Fresh] = {}
        """CURRENT copies, by key in memory (the id)."""
        self.pinned: Dict[str, Head] = {}
        """Versions, by id: the latest indexed of the id's versions, with all of them by version."""
        self.labeled: Dict[str, Dict[str, Named]] = {}
        """Labels without a rollout, by label then id."""

    def getter(self, clock: Callable[[], float], read: Callable[..., Prompt]
               ) -> Tuple[Callable[..., Prompt], Callable[[], int]]:
        """``get_prompt`` as a closure (no attribute lookups on its hit path) and a function reading its hit count.
        ``read`` is the slow path, called with every argument."""
        current = self.current
        pinned = self.pinned
        labeled = self.labeled
        # Hits are counted without a Python-level increment: each expiry check reads the clock through an iterator
        # that counts its calls in C (``repeat`` counts down), and only a check that finds the copy expired counts
        # itself in Python; hits are the checks less those. (``hits += 1`` on a closure cell costs a new int per hit.)
        checks = itertools.repeat((), sys.maxsize)
        now = itertools.starmap(clock, checks)
        expired = 0

        # Positional-or-keyword on purpose: a keyword-only parameter left out costs a dict lookup per call (its
        # default is looked up in __kwdefaults__), three of them a tenth of the hit. The method on the class, which
        # documents and types the call, keeps fallback, label and stickiness_key keyword-only. Subscripts, not
        # ``dict.get``: a method call costs more than the lookup, and a key not held raises into the slow path,
        # which reads anyway. A head is served when it names the very object asked for (``is``): the version an
        # exact ``int`` (``True`` and ``1.0`` hash and compare as ``1`` and are not versions; small ints are one
        # object each), the label the same string; any other is looked up by its version or label.
        def get_prompt(prompt_id: str, version: Optional[int] = None, fallback: Optional[PromptFallback] = None,
                       label: Optional[str] = None, stickiness_key: Optional[str] = None) -> Prompt:
            nonlocal expired
            held: Tuple[Any, ...]  # a head or a named entry: the version or label, the prompt, until when
            try:  # not held, or an unhashable id or label: the slow path reads or says why
                if label is None:
                    if version is None:
                        fresh = current[prompt_id]
                        if fresh[1] > next(now):
                            return fresh[0]
                        expired += 1
                    else:
                        held = pinned[prompt_id]
                        if held[0] is not version:
                            held = held[3][version] if type(version) is int else _MISSING
                        if held[2] > next(now):
                            return held[1]
                        expired += 1
                elif version is None and stickiness_key is None:
                    held = labeled[label][prompt_id]
                    if held[2] > next(now):
                        return held[1]
                    expired += 1
            except (KeyError, TypeError):
                pass
            return read(prompt_id, version, fallback, label, stickiness_key)

        def read_hits() -> int:
            return sys.maxsize - operator.length_hint(checks) - expired

        return get_prompt, read_hits

    def put(self, target: Target, key: Hashable, fresh: Fresh) -> None:
        """Indexes ``fresh`` for ``target`` (held under ``key`` in memory). The caller holds :attr:`lock`."""
        if target.label is not None:
            self.labeled.setdefault(target.label, {})[target.prompt_id] = (target.label, fresh[0], fresh[1])
        elif target.version is not None:
            head = self.pinned.get(target.prompt_id)
            versions: Dict[int, Named] = {} if head is None else head[3]
            versions[target.version] = (target.version, fresh[0], fresh[1])
            self.pinned[target.prompt_id] = (target.version, fresh[0], fresh[1], versions)
        else:
            self.current[key] = fresh

    def take(self, key: Hashable, default: None = None) -> Optional[object]:
        """Takes a key out of the index; what it returns says whether it was in. The caller holds :attr:`lock`."""
        if key.__class__ is not tuple:
            return self.current.pop(key, None)
        parts: Tuple[Any, ...] = key  # type: ignore[assignment]
        if len(parts) == 3:
            _, label, prompt_id = parts
            ids = self.labeled.get(label)
            if ids is None:
                return None
            taken: Optional[Named] = ids.pop(prompt_id, None)
            if not ids:  # an empty map left behind per label would grow with every label ever held
                self.labeled.pop(label, None)
            return taken
        prompt_id, version = parts
        head = self.pinned.get(prompt_id)
        if head is None:
            return None
        versions = head[3]
        taken = versions.pop(version, None)
        if not versions:
            self.pinned.pop(prompt_id, None)
        elif head[0] == version:  # the id's entry names another of its versions
            other = next(iter(versions.values()))
            self.pinned[prompt_id] = (other[0], other[1], other[2], versions)
        return taken

    def take_locked(self, key: Hashable, default: None = None) -> Optional[object]:
        """:meth:`take` under :attr:`lock` (the LRU's "used" mark, taken by its eviction hand under its own lock)."""
        with self.lock:
            return self.take(key)

    def clear(self) -> None:
        with self.lock:
            self.current.clear()
            self.pinned.clear()
            self.labeled.clear()
