"""Sticky rollouts on the read side (``src/runtime/rollout.ts``). A label item with a ``rollout`` map serves arm A
(the label's own content) or arm B (the immutable version item ``v<candidate_version>``), chosen per read by
``rollout_bucket(id, label, stickiness_key) < percent_bp`` — one SHA-256 per read, only while a rollout exists — or
at random without a key. A rollout that cannot be served as written fails alone: arm A is served, the read counted
in ``rollout_faults`` and the reason logged once; arm B is never served with content other than the candidate the
map names."""
import dataclasses
import hashlib
import logging
import random
import threading
from typing import Any, Callable, Dict, Hashable, Optional, Tuple

from .errors import PromptNotFoundError, PromptServingError
from .prompt import Prompt, PromptRollout
from .schema.keys import version_key
from .schema.labels import ROLLOUT_SCALE, RolloutSpec, rollout_bucket
from .stats import Counters
from .targets import pinned

logger = logging.getLogger(__name__)


MAX_REMEMBERED_BUCKETS = 1024
"""Stickiness keys whose bucket one label entry remembers (``MAX_REMEMBERED_BUCKETS`` in the Node client)."""

MAX_REMEMBERED_KEY_CHARS = 64
"""A stickiness key longer than this is remembered as its 32-byte SHA-256 digest, never as itself: what a label entry
keeps per key is bounded whatever size of key callers pass (its bucket is still computed from the whole key)."""


def remembered_key(stickiness_key: str) -> object:
    """What a label entry remembers of a stickiness key: the key itself up to :data:`MAX_REMEMBERED_KEY_CHARS`
    characters, else a fixed-size digest of it (a ``bytes``, so it never equals a short key)."""
    if len(stickiness_key) <= MAX_REMEMBERED_KEY_CHARS:
        return stickiness_key
    return hashlib.sha256(stickiness_key.encode("utf-8", "surrogatepass")).digest()


SERVE_HIT = "hit"
"""A read served a fresh copy from memory (provenance ``l1``)."""
SERVE_LOADED = "loaded"
"""The read that loaded the copy (its provenance: ``l2`` or ``table``)."""
SERVE_STALE = "stale"
"""Stale-while-revalidate or stale-if-error (``l1``, ``stale=True``)."""


class RolloutState:
    """One label entry's rollout: both arms once the candidate is in hand, each in three copies that differ only in
    ``provenance`` (built once, so a hit allocates nothing): as loaded (``arm_a``, ``arm_b``: the read that brought
    it), as a hit serves it (``arm_a_hit``, ``arm_b_hit``: ``l1``) and stale (built on first use). ``loading`` is set
    while the candidate is read in the background; ``problem`` says why arm B cannot be served for this label item."""

    __slots__ = ("spec", "label", "arm_a", "arm_a_hit", "arm_b", "arm_b_hit", "problem", "loading", "_stale_a",
                 "_stale_b", "_buckets")

    def __init__(self, spec: RolloutSpec, label: str, label_prompt: Prompt) -> None:
        self.spec = spec
        self.label = label
        self.arm_a = dataclasses.replace(label_prompt, rollout=self._report("A"))
        self.arm_a_hit = self.arm_a.served_copy("l1", False)
        self.arm_b: Optional[Prompt] = None
        self.arm_b_hit: Optional[Prompt] = None
        self.problem: Optional[str] = None
        self.loading: Optional[threading.Event] = None
        self._stale_a: Optional[Prompt] = None
        self._stale_b: Optional[Prompt] = None
        self._buckets: Dict[object, int] = {}

    def arm(self, prompt_id: str, stickiness_key: Optional[str]) -> str:
        """The arm of one read: by the key's bucket (remembered for :data:`MAX_REMEMBERED_BUCKETS` keys, so the hash
        runs once per key while this label item is held; a long key as its digest), else at random."""
        percent_bp = self.spec.percent_bp
        if percent_bp <= 0:
            return "A"
        if percent_bp >= ROLLOUT_SCALE:
            return "B"
        if stickiness_key is None:
            return "B" if random.randrange(ROLLOUT_SCALE) < percent_bp else "A"
        memo = stickiness_key if len(stickiness_key) <= MAX_REMEMBERED_KEY_CHARS else remembered_key(stickiness_key)
        bucket = self._buckets.get(memo)
        if bucket is None:
            bucket = rollout_bucket(prompt_id, self.label, stickiness_key)
            if len(self._buckets) >= MAX_REMEMBERED_BUCKETS:
                self._buckets.clear()
            self._buckets[memo] = bucket
        return "B" if bucket < percent_bp else "A"

    def offer(self, candidate: Prompt) -> None:
        """Takes the candidate version's prompt (as its read served it: a copy held in memory as its ``l1`` copy): arm
        B when its checksum is the map's, else a fault."""
        if candidate.checksum != self.spec.candidate_checksum:
            self.problem = (f"candidate {version_key(self.spec.candidate_version)} has checksum {candidate.checksum}, "
                            f"the rollout names {self.spec.candidate_checksum}")
            return
        arm_b = dataclasses.replace(candidate, label=self.label, rollout=self._report("B"),
                                    source_deleted=self.arm_a.source_deleted)
        self.arm_b = arm_b
        self._stale_b = None
        self.arm_b_hit = arm_b.served_copy("l1", False)  # set last: readers test it, so both copies are in hand
        self.problem = None

    def served_a(self, mode: str) -> Prompt:
        """Arm A's copy for a read served ``mode`` (:data:`SERVE_HIT`, :data:`SERVE_LOADED`, :data:`SERVE_STALE`)."""
        if mode == SERVE_HIT:
            return self.arm_a_hit
        if mode == SERVE_LOADED:
            return self.arm_a
        if self._stale_a is None:
            self._stale_a = self.arm_a.stale_copy()
        return self._stale_a

    def served_b(self, mode: str) -> Prompt:
        """Arm B's copy for a read served ``mode`` (arm B in hand)."""
        assert self.arm_b is not None and self.arm_b_hit is not None
        if mode == SERVE_HIT:
            return self.arm_b_hit
        if mode == SERVE_LOADED:
            return self.arm_b
        if self._stale_b is None:
            self._stale_b = self.arm_b.stale_copy()
        return self._stale_b

    def _report(self, arm: str) -> PromptRollout:
        s = self.spec
        return PromptRollout(label=self.label, rollout_id=s.rollout_id, arm=arm, percent_bp=s.percent_bp,
                             candidate_version=s.candidate_version)


