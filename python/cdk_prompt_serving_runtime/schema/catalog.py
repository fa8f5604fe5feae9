"""The Bloom-filter catalog's bit layout (``src/schema.ts``), bit-exact with the Node implementation.

Index i of id x: ``(h1 + i*h2) mod bits`` for i in 0..hashes-1, h1 and h2 the first and second big-endian uint32
of SHA-256(x) (UTF-8); bit j is bit ``j mod 8`` (least significant first) of byte ``floor(j/8)``.
"""
import hashlib
import math
from typing import Iterable, List, Tuple

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
