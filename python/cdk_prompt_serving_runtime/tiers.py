"""The remote tiers of one read (``src/runtime/tiers.ts``): the shared L2 (wire contract v3, ``schema.l2``), then
the table, then a fill of the L2 so the next reader is spared the table read. Two classes of L2 value: the stream's
(written through by the invalidation function, ordered by the stream's token, used only when their table
incarnation is the epoch's) and the readers' own fills (trusted only within ``max_age_seconds`` of their table read,
stored for the L1 bound). The catalog goes through here too, so a fleet cold start reads it from the L2.

Thread safety: shared by every thread of a client; the L2 adapter and the botocore client are thread-safe.
"""
import logging
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .ddb_codec import from_item, to_json_item
from .errors import PromptStoreError
from .l2 import PromptCacheL2
from .schema.keys import parse_version_key
from .schema.l2 import decode_fill_value, decode_stream_value, encode_fill_value, l2_fill_key, l2_fill_ttl_seconds, l2_item_key
from .stats import Counters
from .store import TableReader

logger = logging.getLogger(__name__)

Token = Tuple[str, str]
"""A stream value's ordering token: (incarnation, sequence number)."""


class Shared:
    """A usable L2 value: ``item`` decoded (``None``: the stream says the row was removed), where it came from."""

    __slots__ = ("item", "token", "fetched_at", "source")

    def __init__(self, item: Optional[Dict[str, Any]], token: Optional[Token], fetched_at: float, source: str) -> None:
        self.item = item
        self.token = token
        self.fetched_at = fetched_at
        self.source = source


class SharedReader:
    """Reads items from the L2 and the table, and fills the L2 after a table read.

    :param incarnation: the epoch's incarnation as last read (no read of its own; used for fills)
    :param first_incarnation: the same, after the epoch's first read (used before a stream value is trusted)
    """

    def __init__(self, table: TableReader, l2: Optional[PromptCacheL2], max_age: float, stale_while_revalidate: float,
                 counters: Counters, clock: Callable[[], float], incarnation: Callable[[], Optional[str]],
                 first_incarnation: Callable[[], Optional[str]]) -> None:
        self.table = table
        self.l2 = l2
        self.write_through = bool(getattr(l2, "write_through", False))
        self._max_age = max_age
        self._stale_while_revalidate = stale_while_revalidate
        self._counters = counters
        self._clock = clock
        self._incarnation = incarnation
        self._first_incarnation = first_incarnation

    def read_shared(self, prompt_id: str, sort_key: str, stream_only: bool = False) -> Optional[Shared]:
        """The L2's usable value of an item: the stream value when its incarnation is the epoch's, else a fill read
        from the table less than ``max_age_seconds`` ago (a pinned version's fill whatever its age); ``None`` when
        there is none (no L2, absent, another incarnation, too old, unreadable, failing or slow L2).
        ``stream_only``: the stream value alone (the epoch's re-validation)."""
        l2 = self.l2
        if l2 is None:
            return None
        table = self.table.table_name
        incarnation = self._first_incarnation() if self.write_through else None
        try:
            if incarnation is not None:
                stream = decode_stream_value(l2.get(l2_item_key(table, prompt_id, sort_key)), prompt_id, sort_key)
                if stream is not None and stream.inc == incarnation:
                    item = decode_item(stream.item) if stream.item is not None else None
                    if stream.item is None or item is not None:
                        self._counters.l2_hits += 1
                        return Shared(item, (stream.inc, stream.seq), self._clock(), "stream")
            if not stream_only:
                now = self._clock()
                fill = decode_fill_value(l2.get(l2_fill_key(table, prompt_id, sort_key)), prompt_id, sort_key, now * 1000)
                if (fill is not None and fill.inc == incarnation
                        # only immutable version items whatever the fill's age; pointers and labels within max_age
                        and (parse_version_key(sort_key) is not None or now * 1000 < fill.fetched_at + self._max_age * 1000)):
                    item = decode_item(fill.item)
                    if item is not None:
                        self._counters.l2_hits += 1
                        return Shared(item, None, fill.fetched_at / 1000, "fill")
            self._counters.l2_misses += 1
        except Exception as err:  # noqa: BLE001 - an L2 failure never fails a read
            self._counters.l2_errors += 1
            logger.debug("L2 read of %s/%s failed: %s", prompt_id, sort_key, err)
        return None

    def read_table(self, prompt_id: str, sort_key: str, deadline: float) -> Tuple[Optional[Dict[str, Any]], float]:
        """One ``GetItem`` (retried within ``deadline``), then a fill of the L2: the decoded item (``None`` when the table
        has none) and when it was read.

        :raises PromptStoreError: if the table cannot be read, or the item breaks the wire contract
        """
        fetched_at = self._clock()
        raw = self.table.get_item(prompt_id, sort_key, deadline)
        try:
            item = from_item(raw) if raw is not None else None
        except (TypeError, ValueError) as err:
            raise PromptStoreError(f"item {prompt_id}/{sort_key} breaks the wire contract: {err}") from err
        if raw is not None:
            self.fill(prompt_id, sort_key, raw, fetched_at)
        return item, fetched_at

    def fill(self, prompt_id: str, sort_key: str, raw_item: Mapping[str, Any], fetched_at: float) -> None:
        """Fills the L2 after a table read, for the L1 bound (``max_age_seconds + stale_while_revalidate_seconds``);
        failures are only counted."""
        l2 = self.l2
        if l2 is None:
            return
        ttl = l2_fill_ttl_seconds(self._max_age, self._stale_while_revalidate)
        if ttl < 1:
            return
        try:
            value = encode_fill_value(self._incarnation() if self.write_through else None, round(fetched_at * 1000),
                                      to_json_item(raw_item))
            l2.set(l2_fill_key(self.table.table_name, prompt_id, sort_key), value, ttl)
        except Exception as err:  # noqa: BLE001
            self._counters.l2_errors += 1
            logger.debug("L2 fill of %s/%s failed: %s", prompt_id, sort_key, err)


def decode_item(item: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """An L2 item decoded; ``None`` when it holds attribute values no DynamoDB item can (a forged value)."""
    try:
        return from_item(item)
    except Exception:  # noqa: BLE001
        return None
