"""Wire contract of the L2 cache (``src/schema/l2.ts``), format ``v3``: keys, the two value classes, the epoch and
the scripts.

- Stream values (written only by the invalidation function) under ``cdk-prompt-serving:v3/<table>/<id>/<sort key>``:
  ``{"inc": <stream label>, "seq": <sequence number>, "writtenAt": <epoch ms>, "item": <DynamoDB JSON> | null}``,
  ordered by the token (``inc``, ``seq``); used only when ``inc`` is the epoch's incarnation.
- Fill values (written by readers) under ``cdk-prompt-serving:v3/<table>/#fill/<id>/<sort key>``:
  ``{"inc": <incarnation> | null, "fetchedAt": <epoch ms>, "item": <DynamoDB JSON>}``, stored for the reader's L1
  bound, trusted within ``max_age_seconds`` of ``fetchedAt`` (rejected when more than :data:`L2_MAX_CLOCK_SKEW_MS`
  in the future) and only while ``inc`` is still the epoch's incarnation.
- Epoch ``cdk-prompt-serving:v3/<table>/#epoch``: ``<counter> <incarnation>``.
"""
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from .keys import CATALOG_ID, CURRENT, PARTITION_KEY, RESERVED_PREFIX, SORT_KEY

L2_KEY_PREFIX = "cdk-prompt-serving:v3"
L2_VALUE_TTL_SECONDS = 24 * 60 * 60
"""Lifetime of a stream value: freshness comes from the write-through, the TTL bounds memory and a stopped writer."""
L2_MAX_CLOCK_SKEW_MS = 5_000
"""A fill stamped further than this in the future is not a value."""

L2_WRITE_THROUGH_SCRIPT = "\n".join(
    [
        "local cur = redis.pcall('GET', KEYS[1])",
        "if type(cur) == 'string' then",
        "  local ok, doc = pcall(cjson.decode, cur)",
        "  if ok and type(doc) == 'table' and type(doc.inc) == 'string' and type(doc.seq) == 'string'",
        "    and string.match(doc.seq, '^%d+$') then",
        "    local newer",
        "    if doc.inc ~= ARGV[1] then",
        "      newer = ARGV[1] > doc.inc",
        "    else",
        "      local a = string.gsub(ARGV[2], '^0+', '')",
        "      local b = string.gsub(doc.seq, '^0+', '')",
        "      if #a ~= #b then newer = #a > #b else newer = a > b end",
        "    end",
        "    if not newer then return 0 end",
        "  end",
        "end",
        "redis.call('SET', KEYS[1], ARGV[3], 'EX', tonumber(ARGV[4]))",
        "return 1",
    ]
)
"""The invalidation function's ordered write (Node sends it; here for the conformance check of its SHA-1)."""

L2_EPOCH_BUMP_SCRIPT = "\n".join(
    [
        "local cur = redis.pcall('GET', KEYS[1])",
        "local n, inc = 0, ARGV[1]",
        "if ARGV[3] and string.match(ARGV[3], '^%d+$') and #ARGV[3] < 15 then n = tonumber(ARGV[3]) end",
        "if type(cur) == 'string' then",
        "  local c, i = string.match(cur, '^(%d+) (%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%d)$')",
        "  if c and #c < 15 then n = tonumber(c) end",
        "  if i and i > inc and i <= ARGV[2] then inc = i end",
        "end",
        "n = n + 1",
        "redis.call('SET', KEYS[1], string.format('%d %s', n, inc))",
        "return n",
    ]
)

_INCARNATION = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}", re.ASCII)
_SEQUENCE = re.compile(r"\d{1,64}", re.ASCII)
_EPOCH = re.compile(r"(\d{1,15}) (\S+)", re.ASCII)


def l2_item_key(table_name: str, prompt_id: str, sort_key: str) -> str:
    return f"{L2_KEY_PREFIX}/{table_name}/{prompt_id}/{sort_key}"


def l2_catalog_key(table_name: str) -> str:
    return l2_item_key(table_name, CATALOG_ID, CURRENT)


def l2_fill_key(table_name: str, prompt_id: str, sort_key: str) -> str:
    return f"{L2_KEY_PREFIX}/{table_name}/{RESERVED_PREFIX}fill/{prompt_id}/{sort_key}"


def l2_epoch_key(table_name: str) -> str:
    return f"{L2_KEY_PREFIX}/{table_name}/{RESERVED_PREFIX}epoch"


def l2_key_pattern(table_name: str) -> str:
    return f"{L2_KEY_PREFIX}/{table_name}/*"


def l2_fill_pattern(table_name: str) -> str:
    return f"{L2_KEY_PREFIX}/{table_name}/{RESERVED_PREFIX}fill/*"


