"""What :meth:`PromptClient.stats` reports (``src/runtime/stats.ts``)."""
import json
import sys
import time
from dataclasses import dataclass

from typing import TypedDict

#: The readers' metric when they run without the L2 (``src/schema/metrics.ts``: same namespace, name, dimension).
READER_METRICS_NAMESPACE = "CdkPromptServing"
READER_CACHE_UNAVAILABLE = "ReaderCacheUnavailable"
READER_METRICS_DIMENSION = "TableName"


class PromptClientStats(TypedDict):
    """What :meth:`PromptClient.stats` returns: the Node client's ``PromptClientStats``, field for field, in
    snake_case (``STATS_DOC`` says what each counts; test/conformance/fixtures/surface.json lists them)."""

    hits: int
    misses: int
    stale_serves: int
    negative_hits: int
    catalog_rejections: int
    store_reads: int
    store_errors: int
    retries: int
    catalog_loads: int
    l2_hits: int
    l2_misses: int
    l2_errors: int
    l2_unavailable: int
    fallback_serves: int
    epoch_moves: int
    revalidations: int
    rollout_faults: int
    evictions: int
    entries: int


@dataclass
class Counters:
    """The mutable counters behind ``stats()`` (all but ``hits``, kept on the client for its hot path, and
    ``evictions``/``entries``, read from the LRU). Increments happen without a lock, so under heavy concurrency a
    counter may, rarely, lose an increment; they are for observability, not accounting."""

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
    fallback_serves: int = 0
    epoch_moves: int = 0
    revalidations: int = 0
    rollout_faults: int = 0

    def snapshot(self, hits: int, evictions: int, entries: int) -> PromptClientStats:
        """The counters with the client's own, in the order of ``PromptClientStats``."""
        return PromptClientStats(
            hits=hits, misses=self.misses, stale_serves=self.stale_serves, negative_hits=self.negative_hits,
            catalog_rejections=self.catalog_rejections, store_reads=self.store_reads, store_errors=self.store_errors,
            retries=self.retries, catalog_loads=self.catalog_loads, l2_hits=self.l2_hits, l2_misses=self.l2_misses,
            l2_errors=self.l2_errors, l2_unavailable=self.l2_unavailable, fallback_serves=self.fallback_serves,
            epoch_moves=self.epoch_moves, revalidations=self.revalidations, rollout_faults=self.rollout_faults,
            evictions=evictions, entries=entries,
        )


STATS_DOC = {
    "hits": "reads answered from memory with a fresh copy",
    "misses": "reads that needed a load (L2 or table), joined or started",
    "stale_serves": "reads answered with an expired copy, flagged stale (stale-while-revalidate or stale-if-error)",
    "negative_hits": "reads answered not-found from memory (a recent not-found from the table)",
    "catalog_rejections": "reads answered not-found because the catalog rules the id out (no remote call)",
    "store_reads": "GetItem requests sent, catalog reads and retries included",
    "store_errors": "table reads that failed after their retries (served stale when a copy was within the bound)",
    "retries": "table read attempts retried after throttling or a transient network error",
    "catalog_loads": "catalog reads that completed (found or absent)",
    "l2_hits": "loads answered by the L2",
    "l2_misses": "loads the L2 had no usable value for",
    "l2_errors": "L2 calls that raised or timed out (the read went on to the table)",
    "l2_unavailable": "1 when the L2 is configured but redis-py cannot be imported or the cache cannot be reached at "
    "start-up (logged once as an ERROR naming the fix, with the ReaderCacheUnavailable metric; reads go to the table)",
    "fallback_serves": "reads answered with the caller's fallback because nothing could be read",
    "epoch_moves": "times the freshness epoch was seen to move (each triggers one re-validation against the L2)",
    "revalidations": "in-process copies replaced by a newer one from the L2 during a re-validation",
    "rollout_faults": "labeled reads served arm A because the label's rollout cannot serve arm B: a malformed rollout map "
    "(every read of the label), or, for reads assigned arm B, a candidate version that is absent, has another checksum "
    "than the map names, or could not be read yet (each reason logged once, WARNING)",
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
