"""The EMF helper of the read hook (``src/runtime/provenance.ts``'s ``emfReadMetrics``): the reads each tier served,
from the ``on_read`` hook (:mod:`.provenance`), as CloudWatch Embedded Metric Format lines, one per table.

Thread safety: sums under a lock; any number of clients and threads may share one helper.
"""
import json
import os
import threading
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from .client import PromptClient

from .provenance import ReadInfo, stdout_line
from .schema.env import Env
from .stats import READER_METRICS_DIMENSION, READER_METRICS_NAMESPACE

READER_READ_METRICS = {
    "served_l1": "ReaderServedL1",
    "served_l2": "ReaderServedL2",
    "served_table": "ReaderServedTable",
    "served_fallback": "ReaderServedFallback",
    "served_stale": "ReaderServedStale",
    "table_reads": "ReaderTableReads",
    "l2_errors": "ReaderL2Errors",
}
"""The EMF helper's metric names (``ReaderReadMetric`` in ``src/schema/metrics.ts``), in the order they are written."""


class EmfReadMetrics:
    """CloudWatch Embedded Metric Format metrics of the reads (``READER_READ_METRICS``): reads served by each tier,
    stale and fallback serves, table reads and L2 errors (from the client's ``stats()``, counted from the client's
    creation), summed in memory per table and written as one EMF line per table every ``flush_interval_seconds`` (at
    the first read after it), at once for a read served from ``fallback`` (so the fallback alarm sees it), and by
    ``flush()`` (call it at the end of a handler).

    Labels and rollout arms are not metric dimensions: each would multiply the metrics by the labels (and rollouts)
    the readers use, and a rollout id is new per rollout. The EMF line stays one series per table; which label and arm
    served each read is in the log line (``log_reads``) and the span (``otel_read_attributes``).

    Example::

        metrics = emf_read_metrics()
        prompts = PromptClient(on_read=metrics.on_read)
    """

    def __init__(self, *, flush_interval_seconds: float = 60, table_name: Optional[str] = None,
                 namespace: str = READER_METRICS_NAMESPACE, write: Optional[Callable[[str], None]] = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._interval = flush_interval_seconds
        self._write = write or stdout_line
        self._namespace = namespace
        self._fixed_table = table_name
        self._clock = clock
        self._lock = threading.Lock()
        # per table (the EMF dimension): the reads counted since the last line, and each client reading it (by id)
        # with its stats at that line, from zero at the client's creation
        self._tables: Dict[str, _TableCounts] = {}
        self._client_tables: Dict[int, _TableCounts] = {}
        self._last_flush = clock()

    def on_read(self, info: ReadInfo, client: "PromptClient") -> None:
        due = False
        with self._lock:
            table = self._client_tables.get(id(client))
            if table is None:
                name = self._fixed_table or info.table_name or os.environ.get(Env.table_name, "")
                table = self._tables.get(name)
                if table is None:
                    table = self._tables[name] = _TableCounts()
                table.clients[id(client)] = (client, 0, 0)
                self._client_tables[id(client)] = table
            c = table.counts
            c["reads"] += 1
            c[info.source] += 1
            if info.stale and info.source != "fallback":
                c["stale"] += 1
            # a fallback serve is written at once: a Lambda that serves fallbacks may not read again for long (or ever)
            due = info.source == "fallback" or self._clock() - self._last_flush >= self._interval
        if due:
            self.flush()

    def flush(self) -> None:
        """Writes one EMF line per table with the counts since the last one (nothing for a table without reads)."""
        lines: List[str] = []
        with self._lock:
            self._last_flush = self._clock()
            for table_name, table in self._tables.items():
                table_reads = l2_errors = 0
                for key, (client, store_reads, errors) in list(table.clients.items()):
                    stats = client.stats()
                    table_reads += stats["store_reads"] - store_reads
                    l2_errors += stats["l2_errors"] - errors
                    table.clients[key] = (client, stats["store_reads"], stats["l2_errors"])
                c = table.counts
                if c["reads"] == 0 and table_reads == 0 and l2_errors == 0:
                    continue
                table.counts = _counts()
                values = dict(zip(READER_READ_METRICS.values(), (
                    c["l1"], c["l2"], c["table"], c["fallback"], c["stale"], table_reads, l2_errors)))
                line = {
                    "_aws": {
                        "Timestamp": int(self._last_flush * 1000),
                        "CloudWatchMetrics": [{
                            "Namespace": self._namespace,
                            "Dimensions": [[READER_METRICS_DIMENSION]],
                            "Metrics": [{"Name": name, "Unit": "Count"} for name in values],
                        }],
                    },
                    READER_METRICS_DIMENSION: table_name,
                    **values,
                }
                lines.append(json.dumps(line))
        for text in lines:
            self._write(text)


class _TableCounts:
    __slots__ = ("counts", "clients")

    def __init__(self) -> None:
        self.counts = _counts()
        self.clients: Dict[int, Tuple["PromptClient", int, int]] = {}


def _counts() -> Dict[str, int]:
    return {"reads": 0, "l1": 0, "l2": 0, "table": 0, "fallback": 0, "stale": 0}


def emf_read_metrics(*, flush_interval_seconds: float = 60, table_name: Optional[str] = None,
                     namespace: str = READER_METRICS_NAMESPACE,
                     write: Optional[Callable[[str], None]] = None) -> EmfReadMetrics:
    """The EMF helper (:class:`EmfReadMetrics`); pass its ``on_read`` to the client."""
    return EmfReadMetrics(flush_interval_seconds=flush_interval_seconds, table_name=table_name, namespace=namespace,
                          write=write)
