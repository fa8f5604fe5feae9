"""The runtime client's error family (``src/runtime/errors.ts``).

Every error the client raises is a :class:`PromptServingError`; catch the subclasses to tell "no such prompt"
from "bad variables" from "the table could not be read". Messages are the Node client's, word for word.
"""
from typing import Optional, Sequence, Tuple


class PromptServingError(Exception):
    """Base class of every error the runtime client raises (also used for invalid client configuration)."""


class PromptNotFoundError(PromptServingError):
    """The prompt does not exist, was deleted at the source (``status = DELETED``), is not in the catalog, or the
    id or version cannot exist (reserved ``#`` prefix, empty, too long, not a positive integer version)."""

    prompt_id: str
    """The prompt id asked for."""
    version: Optional[int]
    """The exact version asked for; ``None`` for the current version."""

    def __init__(self, prompt_id: str, version: Optional[int] = None, reason: Optional[str] = None) -> None:
        what = f"prompt '{prompt_id}'" if version is None else f"version {version} of prompt '{prompt_id}'"
        super().__init__(f"{what} not found" + (f": {reason}" if reason else ""))
        self.prompt_id = prompt_id
        self.version = version


class PromptRenderError(PromptServingError):
    """``render(variables)`` was called without a value for one or more ``{{placeholders}}``."""

    prompt_id: str
    missing_variables: Tuple[str, ...]
    """Every placeholder without a value, in order of first use."""

    def __init__(self, prompt_id: str, missing_variables: Sequence[str]) -> None:
        names = ", ".join(f"'{v}'" for v in missing_variables)
        plural = "s" if len(missing_variables) > 1 else ""
        super().__init__(f"cannot render prompt '{prompt_id}': missing variable{plural} {names}")
        self.prompt_id = prompt_id
        self.missing_variables = tuple(missing_variables)


class PromptStoreError(PromptServingError):
    """The serving table could not be read (unreachable, throttled past the retry budget, timed out, access denied)
    or returned an item that breaks the wire contract. The botocore error is chained as ``__cause__``.
    Raised only when no stale copy within ``stale_if_error_seconds`` could be served instead."""
