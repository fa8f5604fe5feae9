"""What :meth:`PromptClient.stats` reports (``src/runtime/stats.ts``)."""
import json
import sys
import time
from dataclasses import dataclass, fields
from typing import Dict

#: The readers' metric when they run without the L2 (``src/schema/metrics.ts``: same namespace, name, dimension).
READER_METRICS_NAMESPACE = "CdkPromptServing"
READER_CACHE_UNAVAILABLE = "ReaderCacheUnavailable"
READER_METRICS_DIMENSION = "TableName"


@dataclass
class Counters:
    """The mutable counters behind ``stats()``. Increments happen without a lock, so under heavy concurrency a
    counter may, rarely, lose an increment; they are for observability, not accounting."""

    hits: int = 0
    misses: int = 0
    stale_serves: int = 0
    negative_hits: int = 0
    catalog_rejections: int = 0
    store_reads: int = 0
    store_errors: int = 0
    retries: int = 0
    catalog_loads: int = 0
    l2_hits: int = 0
    l2_misses: int = 0
    l2_errors: int = 0
    l2_unavailable: int = 0
    l2_refreshes: int = 0
    epoch_polls: int = 0

    def as_dict(self) -> Dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


STATS_DOC = {
    "hits": "reads answered from memory with a fresh copy",
    "misses": "reads that needed a load (L2 or table), joined or started",
    "stale_serves": "reads answered with an expired copy, flagged stale",
    "negative_hits": "reads answered not-found from memory (a recent not-found from the table)",
    "catalog_rejections": "reads answered not-found because the catalog rules the id out",
    "store_reads": "GetItem requests sent, catalog reads and retries included",
    "store_errors": "table reads that failed after their retries",
    "retries": "table read attempts retried after throttling or a transient network error",
    "catalog_loads": "catalog reads that completed (found or absent)",
    "l2_hits": "loads answered by the L2",
    "l2_misses": "loads the L2 had no usable value for",
    "l2_errors": "L2 calls that raised or timed out (the read went on to the table)",
    "l2_unavailable": "1 when the L2 is configured but redis-py cannot be imported or the cache cannot be reached at "
    "start-up (logged once as an ERROR naming the fix, with the ReaderCacheUnavailable metric; reads go to the table)",
    "l2_refreshes": "memory copies replaced by a newer L2 revision after the epoch moved",
    "epoch_polls": "reads of the L2 freshness epoch",
    "evictions": "prompts dropped by the size bound",
    "entries": "prompts held in memory now (fresh or expired)",
}


def report_l2_unavailable(counters: Counters, reason: str, table_name: str) -> None:
    """Counts a reader running without its L2 and says so once: one JSON line on stdout, level ERROR, naming the
    fix, which is also the Embedded Metric Format record of ``ReaderCacheUnavailable`` (the cache tier alarms on it).
    Written to stdout directly: CloudWatch reads a log line as EMF only when it is pure JSON."""
    counters.l2_unavailable += 1
    line = {
        "level": "ERROR",
        "logger": "cdk_prompt_serving_runtime",
        "message": reason,
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [{
                "Namespace": READER_METRICS_NAMESPACE,
                "Dimensions": [[READER_METRICS_DIMENSION]],
                "Metrics": [{"Name": READER_CACHE_UNAVAILABLE, "Unit": "Count"}],
            }],
        },
        READER_METRICS_DIMENSION: table_name,
        READER_CACHE_UNAVAILABLE: 1,
    }
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
