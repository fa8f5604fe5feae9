"""Labels, rollouts and audit records of table schema v2 (``src/schema/labels.ts``): label names, the label item's
attributes, the rollout map and the sticky assignment hash. The conformance fixtures ``labels.json`` and
``rollout.json`` pin both clients to the same answers."""
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple, Union

from .keys import MAX_VERSION_NUMBER

LABEL_SORT_KEY_PREFIX = "LABEL#"
"""Sort key prefix of label items: ``LABEL#production``."""
AUDIT_SORT_KEY_PREFIX = "AUDIT#"

LABEL_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,62}\Z")
"""A label name: a lowercase letter, then up to 62 lowercase letters, digits, ``-`` or ``_``."""
_LABEL_NAME_PATTERN_SOURCE = "^[a-z][a-z0-9_-]{0,62}$"
RESERVED_LABEL_NAMES = ("current", "latest")

ROLLOUT_SCALE = 10_000
"""Basis points in 100 %."""
MAX_ROLLOUT_ID_LENGTH = 128
CHECKSUM_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}\Z")


class LabelAttr:
    """Attributes a label item adds to the ``CURRENT`` shape."""

    label = "label"
    moved_at = "moved_at"
    moved_by = "moved_by"
    source_deleted_at = "source_deleted_at"
    rollout = "rollout"


LABEL_ITEM_ATTRIBUTES = frozenset(
    [LabelAttr.label, LabelAttr.moved_at, LabelAttr.moved_by, LabelAttr.source_deleted_at, LabelAttr.rollout]
)
"""Attributes that describe the label, not the prompt: readers leave them out of the content they serve."""


class RolloutAttr:
    """Keys of a label's ``rollout`` map."""

    rollout_id = "rollout_id"
    candidate_version = "candidate_version"
    candidate_checksum = "candidate_checksum"
    percent_bp = "percent_bp"
    steps_bp = "steps_bp"
    step_interval_seconds = "step_interval_seconds"
    next_step_at = "next_step_at"
    alarms = "alarms"
    started_at = "started_at"
    started_by = "started_by"


def _js_type(value: Any) -> str:
    """JavaScript's ``typeof`` of a decoded value, as the Node client's messages say it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"


def label_name_problem(name: Any) -> Optional[str]:
    """Why ``name`` cannot be a label name, or ``None`` when it can (``labelNameProblem``, word for word)."""
    if not isinstance(name, str):
        return f"a label name must be a string, got {_js_type(name)}"
    if not LABEL_NAME_PATTERN.match(name):
        shown = json.dumps(name[:60] + "…" if len(name) > 80 else name, ensure_ascii=False)
        return (f"label name {shown} must match {_LABEL_NAME_PATTERN_SOURCE} (a lowercase letter, then up to 62 "
                "lowercase letters, digits, '-' or '_')")
    if name in RESERVED_LABEL_NAMES:
        return f"label name '{name}' is reserved ({', '.join(RESERVED_LABEL_NAMES)})"
    return None


def label_sort_key(name: str) -> str:
    """Sort key of label ``name``; raises ``ValueError`` naming the rule."""
    problem = label_name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return LABEL_SORT_KEY_PREFIX + name


def parse_label_sort_key(sort_key: str) -> Optional[str]:
    """The label name in a label sort key, or ``None`` for any other sort key."""
    if not isinstance(sort_key, str) or not sort_key.startswith(LABEL_SORT_KEY_PREFIX):
        return None
    name = sort_key[len(LABEL_SORT_KEY_PREFIX):]
    return name if label_name_problem(name) is None else None


def rollout_bucket(prompt_id: str, label: str, key: str) -> int:
    """Sticky assignment (``rolloutBucket``): the first 4 bytes of SHA-256 over the UTF-8 of ``prompt_id``, 0x00,
    ``label``, 0x00, ``key``, as a big-endian unsigned integer, modulo :data:`ROLLOUT_SCALE`. Arm B iff
    ``bucket < percent_bp``.

    The UTF-8 is the one JavaScript produces from the same UTF-16 string: a surrogate pair (even one held here as
    two code points, as a UTF-16 source may hand it over) is its one character, and every lone surrogate is
    U+FFFD. Round-tripping through UTF-16 with ``surrogatepass`` pairs the halves; decoding with ``replace`` turns
    what is left unpaired into U+FFFD."""
    text = f"{prompt_id}\0{label}\0{key}"
    data = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")
    return int.from_bytes(hashlib.sha256(data).digest()[:4], "big") % ROLLOUT_SCALE


def rollout_arm(bucket: int, percent_bp: int) -> str:
    return "B" if bucket < percent_bp else "A"


@dataclass(frozen=True)
class RolloutSpec:
    """The keys of a rollout map readers use."""

    rollout_id: str
    candidate_version: int
    candidate_checksum: str
    percent_bp: int


def _whole(value: Any, low: int, high: int) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not value.is_integer():
        return False
    return bool(low <= value <= high)


def _show(value: Any) -> str:
    """A value in a problem message, as the Node client shows it."""
    if value is _ABSENT:
        return "absent"
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if value is None or isinstance(value, (str, bool, int, float)):
        if isinstance(value, float) and value.is_integer():
            text = str(int(value))
        else:
            text = json.dumps(value, ensure_ascii=False)
        return text[:37] + "..." if len(text) > 40 else text
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, (bytes, bytearray)):
        return "binary"
    return "a map"


_ABSENT = object()


def parse_rollout(value: Any) -> Union[Tuple[RolloutSpec, None], Tuple[None, str]]:
    """The rollout a label item's ``rollout`` attribute describes, or why readers cannot use it (``parseRollout``):
    ``(spec, None)`` or ``(None, problem)``."""
    if not isinstance(value, Mapping):
        return None, f"{LabelAttr.rollout} is not a map"
    rollout_id = value.get(RolloutAttr.rollout_id, _ABSENT)
    candidate_version = value.get(RolloutAttr.candidate_version, _ABSENT)
    candidate_checksum = value.get(RolloutAttr.candidate_checksum, _ABSENT)
    percent_bp = value.get(RolloutAttr.percent_bp, _ABSENT)
    if not isinstance(rollout_id, str) or not 1 <= len(rollout_id.encode("utf-16-le", "surrogatepass")) // 2 <= MAX_ROLLOUT_ID_LENGTH:
        return None, f"{RolloutAttr.rollout_id} {_show(rollout_id)} is not a string of 1 to {MAX_ROLLOUT_ID_LENGTH} characters"
    if not _whole(candidate_version, 1, MAX_VERSION_NUMBER):
        return None, (f"{RolloutAttr.candidate_version} {_show(candidate_version)} is not a whole number from 1 to "
                      f"{MAX_VERSION_NUMBER}")
    if not isinstance(candidate_checksum, str) or not CHECKSUM_PATTERN.match(candidate_checksum):
        return None, f"{RolloutAttr.candidate_checksum} {_show(candidate_checksum)} is not sha256: and 64 lowercase hex digits"
    if not _whole(percent_bp, 0, ROLLOUT_SCALE):
        return None, f"{RolloutAttr.percent_bp} {_show(percent_bp)} is not a whole number from 0 to {ROLLOUT_SCALE}"
    return RolloutSpec(rollout_id, int(candidate_version), candidate_checksum, int(percent_bp)), None
