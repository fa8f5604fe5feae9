"""Reserved attributes, mirroring ``src/schema/reserved-attributes.ts`` of the Node library.

The attribute names the table, the release path or the clients give meaning to. Content from a source (a prompt
file's front matter, a Bedrock field, a hand-written item) can never set one: every source refuses it, whatever
copies an item takes only the content (names that are not reserved) and the reserved names it owns, and readers
read control fields (``rollout``, ``source_deleted_at``) only from the label items that own them.

A name is reserved when it is in :data:`RESERVED_ATTRIBUTES`, starts with one of
:data:`RESERVED_ATTRIBUTE_PREFIXES` (the namespace kept for control fields to come: a feature that gives meaning to
a new attribute names it ``_something``, never a new plain name), or folds (:func:`fold_attribute_name`) to a
reserved name (``expiresAt``). Both clients are held to ``test/conformance/fixtures/reserved-attributes.json``.
"""
from __future__ import annotations

import re
from typing import Any, Dict, Mapping, Optional

RESERVED_ATTRIBUTES = frozenset(
    [
        # pointer and version bookkeeping (keys.ts Attr, content names excepted)
        "prompt_id", "version", "version_number", "latest_version_number", "checksum", "status", "source",
        "source_version", "source_checksum", "source_revision", "source_updated_at", "source_read_at", "synced_at",
        "activated_at", "activated_by", "schema_version", "revision",
        # the catalog
        "bloom", "bloom_bits", "bloom_hashes", "count",
        # the sync's budget and claims
        "next_slot_at", "claimed_at", "expires_at", "claim_token", "claim_outcome", "prompt_id_claimed",
        # labels (labels.ts LabelAttr)
        "label", "moved_at", "moved_by", "source_deleted_at", "rollout",
        # the keys of a rollout map (labels.ts RolloutAttr)
        "rollout_id", "candidate_version", "candidate_checksum", "percent_bp", "steps_bp", "step_interval_seconds",
        "next_step_at", "alarms", "started_at", "started_by",
        # audit records (labels.ts AuditAttr; expires_at is the table's TTL attribute)
        "action", "target", "from_version", "to_version", "actor", "reason", "at",
        # the rollout registry
        "target_prompt_id",
    ]
)
"""Every attribute name the table, the release path or the clients give meaning to, on any item kind."""

RESERVED_ATTRIBUTE_PREFIXES = ("_", "#", "$", "@")
"""Prefixes of names reserved for control fields to come."""

_FOLD = re.compile(r"[_\-. ]")


def fold_attribute_name(name: str) -> str:
    """A name's spelling-free form: lowercase, without ``_``, ``-``, ``.`` or spaces."""
    return _FOLD.sub("", name.lower())


_FOLDED_RESERVED: Dict[str, str] = {fold_attribute_name(n): n for n in RESERVED_ATTRIBUTES}


def reserved_attribute_for(name: str) -> Optional[str]:
    """The reserved attribute ``name`` is (or spells), or ``None`` when content may use it."""
    if name in RESERVED_ATTRIBUTES or name.startswith(RESERVED_ATTRIBUTE_PREFIXES):
        return name
    return _FOLDED_RESERVED.get(fold_attribute_name(name))


def is_reserved_attribute(name: str) -> bool:
    """Whether content may not use ``name`` as a top-level key."""
    return reserved_attribute_for(name) is not None


def reserved_attribute_in(record: Mapping[str, Any]) -> Optional[str]:
    """The first top-level key of ``record`` that is reserved, or ``None``."""
    return next((key for key in record if is_reserved_attribute(key)), None)


def content_attributes(item: Mapping[str, Any]) -> Dict[str, Any]:
    """The content of an item as a copy takes it: every top-level attribute that is not reserved."""
    return {k: v for k, v in item.items() if v is not None and not is_reserved_attribute(k)}
