"""The one cached read (``src/runtime/read-path.ts``), for every read target (:mod:`.targets`): a fresh copy in memory
→ an expired one within stale-while-revalidate (refreshed in the background) → a recent not-found → one load
(:mod:`.loader`: catalog, L2, table) → on failure the last good copy within stale-if-error → the caller's fallback.
A label entry with a rollout then serves one arm (:mod:`.rollout`).

A hit is served by the index of fresh copies (:mod:`.fresh_index`, the hot path); everything else comes here.

Thread safety: any number of threads; the index is written under its lock, read without it.
"""
import dataclasses
import logging
import math
from typing import Any, Callable, Hashable, List, Mapping, Optional, Tuple

from .errors import PromptNotFoundError, PromptServingError, PromptStoreError
from .fallback import PromptFallback, fallback_prompt
from .fresh_index import FreshIndex
from .loader import Entry, Loaded, Loader
from .lru import Lru, Slot
from .options import ResolvedOptions
from .prompt import Prompt
from .provenance import Provenance
from .rollout import SERVE_HIT, SERVE_LOADED, SERVE_STALE, RolloutReads, RolloutState
from .schema.l2 import compare_tokens
from .schema.labels import LabelAttr, _js_type, parse_rollout
from .stats import Counters
from .targets import Target, key_prompt_id, target_of
from .tiers import Token

logger = logging.getLogger(__name__)


