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
    """``render(variables)`` was refused: a ``{{placeholder}}`` without a value (``missing``), a variable the prompt
    neither uses nor declares (``extra``, unless ``allow_extra=True``), or a value of a type the variable does not take
    (``invalid``). Every problem is listed at once; nothing is filled."""

    prompt_id: str
    version: int
    """The version number of the prompt that refused the variables (0 for a fallback)."""
    missing: Tuple[str, ...]
    """Every placeholder without a value, in order of first use."""
    extra: Tuple[str, ...]
    """Every variable given that the prompt neither uses nor declares, sorted (UTF-16 code units)."""
    invalid: Tuple[str, ...]
    """Every placeholder whose value is not a str, finite number or bool (or JSON, where opted in)."""

    def __init__(self, prompt_id: str, missing_variables: Sequence[str], *, version: int = 0,
                 extra: Sequence[str] = (), invalid: Sequence[str] = ()) -> None:
        parts = []
        if missing_variables:
            parts.append(f"missing variable{_s(missing_variables)} {_names(missing_variables)}")
        if extra:
            parts.append(f"unexpected variable{_s(extra)} {_names(extra)} (not in the template nor declared)")
        if invalid:
            parts.append(f"invalid value{_s(invalid)} for {_names(invalid)} (a value is a string, a finite number or a "
                         "boolean; any JSON value only for a name in json_variables)")
        super().__init__(f"cannot render prompt {show_name(prompt_id)} version {version}: " + "; ".join(parts))
        self.prompt_id = prompt_id
        self.version = version
        self.missing = tuple(missing_variables)
        self.extra = tuple(extra)
        self.invalid = tuple(invalid)

    @property
    def missing_variables(self) -> Tuple[str, ...]:
        """Same as ``missing`` (the name before strict rendering)."""
        return self.missing


def _s(names: Sequence[str]) -> str:
    return "s" if len(names) > 1 else ""


def _names(names: Sequence[str]) -> str:
    return ", ".join(show_name(n) for n in names)


def show_name(name: str) -> str:
    """A name as error messages show it (``src/runtime/errors.ts`` ``showName``): ``'name'``, every UTF-16 code unit
    outside printable ASCII (and ``'``, ``\\``) as ``\\uXXXX``."""
    units = name.encode("utf-16-be", "surrogatepass")
    out = []
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        out.append(chr(c) if 0x20 <= c < 0x7F and c not in (0x5C, 0x27) else f"\\u{c:04x}")
    return "'" + "".join(out) + "'"


class PromptStoreError(PromptServingError):
    """The serving table could not be read (unreachable, throttled past the retry budget, timed out, access denied)
    or returned an item that breaks the wire contract. The botocore error is chained as ``__cause__``.
    Raised only when no stale copy within ``stale_if_error_seconds`` could be served instead."""