def l2_fill_ttl_seconds(max_age: float, stale_while_revalidate: float) -> int:
    """The lifetime of a fill (seconds): the reader's L1 bound, whole seconds; 0 (no fill) below 1 s of max age."""
    if max_age < 1:
        return 0
    return max(1, int(math.floor(max_age + stale_while_revalidate + 1e-9)))


@dataclass(frozen=True)
class StreamValue:
    inc: str
    seq: str
    written_at: float
    item: Optional[Dict[str, Any]]
    """The row in DynamoDB JSON; ``None``: the row was removed."""


@dataclass(frozen=True)
class FillValue:
    inc: Optional[str]
    """The epoch's incarnation when the reader filled it (``None``: none known); used only while it still is."""
    fetched_at: float
    """When the reader read the table (epoch ms), clamped to now."""
    item: Dict[str, Any]


def is_incarnation(value: Any) -> bool:
    return isinstance(value, str) and _INCARNATION.fullmatch(value) is not None


def is_sequence_number(value: Any) -> bool:
    return isinstance(value, str) and _SEQUENCE.fullmatch(value) is not None


def compare_tokens(a: Tuple[str, str], b: Tuple[str, str]) -> int:
    """Negative when token ``a`` (inc, seq) is older than ``b``, 0 equal, positive newer."""
    if a[0] != b[0]:
        return -1 if a[0] < b[0] else 1
    x, y = a[1].lstrip("0"), b[1].lstrip("0")
    if len(x) != len(y):
        return len(x) - len(y)
    return 0 if x == y else (-1 if x < y else 1)


def encode_fill_value(inc: Optional[str], fetched_at_ms: float, item: Mapping[str, Any]) -> str:
    """``JSON.stringify({inc, fetchedAt, item})``: compact, keys in this order."""
    fetched = int(fetched_at_ms) if float(fetched_at_ms).is_integer() else fetched_at_ms
    return json.dumps({"inc": inc, "fetchedAt": fetched, "item": item}, ensure_ascii=False, separators=(",", ":"))


def encode_stream_value(inc: str, seq: str, written_at_ms: float, item: Optional[Mapping[str, Any]]) -> str:
    written = int(written_at_ms) if float(written_at_ms).is_integer() else written_at_ms
    return json.dumps({"inc": inc, "seq": seq, "writtenAt": written, "item": item}, ensure_ascii=False, separators=(",", ":"))


def _parse_object(raw: Any) -> Optional[Dict[str, Any]]:
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _item_of(item: Any, prompt_id: str, sort_key: str) -> Optional[Dict[str, Any]]:
    if not isinstance(item, dict):
        return None
    pk, sk = item.get(PARTITION_KEY), item.get(SORT_KEY)
    if not isinstance(pk, dict) or pk.get("S") != prompt_id or not isinstance(sk, dict) or sk.get("S") != sort_key:
        return None
    return item


def _finite_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def decode_stream_value(raw: Any, prompt_id: str, sort_key: str) -> Optional[StreamValue]:
    """A stream value stored for ``prompt_id``/``sort_key``; ``None`` when it is not one."""
    value = _parse_object(raw)
    if value is None:
        return None
    inc: Any = value.get("inc")
    seq: Any = value.get("seq")
    written_at: Any = value.get("writtenAt")
    item: Any = value.get("item", 0)
    if not is_incarnation(inc) or not is_sequence_number(seq) or not _finite_number(written_at):
        return None
    if item is None:
        return StreamValue(inc, seq, float(written_at), None)
    parsed = _item_of(item, prompt_id, sort_key)
    return None if parsed is None else StreamValue(inc, seq, float(written_at), parsed)


def decode_fill_value(raw: Any, prompt_id: str, sort_key: str, now_ms: float) -> Optional[FillValue]:
    """A fill value stored for ``prompt_id``/``sort_key``; ``None`` when it is not one or is stamped more than
    :data:`L2_MAX_CLOCK_SKEW_MS` after ``now_ms`` (within it, clamped to ``now_ms``)."""
    value = _parse_object(raw)
    if value is None:
        return None
    inc: Any = value.get("inc", 0)
    fetched_at: Any = value.get("fetchedAt")
    if inc is not None and not is_incarnation(inc):
        return None
    if not _finite_number(fetched_at) or fetched_at > now_ms + L2_MAX_CLOCK_SKEW_MS:
        return None
    parsed = _item_of(value.get("item"), prompt_id, sort_key)
    return None if parsed is None else FillValue(inc, min(float(fetched_at), now_ms), parsed)


def epoch_incarnation(raw: Any) -> Optional[str]:
    """The incarnation an epoch value names; ``None`` when the text is not an epoch."""
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", "replace")
    if not isinstance(raw, str):
        return None
    match = _EPOCH.fullmatch(raw)
    return match.group(2) if match is not None and is_incarnation(match.group(2)) else None
