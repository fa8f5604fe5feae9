"""Labels on the read side (``src/runtime/labels.ts``): the cache keys of a label's entry, the prompt a label item
is served as, and the reasons a labeled read is not found. A label item (``LABEL#<name>``) has the shape of
``CURRENT``, so it goes through the same tiers, freshness rules and epoch."""
import dataclasses
from typing import Any, Mapping, Optional, Tuple

from .prompt import Prompt, is_deleted, prompt_from_item
from .provenance import Provenance
from .schema.labels import LABEL_ITEM_ATTRIBUTES, LABEL_SORT_KEY_PREFIX, LabelAttr, label_name_problem


def label_cache_key(label: str, prompt_id: str) -> Tuple[str, str, str]:
    """The key of a label's entry (and of its not-found answer) in memory; never equal to an id or a version key."""
    return ("label", label, prompt_id)


def label_item_key(label: str) -> str:
    return LABEL_SORT_KEY_PREFIX + label


def invalid_label_reason(label: Any) -> Optional[str]:
    """Why ``label`` cannot be asked for, as the not-found reason both clients give; ``None`` when it can."""
    problem = label_name_problem(label)
    return None if problem is None else f"not a valid label ({problem})"


def missing_label_reason(label: str) -> str:
    return f"no label '{label}'"


def prompt_from_label_item(item: Mapping[str, Any], label: str,
                           provenance: Optional[Provenance] = None) -> Optional[Prompt]:
    """The prompt a label item serves (arm A): its content without the label's own attributes, flagged with the label
    and ``source_deleted``, with the provenance of the read that loaded it (default: a table read now); ``None`` for
    a tombstone.

    :raises PromptStoreError: if the item breaks the wire contract
    """
    if is_deleted(item):
        return None
    content = {k: v for k, v in item.items() if k not in LABEL_ITEM_ATTRIBUTES}
    deleted_at = item.get(LabelAttr.source_deleted_at)
    source_deleted = isinstance(deleted_at, str) and len(deleted_at) > 0
    return dataclasses.replace(prompt_from_item(content, 1, provenance), label=label, source_deleted=source_deleted)
