"""The Bloom-filter catalog's bit layout (``src/schema/catalog.ts``), bit-exact with the Node implementation.

Index i of id x: ``(h1 + i*h2) mod bits`` for i in 0..hashes-1, h1 and h2 the first and second big-endian uint32
of SHA-256(x) (UTF-8); bit j is bit ``j mod 8`` (least significant first) of byte ``floor(j/8)``.
"""
import hashlib
import math
from typing import Any, Iterable, List, Optional, Tuple

BLOOM_FALSE_POSITIVE_RATE = 0.01
BLOOM_MIN_BITS = 1024
BLOOM_MAX_HASHES = 16


def _js_round(x: float) -> int:
    """JavaScript's ``Math.round`` (halves round up, not to even)."""
    return math.floor(x + 0.5)


def bloom_parameters(count: int) -> Tuple[int, int]:
    """Filter size for ``count`` ids at a 1 % false-positive rate: ``(bits, hashes)``, bits a multiple of 8."""
    n = max(1, count)
    ideal = math.ceil((-n * math.log(BLOOM_FALSE_POSITIVE_RATE)) / (math.log(2) * math.log(2)))
    bits = max(BLOOM_MIN_BITS, math.ceil(ideal / 8) * 8)
    hashes = min(BLOOM_MAX_HASHES, max(1, _js_round((bits / n) * math.log(2))))
    return bits, hashes


def bloom_indexes(prompt_id: str, bits: int, hashes: int) -> List[int]:
    """Bit indexes of ``prompt_id``. Raises ``UnicodeEncodeError`` for a string with unpaired surrogates."""
    digest = hashlib.sha256(prompt_id.encode("utf-8")).digest()
    h1 = int.from_bytes(digest[0:4], "big")
    h2 = int.from_bytes(digest[4:8], "big")
    return [(h1 + i * h2) % bits for i in range(hashes)]


def bloom_build(ids: Iterable[str], bits: int, hashes: int) -> bytes:
    """The filter bytes for ``ids``."""
    out = bytearray((bits + 7) // 8)
    for prompt_id in ids:
        for j in bloom_indexes(prompt_id, bits, hashes):
            out[j >> 3] |= 1 << (j & 7)
    return bytes(out)


def bloom_might_contain(data: bytes, bits: int, hashes: int, prompt_id: str) -> bool:
    """Whether the filter may contain ``prompt_id`` (``False`` means certainly absent)."""
    for j in bloom_indexes(prompt_id, bits, hashes):
        byte = data[j >> 3] if (j >> 3) < len(data) else 0
        if byte & (1 << (j & 7)) == 0:
            return False
    return True


BLOOM_MAX_BITS = 400 * 1024 * 8
"""Largest filter an item can hold (DynamoDB's 400 KB item limit), as ``src/schema/catalog.ts``."""

_MAX_SAFE_INTEGER = 2**53 - 1


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def catalog_problem(bloom: Any, bits: Any, hashes: Any, count: Any, revision: Any = None) -> Optional[str]:
    """Why a catalog item cannot be verified, or ``None``: the rules of ``catalogProblem`` in
    ``src/schema/catalog.ts`` (types and sizes, a bounded hash count, set bits consistent with ``count``). A reader
    ignores a catalog that fails them (fail open: it never rejects a real prompt); the next sync repairs it."""
    if not isinstance(bloom, (bytes, bytearray)):
        return "`bloom` must be binary"
    if not _whole(bits) or bits < 8 or bits > BLOOM_MAX_BITS:
        return f"`bloom_bits` must be a whole number from 8 to {BLOOM_MAX_BITS}"
    if len(bloom) != -(-bits // 8):
        return f"`bloom` must hold ceil(bloom_bits / 8) = {-(-bits // 8)} bytes, got {len(bloom)}"
    if not _whole(hashes) or hashes < 1 or hashes > BLOOM_MAX_HASHES:
        return f"`bloom_hashes` must be a whole number from 1 to {BLOOM_MAX_HASHES}"
    if not _whole(count) or count < 0 or count > _MAX_SAFE_INTEGER:
        return "`count` must be a whole number, at least 0"
    if revision is not None and (not _whole(revision) or revision < 0 or revision > _MAX_SAFE_INTEGER):
        return "`revision` must be a whole number, at least 0"
    if bits % 8 and bloom[-1] >> (bits % 8):
        return "bits at or beyond `bloom_bits` are set"
    set_bits = sum(bin(b).count("1") for b in bloom)
    if count == 0 and set_bits > 0:
        return "`count` is 0 but the filter has set bits"
    if count > 0 and set_bits == 0:
        return f"`count` is {count} but the filter is empty"
    if set_bits > count * hashes:
        return f"the filter has {set_bits} set bits, more than count × bloom_hashes = {count * hashes}"
    return None
