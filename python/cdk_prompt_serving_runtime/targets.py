"""Read targets (``src/runtime/targets.ts``): what one read asks for — the ``CURRENT`` pointer, a pinned version or a
label — as a value that carries everything the one read path (:mod:`.read_path`) needs to know about it: its table
key, its key in memory (the L1 entry, the not-found answer and the load under way), whether the catalog applies, its
freshness rule, how many table reads its load may take, and how an item read for it becomes a prompt. The rest of
the read (single-flight, L1, L2, table, stale-while-revalidate, stale-if-error, fallback, provenance) is written once
and serves every target; a rollout is one step after a label read.

The keys in memory never collide: ``CURRENT`` is the id itself (a ``str``), a version ``(id, n)``, a label
``("label", name, id)``.
"""
import dataclasses
from typing import Any, Hashable, Mapping, Optional

from .errors import PromptNotFoundError
from .labels import invalid_label_reason, label_cache_key, label_item_key, missing_label_reason, prompt_from_label_item
from .prompt import Prompt, is_deleted, prompt_from_item
from .provenance import Provenance
from .schema.keys import CURRENT, MAX_VERSION_NUMBER, PROMPT_ID_RULE, is_valid_prompt_id, version_key

INVALID_ID_REASON = f"not a valid prompt id ({PROMPT_ID_RULE}, which is reserved)"
"""Why an id that can never exist is not found (the Node client's reason, word for word)."""

_UNUSABLE = object()
"""The memory key of a target that can never be held (a version that is not an exact ``int``): matches nothing."""


@dataclasses.dataclass(frozen=True)
class Target:
    """One thing a read asks for.

    :param prompt_id: the id as the caller gave it (validated by :meth:`validate`, not on construction)
    :param version: a pinned version (``None`` for ``CURRENT`` and labels)
    :param label: a label name (``None`` for ``CURRENT`` and versions)
    :param sort_key: the item's table key (``CURRENT``, ``v000003``, ``LABEL#production``)
    :param key: the key in memory of its entry, its not-found answer and its load under way
    :param uses_catalog: the ``#catalog`` filter may rule the id out first (not for labels, which outlive their
        prompt's deletion at the source, nor for a rollout's candidate)
    :param immutable: the freshness rule: an immutable item is never re-read (kept until evicted); the others are
        fresh for ``max_age_seconds`` and re-validated when the epoch moves
    :param remote_reads: table reads a load may make one after the other (a label: the label item, then its
        rollout's candidate), so a read waiting for another's load waits as long as that load may take
    """

    prompt_id: Any
    version: Any
    label: Any
    sort_key: str
    key: Hashable
    uses_catalog: bool
    immutable: bool
    remote_reads: int

    def validate(self) -> None:
        """Ids, versions and labels that cannot exist are not found, without a remote call."""
        if not is_valid_prompt_id(self.prompt_id):
            raise PromptNotFoundError(show_id(self.prompt_id), self.version, INVALID_ID_REASON)
        version = self.version
        if version is not None and not (
            isinstance(version, int) and not isinstance(version, bool) and 1 <= version <= MAX_VERSION_NUMBER
        ):
            raise PromptNotFoundError(self.prompt_id, version, f"a version is an integer from 1 to {MAX_VERSION_NUMBER}")
        if self.label is not None:
            invalid = invalid_label_reason(self.label)
            if invalid is not None:
                raise PromptNotFoundError(self.prompt_id, None, invalid)

    def not_found(self, deleted: bool = False) -> PromptNotFoundError:
        """The answer for an item that is absent (or deleted)."""
        if self.label is not None:
            return PromptNotFoundError(self.prompt_id, None, f"label '{self.label}' deleted" if deleted
                                       else missing_label_reason(self.label))
        return PromptNotFoundError(self.prompt_id, self.version, "deleted" if deleted else None)

    def prompt(self, item: Mapping[str, Any], provenance: Provenance) -> Optional[Prompt]:
        """The prompt an item read for this target serves (a label: arm A, without the label's own attributes);
        ``None`` for a tombstone.

        :raises PromptStoreError: if the item breaks the wire contract
        """
        if self.label is not None:
            return prompt_from_label_item(item, self.label, provenance)
        if is_deleted(item):
            return None
        return prompt_from_item(item, 1, provenance)

    def describe(self) -> str:
        return f"{self.prompt_id}/{self.sort_key}"


def current(prompt_id: Any) -> Target:
    return Target(prompt_id, None, None, CURRENT, prompt_id, True, False, 1)


def pinned(prompt_id: Any, version: Any, *, catalog: bool = True) -> Target:
    """An exact version; ``catalog=False`` for a rollout's candidate (the label named it: no catalog check)."""
    exact = version.__class__ is int and 1 <= version <= MAX_VERSION_NUMBER
    return Target(prompt_id, version, None, version_key(version) if exact else str(version),
                  (prompt_id, version) if exact else _UNUSABLE, catalog, True, 1)


def labeled(prompt_id: Any, label: Any) -> Target:
    usable = isinstance(label, str)
    return Target(prompt_id, None, label, label_item_key(label) if usable else "",
                  label_cache_key(label, prompt_id) if usable else _UNUSABLE, False, False, 2)


def target_of(prompt_id: Any, version: Any, label: Any) -> Target:
    if label is not None:
        return labeled(prompt_id, label)
    return current(prompt_id) if version is None else pinned(prompt_id, version)


def key_prompt_id(key: Hashable) -> Any:
    """The id a key in memory belongs to (``invalidate(id)`` finds every entry and answer of one prompt by it)."""
    if isinstance(key, tuple):
        return key[2] if len(key) == 3 else key[0]
    return key


def show_id(prompt_id: Any) -> str:
    text = prompt_id if isinstance(prompt_id, str) else repr(prompt_id)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= 120 else text[:117] + "..."