class ReadPath:
    """Memory (L1 entries, not-found answers, the index of fresh copies) and the read over it."""

    def __init__(self, options: ResolvedOptions, clock: Callable[[], float], counters: Counters) -> None:
        self._o = options
        self._clock = clock
        self._counters = counters
        self.index = FreshIndex()
        self._lock = self.index.lock
        self.prompts: Lru[Entry] = Lru(options.max_entries, self._removed, self.index.take_locked)
        self._map = self.prompts.map
        self.not_found: Lru[Slot[float]] = Lru(options.max_entries)
        self.rollouts = RolloutReads(options.table_name, options.max_entries, counters, self._map.get,
                                     lambda target: self.loader.load(target))
        self.hits = 0
        """Hits of the slow path (the hot path counts its own: :meth:`getter`)."""
        self._generation = 0
        """Epoch moves seen: a load that started before the latest one may carry what it replaced."""
        self.epoch: Any = None
        self.tiers: Any = None
        self.catalog: Any = None
        self.loader: Loader = None  # type: ignore[assignment]

    def attach(self, epoch: Any, tiers: Any, catalog: Any, loader: Loader) -> None:
        self.epoch, self.tiers, self.catalog, self.loader = epoch, tiers, catalog, loader

    @property
    def generation(self) -> int:
        return self._generation

    # -- the index of fresh copies (the hot path) ------------------------------------------------------------

    def getter(self) -> Tuple[Callable[..., Prompt], Callable[[], int]]:
        """``get_prompt`` as a closure over the index of fresh copies, and a function reading its hit count."""
        return self.index.getter(self._clock, self.read)

    def _publish(self, entry: Entry) -> None:
        """A fresh entry without a rollout goes into the index, until its expiry or the next epoch poll."""
        if entry.rollout is not None or entry.rollout_problem is not None:
            return
        with self._lock:
            if self._map.get(entry.key) is entry and not entry.invalidated:
                self.index.put(entry.target, entry.key, (entry.hit, min(entry.expires_at, self.epoch.due)))

    def _removed(self, entry: Entry) -> None:
        with self._lock:
            self.index.take(entry.key)

    def _invalidate(self, entry: Entry) -> None:
        with self._lock:
            entry.invalidated = True
            self.index.take(entry.key)

    # -- the slow path -----------------------------------------------------------------------------------------

    def read(self, prompt_id: Any, version: Any, fallback: Optional[PromptFallback], label: Any,
             stickiness_key: Any) -> Prompt:
        if label is not None:
            if stickiness_key is not None and not isinstance(stickiness_key, str):
                raise PromptServingError(f"`stickiness_key` must be a string, got {_js_type(stickiness_key)}")
            if version is not None:
                raise PromptServingError("give `version` or `label`, not both: a label names its own version")
        target = target_of(prompt_id, version, label)
        try:
            entry = self._map.get(target.key)
        except TypeError:  # an unhashable id: not valid, said by the miss
            entry = None
        now = self._clock()
        epoch = self.epoch
        if now >= epoch.due and (entry is not None or epoch.polled):  # misses watch the epoch too (the catalog)
            epoch.tick(now)
        if entry is not None and entry.expires_at > now and not entry.invalidated:
            entry.used = True
            self.hits += 1
            self._publish(entry)
            return self.serve(entry, stickiness_key, SERVE_HIT)
        return self._miss(target, entry, fallback, stickiness_key, now)

    def _miss(self, target: Target, cached: Optional[Entry], fallback: Optional[PromptFallback],
              stickiness_key: Optional[str], now: float) -> Prompt:
        o = self._o
        if cached is not None and (
            (not cached.invalidated and now < cached.expires_at + o.stale_while_revalidate)
            or (cached.failing and now < cached.expires_at + o.stale_if_error)
        ):
            self._counters.stale_serves += 1
            self.loader.load_in_background(target)
            return self.serve(cached, stickiness_key, SERVE_STALE)
        target.validate()
        not_found = self.not_found.get(target.key)
        if not_found is not None and now < not_found.value:
            self._counters.negative_hits += 1
            raise target.not_found()
        self._counters.misses += 1
        try:
            entry, held = self.loader.load(target)
            return self.serve(entry, stickiness_key, SERVE_HIT if held else SERVE_LOADED)
        except PromptStoreError:
            if cached is not None and self._clock() < cached.expires_at + o.stale_if_error:
                self._counters.stale_serves += 1
                return self.serve(cached, stickiness_key, SERVE_STALE)
            if fallback is None:
                raise
            self._counters.fallback_serves += 1
            served = fallback_prompt(target.prompt_id, fallback)  # for a label: no arm (neither version)
            return served if target.label is None else dataclasses.replace(served, label=target.label)

    def serve(self, entry: Entry, stickiness_key: Optional[str], mode: str) -> Prompt:
        """The prompt a read of ``entry`` serves as ``mode`` says: a hit (``l1``), the read that loaded it (its
        provenance), or stale; a label entry with a rollout (or a broken one) serves the read's arm."""
        if entry.rollout is None and entry.rollout_problem is None:
            return entry.hit if mode == SERVE_HIT else entry.prompt if mode == SERVE_LOADED else entry.stale
        return self.rollouts.serve(entry, stickiness_key, mode)

    # -- what loads find ---------------------------------------------------------------------------------------

    def accept(self, target: Target, item: Optional[Mapping[str, Any]], fetched_at: float, token: Optional[Token],
               generation: Optional[int], provenance: Provenance) -> Loaded:
        """Remembers an item read for ``target`` (or that there is none) and returns its entry; a label's rollout
        gets its candidate version in hand.

        :raises PromptNotFoundError: the item is absent or deleted (remembered as not found)
        :raises PromptStoreError: the item breaks the wire contract
        """
        served = target.prompt(item, provenance) if item is not None else None
        if served is None:
            self.forget(target.key)
            raise target.not_found(deleted=item is not None)
        held = self._map.get(target.key)
        if (held is not None and held.token is not None and not held.invalidated and held.expires_at > self._clock()
                and (token is None or compare_tokens(held.token, token) > 0)):
            return held, True  # a late load: the stream's newer value arrived meanwhile (served from memory)
        rollout: Optional[RolloutState] = None
        problem: Optional[str] = None
        if target.label is not None and LabelAttr.rollout in item:  # type: ignore[operator]
            spec, problem = parse_rollout(item[LabelAttr.rollout])  # type: ignore[index]
            if spec is not None:
                rollout = RolloutState(spec, target.label, served)
                self.rollouts.prepare_candidate(target.prompt_id, rollout)
                served = rollout.arm_a
        entry = Entry(target, served, math.inf if target.immutable else fetched_at + self._o.max_age, token)
        entry.rollout = rollout
        entry.rollout_problem = None if problem is None else f"the rollout map is malformed: {problem}"
        if not target.immutable and generation is not None and generation != self._generation:
            entry.invalidated = True  # loaded before an epoch move that re-validated the rest: re-validated next read
        self.prompts.set(target.key, entry)
        self.not_found.delete(target.key)
        return entry, False

    def forget(self, key: Hashable) -> None:
        """Gone: drop the copy and remember the not-found for ``not_found_max_age_seconds``."""
        self.prompts.delete(key)
        self.not_found.set(key, Slot(self._clock() + self._o.not_found_max_age))

    def mark_failing(self, key: Hashable) -> None:
        entry = self._map.get(key)
        if entry is not None:
            entry.failing = True

    # -- the epoch moved, preload, invalidate ------------------------------------------------------------------

    def revalidate(self) -> None:
        """The epoch moved: each mutable copy (CURRENT, labels) is compared with the L2's stream value (one GET each,
        no table read): replaced by a different one, kept fresh by the same one, else marked for re-validation —
        never dropped, so it stays the last good copy for stale-if-error. Not-found answers are forgotten and the
        catalog is re-read."""
        self._generation += 1
        self.index.clear()
        self.not_found.clear()
        self.catalog.revalidate()
        for key, entry in self.prompts.items():
            target = entry.target
            if target.immutable:
                continue
            shared = self.tiers.read_shared(target.prompt_id, target.sort_key, stream_only=True)
            if self._map.get(key) is not entry:
                continue  # replaced meanwhile
            if shared is None or shared.token is None:
                self._invalidate(entry)
                continue
            now = self._clock()
            if entry.token is not None and compare_tokens(shared.token, entry.token) == 0:
                entry.expires_at = max(entry.expires_at, now + self._o.max_age)
                entry.invalidated = False
                continue
            try:
                self.accept(target, shared.item, now, shared.token, None, Provenance("l2", False, now, self._clock))
            except PromptNotFoundError:
                pass  # removed: forgotten
            except PromptStoreError as err:
                logger.warning("L2 value of %s ignored: %s", target.describe(), err)
                self._invalidate(entry)
                continue
            self._counters.revalidations += 1

    def stale_targets(self, targets: List[Target]) -> List[Target]:
        """The targets with no fresh copy in memory (preload's work)."""
        now = self._clock()
        todo = []
        for target in targets:
            held = self._map.get(target.key)
            if held is None or held.expires_at <= now or held.invalidated:
                todo.append(target)
        return todo

    def invalidate(self, prompt_id: Optional[str]) -> None:
        """Drops every entry and not-found answer of one prompt (CURRENT, versions, labels), or of all."""
        if prompt_id is None:
            for key, _ in self.prompts.items():
                self.prompts.delete(key)
            self.not_found.clear()
            return
        for key, _ in self.prompts.items():
            if key_prompt_id(key) == prompt_id:
                self.prompts.delete(key)
        for key, _ in self.not_found.items():
            if key_prompt_id(key) == prompt_id:
                self.not_found.delete(key)

