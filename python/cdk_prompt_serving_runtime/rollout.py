"""Sticky rollouts on the read side (``src/runtime/rollout.ts``). A label item with a ``rollout`` map serves arm A
(the label's own content) or arm B (the immutable version item ``v<candidate_version>``), chosen per read by
``rollout_bucket(id, label, stickiness_key) < percent_bp`` — one SHA-256 per read, only while a rollout exists — or
at random without a key. A rollout that cannot be served as written fails alone: arm A is served, the read counted
in ``rollout_faults`` and the reason logged once; arm B is never served with content other than the candidate the
map names."""
import dataclasses
import logging
import random
import threading
from typing import Dict, Optional

from .prompt import Prompt, PromptRollout
from .schema.keys import version_key
from .schema.labels import ROLLOUT_SCALE, RolloutSpec, rollout_bucket

logger = logging.getLogger(__name__)


MAX_REMEMBERED_BUCKETS = 1024
"""Stickiness keys whose bucket one label entry remembers (``MAX_REMEMBERED_BUCKETS`` in the Node client)."""


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
        self._buckets: Dict[str, int] = {}

    def arm(self, prompt_id: str, stickiness_key: Optional[str]) -> str:
        """The arm of one read: by the key's bucket (remembered for :data:`MAX_REMEMBERED_BUCKETS` keys, so the hash
        runs once per key while this label item is held), else at random."""
        percent_bp = self.spec.percent_bp
        if percent_bp <= 0:
            return "A"
        if percent_bp >= ROLLOUT_SCALE:
            return "B"
        if stickiness_key is None:
            return "B" if random.randrange(ROLLOUT_SCALE) < percent_bp else "A"
        bucket = self._buckets.get(stickiness_key)
        if bucket is None:
            bucket = rollout_bucket(prompt_id, self.label, stickiness_key)
            if len(self._buckets) >= MAX_REMEMBERED_BUCKETS:
                self._buckets.clear()
            self._buckets[stickiness_key] = bucket
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
