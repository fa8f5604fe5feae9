"""The wire contract (table schema v1, L2 v2), mirroring ``src/schema`` of the Node library.

This sub-package is the only code the Python client shares in spirit with the construct, the sync handler and
the Node client: key names, reserved ids, version formatting, checksum, Bloom parameters, environment names and
the L2 key/value formats. It imports nothing beyond the standard library.
"""
from .catalog import BLOOM_MAX_BITS, bloom_build, bloom_indexes, bloom_might_contain, bloom_parameters, catalog_problem
from .checksum import canonical_json, checksum, content_of
from .env import Env
from .keys import (
    CATALOG_ID,
    CURRENT,
    MAX_PROMPT_ID_BYTES,
    MAX_VERSION_NUMBER,
    PARTITION_KEY,
    PROMPT_ID_RULE,
    RESERVED_PREFIX,
    SCHEMA_VERSION,
    SORT_KEY,
    STATUS_ACTIVE,
    STATUS_DELETED,
    TEMPLATE_CHAT,
    TEMPLATE_TEXT,
    Attr,
    is_valid_prompt_id,
    parse_version_key,
    version_key,
)

__all__ = [
    "Attr",
    "CATALOG_ID",
    "CURRENT",
    "Env",
    "MAX_PROMPT_ID_BYTES",
    "MAX_VERSION_NUMBER",
    "PARTITION_KEY",
    "PROMPT_ID_RULE",
    "RESERVED_PREFIX",
    "SCHEMA_VERSION",
    "SORT_KEY",
    "STATUS_ACTIVE",
    "STATUS_DELETED",
    "TEMPLATE_CHAT",
    "TEMPLATE_TEXT",
    "bloom_build",
    "bloom_indexes",
    "bloom_might_contain",
    "catalog_problem",
    "BLOOM_MAX_BITS",
    "bloom_parameters",
    "canonical_json",
    "checksum",
    "content_of",
    "is_valid_prompt_id",
    "parse_version_key",
    "version_key",
]