class RolloutReads:
    """The step after a label read: the arm a read of a label entry with a rollout serves, the candidate version put
    in hand (from memory, else one load without the catalog), and the faults counted and logged once.

    :param held: the entry held in memory under a key, if any
    :param load: the one read path's load of a target (single-flight)
    """

    def __init__(self, table_name: str, max_entries: int, counters: Counters, held: Callable[[Hashable], Any],
                 load: Callable[[Any], Tuple[Any, bool]]) -> None:
        self._table_name = table_name
        self._max_entries = max_entries
        self._counters = counters
        self._held = held
        self._load = load
        self._faults_logged: Dict[Hashable, str] = {}

    def serve(self, entry: Any, stickiness_key: Optional[str], mode: str) -> Prompt:
        """The arm a read of a label entry serves, as ``mode`` says (the entry's own prompt with a broken rollout)."""
        rollout: Optional[RolloutState] = entry.rollout
        if rollout is None:
            self._fault(entry, entry.rollout_problem)
            own: Prompt = entry.hit if mode == SERVE_HIT else entry.prompt if mode == SERVE_LOADED else entry.stale
            return own
        if rollout.arm(entry.prompt.id, stickiness_key) == "A":
            return rollout.arm_a_hit if mode == SERVE_HIT else rollout.served_a(mode)
        if rollout.arm_b_hit is not None:
            return rollout.arm_b_hit if mode == SERVE_HIT else rollout.served_b(mode)
        if rollout.problem is None:  # the candidate could not be read: retried in the background
            self._load_candidate_in_background(entry.prompt.id, rollout)
        self._fault(entry, rollout.problem or f"candidate v{rollout.spec.candidate_version} could not be read")
        return rollout.served_a(mode)

    def _fault(self, entry: Any, problem: str) -> None:
        """A read served arm A because arm B cannot be: counted, and logged once per label entry and reason."""
        self._counters.rollout_faults += 1
        if self._faults_logged.get(entry.key) == problem:
            return
        if len(self._faults_logged) >= self._max_entries:
            self._faults_logged.clear()
        self._faults_logged[entry.key] = problem
        rollout_id = entry.rollout.spec.rollout_id if entry.rollout is not None else ""
        log_rollout_fault(self._table_name, entry.prompt.id, entry.target.label or "", rollout_id, problem)

    def prepare_candidate(self, prompt_id: str, rollout: RolloutState) -> None:
        """Puts the candidate version in hand: from memory at once, else one load (the catalog not consulted)."""
        target = pinned(prompt_id, rollout.spec.candidate_version, catalog=False)
        held = self._held(target.key)
        if held is not None:
            rollout.offer(held.hit)  # in memory: a read assigned arm B is served from l1
            return
        try:
            rollout.offer(self._load(target)[0].prompt)
        except PromptNotFoundError:
            rollout.problem = f"candidate version item {target.sort_key} is absent"
        except PromptServingError as err:  # any other failure: retried by the next read assigned arm B
            logger.debug("candidate %s not read: %s", target.describe(), err)

    def _load_candidate_in_background(self, prompt_id: str, rollout: RolloutState) -> None:
        if rollout.loading is not None and not rollout.loading.is_set():
            return
        done = rollout.loading = threading.Event()

        def run() -> None:
            try:
                self.prepare_candidate(prompt_id, rollout)
            finally:
                done.set()

        threading.Thread(target=run, name="prompt-candidate", daemon=True).start()


def choose_arm(prompt_id: str, label: str, stickiness_key: Optional[str], percent_bp: int) -> str:
    """The arm of one read: by the key's bucket with a stickiness key, else at random."""
    if percent_bp <= 0:
        return "A"
    if percent_bp >= ROLLOUT_SCALE:
        return "B"
    bucket = random.randrange(ROLLOUT_SCALE) if stickiness_key is None else rollout_bucket(prompt_id, label, stickiness_key)
    return "B" if bucket < percent_bp else "A"


def log_rollout_fault(table_name: str, prompt_id: str, label: str, rollout_id: str, problem: str) -> None:
    logger.warning(
        "cdk-prompt-serving: the rollout of label '%s' of prompt '%s' cannot serve arm B (%s); arm A is served to its "
        "share until the rollout is fixed or removed",
        label, prompt_id, problem,
        extra={"table": table_name, "prompt_id": prompt_id, "label": label, "rollout_id": rollout_id},
    )
