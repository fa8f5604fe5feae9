"""Canonical JSON and the content checksum (``src/schema/checksum.ts``), byte-identical with the Node implementation.

Canonical JSON: object keys sorted by UTF-16 code unit (JavaScript's default sort), no whitespace, numbers in
JavaScript's shortest round-trip form (``1.0`` prints as ``1``, ``1e21`` as ``1e+21``), strings escaped as
``JSON.stringify`` escapes them (non-ASCII kept, unpaired surrogates as ``\\uXXXX``).
"""
import hashlib
import json
import math
from typing import Any, Dict, Mapping

from .keys import METADATA_ATTRIBUTES


def js_number(value: float) -> str:
    """``String(value)`` of a JavaScript number: shortest round-trip digits, exponent only past 1e21 / below 1e-6."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(value, int):
        if abs(value) < 2**53:
            return str(value)
        value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"cannot canonicalise non-finite number {value}")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    r = repr(abs(value))  # shortest round-trip, like JavaScript's
    mantissa, _, exp = r.partition("e")
    digits_int, _, digits_frac = mantissa.partition(".")
    if digits_frac == "0":
        digits_frac = ""
    digits = (digits_int + digits_frac).lstrip("0")
    # decimal point position n: value = 0.digits * 10^n
    point = len(digits_int) + (int(exp) if exp else 0)
    if digits_int == "0":
        stripped = digits_frac.lstrip("0")
        point = -(len(digits_frac) - len(stripped)) + (int(exp) if exp else 0)
        digits = stripped
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    n = point
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp_s = ("+" if e >= 0 else "-") + str(abs(e))
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + exp_s
    return sign + out


def js_string(value: str) -> str:
    """``JSON.stringify`` of a string (well-formed: unpaired surrogates escaped)."""
    out = json.dumps(value, ensure_ascii=False)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in out):
        out = "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in out)
    return out


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def canonical_json(value: Any) -> str:
    """Keys sorted, no whitespace, ``None`` members of objects kept as ``null`` only where JSON has them."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError("binary values are not allowed in prompt content")
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    if isinstance(value, Mapping):
        keys = sorted((k for k in value.keys()), key=_utf16_key)
        return "{" + ",".join(js_string(k) + ":" + canonical_json(value[k]) for k in keys) + "}"
    raise TypeError(f"cannot canonicalise a value of type {type(value).__name__}")


def content_of(item: Mapping[str, Any]) -> Dict[str, Any]:
    """The content part of an item: everything but the metadata attributes."""
    return {k: v for k, v in item.items() if k not in METADATA_ATTRIBUTES}


def checksum(content: Mapping[str, Any]) -> str:
    """``sha256:`` + 64 lowercase hex digits of the canonical JSON of the prompt content."""
    data = canonical_json(content_of(content)).encode("utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(data).hexdigest()
