"""Read provenance (``src/runtime/provenance.ts``): where each prompt a client returns came from, and the optional
per-read hook with its helpers.

Every served prompt carries ``provenance`` (``source``, ``stale``, ``read_at``, ``age_seconds``): a small immutable
object built once per copy (the copy read from the table or L2, its in-memory variant, its stale variant), so a cached
read allocates nothing for it. ``on_read(info, client)``, a client option, is called once per successful
``get_prompt``; when it is not set the read path only compares it with ``None``. The helpers turn the hook into a
structured log line, CloudWatch EMF metrics (:mod:`.read_metrics`), or OpenTelemetry span attributes;
``combine_read_hooks`` runs several.

Thread safety: these helpers keep no state.
"""
import json
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, NamedTuple, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .client import PromptClient

ReadSource = str
"""The tier that answered a read: ``"l1"`` (memory), ``"l2"`` (the shared cache), ``"table"`` or ``"fallback"``."""

class Provenance:
    """Where a served prompt came from. Immutable."""

    __slots__ = ("source", "stale", "read_at", "_clock")

    source: str
    """The tier that answered the read that returned this prompt: ``l1``, ``l2``, ``table`` or ``fallback``."""
    stale: bool
    """``True`` when the copy is past ``max_age_seconds`` (stale-while-revalidate, stale-if-error) or a fallback."""
    read_at: float
    """When this copy was read from its source (epoch seconds; for an L2 fill, the reader's table read behind it)."""
    _clock: Callable[[], float]

    def __init__(self, source: str, stale: bool, read_at: float, clock: Callable[[], float] = time.time) -> None:
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "stale", stale)
        object.__setattr__(self, "read_at", read_at)
        object.__setattr__(self, "_clock", clock)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("provenance is immutable")

    @property
    def age_seconds(self) -> float:
        """Seconds from ``read_at`` to now (computed when read; never negative)."""
        return max(0.0, self._clock() - self.read_at)

    def with_source(self, source: str, stale: bool) -> "Provenance":
        return Provenance(source, stale, self.read_at, self._clock)

    def __repr__(self) -> str:
        return f"Provenance(source={self.source!r}, stale={self.stale!r}, read_at={self.read_at!r})"


class ReadInfo(NamedTuple):
    """What ``on_read`` receives for each successful ``get_prompt`` (built only when a hook is set). Immutable (a
    named tuple: cheap to build on every read)."""

    table_name: str
    prompt_id: str
    version: int
    """The version number served: with a rollout, the served arm's version (0 for a fallback)."""
    requested_version: Optional[int]
    """The exact version asked for; ``None`` for CURRENT."""
    checksum: str
    source: str
    stale: bool
    age_seconds: float
    label: Optional[str] = None
    """The label read (``get_prompt(id, label=...)``); ``None`` for CURRENT and exact versions."""
    rollout_id: Optional[str] = None
    """The label's rollout, while one is in progress; ``None`` without (or for a fallback)."""
    arm: Optional[str] = None
    """The rollout arm served (``"A"``: the label's own version, ``"B"``: the candidate); ``None`` without."""


OnRead = Callable[[ReadInfo, "PromptClient"], None]
"""Called once per successful read; an exception it raises is logged once and never fails the read."""


def read_info(table_name: str, prompt: Any, requested_version: Optional[int]) -> ReadInfo:
    p = prompt.provenance
    rollout = prompt.rollout
    if rollout is None:
        return ReadInfo(table_name, prompt.id, prompt.version, requested_version, prompt.checksum, p.source, p.stale,
                        p.age_seconds, prompt.label)
    return ReadInfo(table_name, prompt.id, prompt.version, requested_version, prompt.checksum, p.source, p.stale,
                    p.age_seconds, prompt.label, rollout.rollout_id, rollout.arm)


def combine_read_hooks(*hooks: Optional[OnRead]) -> OnRead:
    """Runs each hook in turn (a ``None`` is skipped, so optional helpers compose)."""
    chosen = [h for h in hooks if h is not None]

    def on_read(info: ReadInfo, client: "PromptClient") -> None:
        for hook in chosen:
            hook(info, client)

    return on_read


def stdout_line(line: str) -> None:
    """Writes one line on stdout, unprefixed (CloudWatch reads a pure JSON line as EMF or structured)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def log_reads(*, write: Optional[Callable[[str], None]] = None, level: str = "INFO") -> OnRead:
    """A hook that writes one structured JSON line per read (on stdout by default, unprefixed so CloudWatch parses it):
    ``{"level": "INFO", "message": "prompt read", "promptId": ..., "version": ..., "source": ..., "stale": ...,
    "ageSeconds": ..., "checksum": ...}``, plus ``requestedVersion`` for an exact version, ``label`` for a labeled read,
    and ``rolloutId`` and ``arm`` while the label has a rollout, each only when set (the Node helper's fields, word for
    word).

    Example::

        prompts = PromptClient(on_read=log_reads())
    """
    out = write or stdout_line

    def on_read(info: ReadInfo, client: "PromptClient") -> None:
        line: Dict[str, Any] = {
            "level": level, "message": "prompt read", "promptId": info.prompt_id, "version": info.version,
            "source": info.source, "stale": info.stale, "ageSeconds": round(info.age_seconds, 3), "checksum": info.checksum,
        }
        if info.requested_version is not None:
            line["requestedVersion"] = info.requested_version
        if info.label is not None:
            line["label"] = info.label
        if info.rollout_id is not None:
            line["rolloutId"] = info.rollout_id
            line["arm"] = info.arm
        out(json.dumps(line, ensure_ascii=False))

    return on_read


def otel_read_attributes(load: Optional[Callable[[], Any]] = None) -> Optional[OnRead]:
    """A hook that sets ``gen_ai.prompt.name``, ``gen_ai.prompt.version`` (the served arm's version), ``prompt.source``,
    ``prompt.stale`` and ``prompt.age_seconds``, and for a labeled read ``prompt.label``, with ``prompt.rollout.id`` and
    ``prompt.rollout.arm`` while it has a rollout, on the current OpenTelemetry span of each read, or ``None`` when
    ``opentelemetry-api``
    cannot be imported (it is never a dependency of this package). Pass the result straight to the client: ``None``
    leaves the hook unset.

    Example::

        prompts = PromptClient(on_read=otel_read_attributes())
    """
    try:
        trace = load() if load is not None else _import_trace()
    except ImportError:
        return None
    get_span = getattr(trace, "get_current_span", None)
    if not callable(get_span):
        return None

    def on_read(info: ReadInfo, client: "PromptClient") -> None:
        span = get_span()
        if span is not None and span.is_recording():
            attributes: Dict[str, Any] = {
                "gen_ai.prompt.name": info.prompt_id,
                "gen_ai.prompt.version": info.version,
                "prompt.source": info.source,
                "prompt.stale": info.stale,
                "prompt.age_seconds": info.age_seconds,
            }
            if info.label is not None:
                attributes["prompt.label"] = info.label
            if info.rollout_id is not None:
                attributes["prompt.rollout.id"] = info.rollout_id
                attributes["prompt.rollout.arm"] = info.arm
            span.set_attributes(attributes)

    return on_read


def _import_trace() -> Any:
    from opentelemetry import trace  # type: ignore[import-not-found,unused-ignore]

    return trace
