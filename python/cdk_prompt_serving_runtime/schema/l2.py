"""Wire contract of the L2 cache (``src/schema/l2.ts``): keys, values, epoch and the ordering script.

- Item key ``cdk-prompt-serving:v2/<table>/<prompt id>/<sort key>`` (``…/CURRENT``, ``…/v000003``,
  ``…/#catalog/CURRENT``); epoch key ``cdk-prompt-serving:v2/<table>/#epoch`` (an integer as text).
- Value: JSON ``{"revision": <int>, "fetchedAt": <epoch ms>, "item": <DynamoDB JSON, binary as base64>}``.
- Ordering rule: a write replaces the stored value only if its revision is greater (equal keeps; an unparseable
  stored value is replaced), by :data:`L2_PUT_IF_NEWER_SCRIPT` over one key (cluster-safe).
"""
import json
import math
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from .keys import CATALOG_ID, CURRENT, PARTITION_KEY, RESERVED_PREFIX

L2_KEY_PREFIX = "cdk-prompt-serving:v2"
L2_VALUE_TTL_SECONDS = 24 * 60 * 60
"""Lifetime of every L2 value: freshness comes from the write-through, the TTL only bounds growth."""

L2_PUT_IF_NEWER_SCRIPT = "\n".join(
    [
        "local cur = redis.call('GET', KEYS[1])",
        "if cur then",
        "  local ok, doc = pcall(cjson.decode, cur)",
        "  if ok and type(doc) == 'table' then",
        "    local rev = tonumber(doc['revision'])",
        "    if rev and rev >= tonumber(ARGV[1]) then return 0 end",
        "  end",
        "end",
        "redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))",
        "return 1",
    ]
)
"""KEYS[1] = item key, ARGV[1] = revision, ARGV[2] = value, ARGV[3] = TTL seconds; returns 1 written, 0 kept. The
text is part of the contract: both clients send exactly this script and so share its SHA-1."""

_MAX_SAFE_INTEGER = 2**53 - 1


def l2_item_key(table_name: str, prompt_id: str, sort_key: str) -> str:
    return f"{L2_KEY_PREFIX}/{table_name}/{prompt_id}/{sort_key}"


def l2_catalog_key(table_name: str) -> str:
    return l2_item_key(table_name, CATALOG_ID, CURRENT)


def l2_epoch_key(table_name: str) -> str:
    return f"{L2_KEY_PREFIX}/{table_name}/{RESERVED_PREFIX}epoch"


def l2_key_pattern(table_name: str) -> str:
    return f"{L2_KEY_PREFIX}/{table_name}/*"


@dataclass(frozen=True)
class L2Value:
    revision: int
    """The item's ``revision`` attribute (0 when absent)."""
    fetched_at: float
    """When the writer read the item (epoch ms), clamped to the reader's now."""
    item: Dict[str, Any]
    """The item in DynamoDB JSON (binary as base64 text)."""


def encode_l2_value(revision: int, fetched_at_ms: float, item: Mapping[str, Any]) -> str:
    """``JSON.stringify({revision, fetchedAt, item})``: compact, keys in this order."""
    fetched = int(fetched_at_ms) if float(fetched_at_ms).is_integer() else fetched_at_ms
    return json.dumps(
        {"revision": revision, "fetchedAt": fetched, "item": item}, ensure_ascii=False, separators=(",", ":")
    )


def _safe_int(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return abs(v) <= _MAX_SAFE_INTEGER
    return isinstance(v, float) and v.is_integer() and abs(v) <= _MAX_SAFE_INTEGER


def decode_l2_value(raw: Any, prompt_id: str, now_ms: float) -> Optional[L2Value]:
    """Parses an L2 value stored for ``prompt_id``; ``None`` when it is not one (another format, another item, a
    negative or fractional revision, corrupt). ``fetchedAt`` is clamped to ``now_ms``."""
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
    if not isinstance(value, dict):
        return None
    revision: Any = value.get("revision")
    fetched_at, item = value.get("fetchedAt"), value.get("item")
    if not _safe_int(revision) or revision < 0:
        return None
    if isinstance(fetched_at, bool) or not isinstance(fetched_at, (int, float)) or not math.isfinite(fetched_at):
        return None
    if not isinstance(item, dict):
        return None
    pk = item.get(PARTITION_KEY)
    if not isinstance(pk, dict) or pk.get("S") != prompt_id:
        return None
    return L2Value(int(revision), min(float(fetched_at), now_ms), item)


def item_revision(item: Mapping[str, Any]) -> int:
    """The ``revision`` of an item in DynamoDB JSON (0 when absent or not a whole number ≥ 0)."""
    raw = item.get("revision")
    text = raw.get("N") if isinstance(raw, dict) else None
    if not isinstance(text, str):
        return 0
    try:
        n = float(text)
    except ValueError:
        return 0
    return int(n) if _safe_int(n) and n >= 0 else 0
