"""Every option of the runtime client, its default and the environment variable that overrides the default
(``src/runtime/options.ts``). Precedence: an explicit option, then the environment variable, then :data:`DEFAULTS`.
"""
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from .errors import PromptServingError
from .schema.checksum import js_number, js_string
from .schema.env import Env

DEFAULTS: Dict[str, float] = {
    "max_age_seconds": 60,
    "max_entries": 1000,
    "not_found_max_age_seconds": 10,
    "stale_while_revalidate_seconds": 60,
    "stale_if_error_seconds": 3600,
    "catalog_max_age_seconds": 60,
    "request_timeout_ms": 2000,
    "max_attempts": 3,
    "l2_timeout_ms": 100,
    "epoch_poll_interval_ms": 500,  # a change reaches every process within 1 s (p99): docs/BENCHMARKS.md
}
"""Default of every numeric option (same values as the Node client's ``Defaults``)."""

ENV_VARS: Dict[str, str] = {
    "table_name": Env.table_name,
    "max_age_seconds": "PROMPT_SERVING_MAX_AGE_SECONDS",
    "max_entries": "PROMPT_SERVING_MAX_ENTRIES",
    "not_found_max_age_seconds": "PROMPT_SERVING_NOT_FOUND_MAX_AGE_SECONDS",
    "stale_while_revalidate_seconds": "PROMPT_SERVING_STALE_WHILE_REVALIDATE_SECONDS",
    "stale_if_error_seconds": "PROMPT_SERVING_STALE_IF_ERROR_SECONDS",
    "catalog_max_age_seconds": "PROMPT_SERVING_CATALOG_MAX_AGE_SECONDS",
    "request_timeout_ms": "PROMPT_SERVING_REQUEST_TIMEOUT_MS",
    "max_attempts": "PROMPT_SERVING_MAX_ATTEMPTS",
    "l2_timeout_ms": "PROMPT_SERVING_L2_TIMEOUT_MS",
    "epoch_poll_interval_ms": "PROMPT_SERVING_EPOCH_POLL_INTERVAL_MS",
}
"""Environment variables read by ``PromptClient()`` (the same names as the Node client's ``EnvVars``)."""

_MINIMUMS: Dict[str, float] = {
    "max_age_seconds": 0,
    "max_entries": 1,
    "not_found_max_age_seconds": 0,
    "stale_while_revalidate_seconds": 0,
    "stale_if_error_seconds": 0,
    "catalog_max_age_seconds": 0,
    "request_timeout_ms": 1,
    "max_attempts": 1,
    "l2_timeout_ms": 1,
    "epoch_poll_interval_ms": 10,
}

#: Node's timers hold at most 2**31 - 1 ms (a larger delay fires after 1 ms): the Node client rejects larger
#: timeouts, and this client takes the same bounds so one configuration means the same thing in both.
MAX_TIMER_MS = 2**31 - 1
_MAXIMUMS: Dict[str, float] = {
    "request_timeout_ms": MAX_TIMER_MS,
    "l2_timeout_ms": MAX_TIMER_MS,
    "epoch_poll_interval_ms": MAX_TIMER_MS,
}

_DECIMAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_RADIX = re.compile(r"^0([xXoObB])([0-9a-fA-F]+)$")


def js_to_number(raw: str) -> float:
    """JavaScript's ``Number(text)``: surrounding whitespace ignored, ``Infinity``, ``0x``/``0o``/``0b`` literals;
    anything else (``1_000``, ``nan``, ``12abc``) is NaN."""
    text = raw.strip()
    if text == "":
        return 0.0
    if text in ("Infinity", "+Infinity"):
        return math.inf
    if text == "-Infinity":
        return -math.inf
    m = _RADIX.match(text)
    if m:
        base = {"x": 16, "o": 8, "b": 2}[m.group(1).lower()]
        try:
            return float(int(m.group(2), base))
        except ValueError:
            return math.nan
    if _DECIMAL.match(text):
        return float(text)
    return math.nan


def _show(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return "NaN"
        if isinstance(value, float) and math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return js_number(value)
    return str(value)


@dataclass(frozen=True)
class ResolvedOptions:
    """Options with every default applied, times in seconds (floats)."""

    table_name: str
    max_age: float
    max_entries: int
    not_found_max_age: float
    stale_while_revalidate: float
    stale_if_error: float
    catalog_max_age: float
    request_timeout: float
    max_attempts: int
    l2_timeout: float
    epoch_poll_interval: float


def resolve_options(options: Mapping[str, Any], env: Optional[Mapping[str, str]] = None) -> ResolvedOptions:
    """Applies environment overrides and defaults; raises :class:`PromptServingError` naming the bad option or
    variable and the value."""
    env = os.environ if env is None else env
    table_name = options.get("table_name")
    if table_name is None:
        table_name = env.get(ENV_VARS["table_name"])
    if not table_name or not isinstance(table_name, str):
        raise PromptServingError(
            f"no table name: pass `table_name` or set the {ENV_VARS['table_name']} environment variable "
            "(the construct sets it)"
        )

    def number(name: str) -> float:
        minimum = _MINIMUMS[name]
        maximum = _MAXIMUMS.get(name)
        raw = env.get(ENV_VARS[name])
        explicit = options.get(name)
        if explicit is not None:
            value: Any = explicit
        elif raw is not None and raw.strip() != "":
            value = js_to_number(raw)
        else:
            value = DEFAULTS[name]
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value < minimum or (maximum is not None and value > maximum):
            where = f"`{name}`" if explicit is not None else f"{ENV_VARS[name]}={js_string(raw) if raw is not None else 'undefined'}"
            bound = f"of at least {_show(minimum)}" if maximum is None else f"from {_show(minimum)} to {_show(maximum)}"
            raise PromptServingError(f"{where} must be a number {bound}, got {_show(value)}")
        return float(value)

    return ResolvedOptions(
        table_name=table_name,
        max_age=number("max_age_seconds"),
        max_entries=int(math.floor(number("max_entries"))),
        not_found_max_age=number("not_found_max_age_seconds"),
        stale_while_revalidate=number("stale_while_revalidate_seconds"),
        stale_if_error=number("stale_if_error_seconds"),
        catalog_max_age=number("catalog_max_age_seconds"),
        request_timeout=number("request_timeout_ms") / 1000.0,
        max_attempts=int(math.floor(number("max_attempts"))),
        l2_timeout=number("l2_timeout_ms") / 1000.0,
        epoch_poll_interval=number("epoch_poll_interval_ms") / 1000.0,
    )
