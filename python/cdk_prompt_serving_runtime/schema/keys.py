"""Keys, versions, reserved ids and attribute names of table schema v2 (``src/schema/keys.ts``; v2 added labels and
rollouts, ``labels.py``)."""
import re
from typing import Any, Optional

SCHEMA_VERSION = 2
"""Version of the item layout; written on every pointer as ``schema_version``. 2: label items (``LABEL#<name>``) with
their ``rollout`` map, and audit records (``AUDIT#…``), beside the v1 items (unchanged)."""

PARTITION_KEY = "prompt_id"
SORT_KEY = "version"
CURRENT = "CURRENT"
"""Sort key of the pointer item: a full copy of the active version."""
RESERVED_PREFIX = "#"
"""Prompt ids starting with this prefix are reserved for the library's own items."""
CATALOG_ID = "#catalog"

VERSION_DIGITS = 6
MAX_VERSION_NUMBER = 10**VERSION_DIGITS - 1

MAX_PROMPT_ID_BYTES = 1024
"""Most bytes of UTF-8 in a prompt id (src/schema/keys.ts ``MAX_PROMPT_ID_BYTES``): DynamoDB limits the sort key
to 1,024 bytes and the partition key to 2,048, and an id is both (the catalog's and the claims' sort keys)."""

PROMPT_ID_RULE = f"1 to {MAX_PROMPT_ID_BYTES:,} bytes of UTF-8, not starting with '{RESERVED_PREFIX}'"
"""The prompt id rule in one phrase (src/schema/keys.ts ``PROMPT_ID_RULE``, word for word), for messages that reject an
id without saying which rule it broke (the client's not-found reason)."""

STATUS_ACTIVE = "ACTIVE"
STATUS_DELETED = "DELETED"
TEMPLATE_TEXT = "TEXT"
TEMPLATE_CHAT = "CHAT"


class Attr:
    """Attribute names of the contract (snake_case on the wire)."""

    prompt_id = PARTITION_KEY
    version = SORT_KEY
    version_number = "version_number"
    latest_version_number = "latest_version_number"
    checksum = "checksum"
    status = "status"
    source = "source"
    source_version = "source_version"
    source_checksum = "source_checksum"
    source_revision = "source_revision"
    source_updated_at = "source_updated_at"
    source_read_at = "source_read_at"
    synced_at = "synced_at"
    activated_at = "activated_at"
    activated_by = "activated_by"
    schema_version = "schema_version"
    template_type = "template_type"
    text = "text"
    messages = "messages"
    system = "system"
    input_variables = "input_variables"
    model_id = "model_id"
    inference_config = "inference_config"
    bloom = "bloom"
    bloom_bits = "bloom_bits"
    bloom_hashes = "bloom_hashes"
    count = "count"
    revision = "revision"


METADATA_ATTRIBUTES = frozenset(
    [
        Attr.prompt_id,
        Attr.version,
        Attr.version_number,
        Attr.latest_version_number,
        Attr.checksum,
        Attr.status,
        Attr.source,
        Attr.source_version,
        Attr.source_checksum,
        Attr.source_revision,
        Attr.source_updated_at,
        Attr.source_read_at,
        Attr.synced_at,
        Attr.activated_at,
        Attr.activated_by,
        Attr.schema_version,
        Attr.revision,
    ]
)
"""Attributes that describe an item rather than the prompt; everything else is content (and feeds the checksum)."""

_VERSION_KEY = re.compile(r"^v(\d{6})$")


def version_key(version_number: int) -> str:
    """Sort key of version ``n``: ``v`` + n zero-padded to 6 digits. Raises ``ValueError`` out of range."""
    if isinstance(version_number, bool) or not isinstance(version_number, int) or not 1 <= version_number <= MAX_VERSION_NUMBER:
        raise ValueError(f"version number must be an integer from 1 to {MAX_VERSION_NUMBER}, got {version_number!r}")
    return "v" + str(version_number).zfill(VERSION_DIGITS)


def parse_version_key(key: str) -> Optional[int]:
    """Inverse of :func:`version_key`; ``None`` for anything that is not a version sort key."""
    m = _VERSION_KEY.match(key) if isinstance(key, str) else None
    if m is None or key.endswith("\n"):
        return None
    n = int(m.group(1))
    return n if n >= 1 else None


def is_valid_prompt_id(prompt_id: Any) -> bool:
    """Whether ``prompt_id`` can name a prompt (src/schema/keys.ts ``promptIdProblem``): a non-empty string, not
    starting with ``#`` (reserved), well-formed Unicode (a lone surrogate cannot be encoded as UTF-8) and at most
    :data:`MAX_PROMPT_ID_BYTES` bytes of UTF-8 (bytes, not characters)."""
    if not isinstance(prompt_id, str) or not prompt_id or prompt_id.startswith(RESERVED_PREFIX):
        return False
    try:
        return len(prompt_id.encode("utf-8")) <= MAX_PROMPT_ID_BYTES
    except UnicodeEncodeError:
        return False
