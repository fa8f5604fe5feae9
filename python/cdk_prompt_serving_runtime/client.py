"""``PromptClient`` (``src/runtime/client.ts``): the public facade. It wires the parts and hands every read to the
one read path (:mod:`.read_path`), which serves every read target (:mod:`.targets`: CURRENT, a version, a label)
through memory, the L2 and the table (:mod:`.loader`), with single-flight loads across threads, negative caching, a
Bloom-filter catalog, stale-while-revalidate and stale-if-error.
"""
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, List, Mapping, Optional

from .catalog import Catalog
from .connections import NO_EPOCH, build_l2, default_dynamodb_client
from .epoch import EpochWatcher
from .errors import PromptNotFoundError, PromptServingError
from .fallback import PromptFallback
from .hooks import ReadReporter
from .labels import invalid_label_reason
from .loader import Loader
from .options import ResolvedOptions, resolve_options
from .prompt import Prompt
from .provenance import OnRead
from .read_path import ReadPath
from .schema.keys import CATALOG_ID, CURRENT
from .schema.l2 import l2_epoch_key
from .stats import Counters, PromptClientStats
from .store import TableReader
from .targets import Target, current, labeled
from .tiers import SharedReader

logger = logging.getLogger(__name__)


class PromptClient:
    """Reads prompts from a ``PromptServingTable``. Create one per process at module level (outside the Lambda
    handler) and share it.

    A read tries, in order: memory (fresh copy) → an expired copy within ``stale_while_revalidate_seconds``
    (returned at once, refreshed by one background thread) → the catalog (rules out unknown ids without a remote
    call) → the L2 → one ``GetItem`` (retried with jittered backoff on throttling, within ``request_timeout_ms``)
    → on failure, the last good copy within ``stale_if_error_seconds``. Concurrent reads of one key, from any
    number of threads, share one load.

    Every numeric option defaults to the Node client's value and can be overridden by the same
    ``PROMPT_SERVING_*`` environment variable (see ``options.ENV_VARS``); an explicit argument wins over both.

    Thread safety: every method may be called from any number of threads at once. Lambda runs one request at a
    time per process, but handlers start threads; the client needs no locking by its users.

    Example::

        from cdk_prompt_serving_runtime import PromptClient

        prompts = PromptClient(max_age_seconds=30)  # module level: one per process

        def handler(event, context):
            prompt = prompts.get_prompt("support-triage")
            return prompt.render({"ticket": event["body"]})

    :param table_name: the serving table; default ``PROMPT_SERVING_TABLE_NAME`` (set by the construct)
    :param dynamodb_client: a botocore DynamoDB client; default one from the standard environment with retries
        off (the client retries itself) and socket timeouts inside ``request_timeout_ms``. A client you pass keeps
        its own retry and timeout settings.
    :param max_age_seconds: how long a CURRENT prompt is served from memory before it is read again; exact versions
        are immutable and never expire (they leave memory by the size bound). Default 60.
    :param max_entries: most prompts kept in memory (LRU); not-found ids are remembered in a separate map of the
        same bound. Default 1000.
    :param not_found_max_age_seconds: how long a not-found answer read from the table is remembered. Default 10.
    :param stale_while_revalidate_seconds: window after ``max_age_seconds`` in which an expired prompt is returned
        at once (``stale=True``) while one background read refreshes it; 0 turns it off. Default 60.
    :param stale_if_error_seconds: window after ``max_age_seconds`` in which the last good copy is returned when the
        table cannot be read; 0 turns it off. Default 3600.
    :param catalog_max_age_seconds: how often the ``#catalog`` Bloom filter is re-read. Default 60.
    :param request_timeout_ms: upper bound on the remote work of one load (catalog, L2, table, retries). Default 2000.
    :param max_attempts: attempts per table read on throttling or a transient network error. Default 3.
    :param l2: a shared cache (:class:`~cdk_prompt_serving_runtime.l2.PromptCacheL2`); default: a Valkey/Redis
        adapter built from ``PROMPT_SERVING_CACHE_*`` when ``PROMPT_SERVING_CACHE_ENDPOINT`` is set, else none.
        Pass ``False`` to turn the L2 off whatever the environment says.
    :param l2_timeout_ms: upper bound on one L2 call of the adapter built from the environment. Default 100.
    :param epoch_poll_interval_ms: how often the L2 freshness epoch is read (one GET per process). Default 500.
    :param on_read: called as ``on_read(info, client)`` once per successful ``get_prompt`` with where the prompt came
        from (``info.source``: ``l1``, ``l2``, ``table``, ``fallback``), whether stale, its age and version
        (:class:`ReadInfo`). Helpers: ``log_reads()``, ``emf_read_metrics().on_read``, ``otel_read_attributes()``,
        ``combine_read_hooks(...)``. An exception it raises never fails the read. Default: no hook (a cached read
        costs nothing extra).
    :param clock: the wall clock in epoch seconds (``time.time``); tests pass a fake one.
    :param environ: the environment to read (``os.environ``); tests pass a dict.
    :raises PromptServingError: if no table name is given or set, or an option is out of range
    """


    def __init__(
        self,
        table_name: Optional[str] = None,
        dynamodb_client: Any = None,
        max_age_seconds: Optional[float] = None,
        *,
        max_entries: Optional[int] = None,
        not_found_max_age_seconds: Optional[float] = None,
        stale_while_revalidate_seconds: Optional[float] = None,
        stale_if_error_seconds: Optional[float] = None,
        catalog_max_age_seconds: Optional[float] = None,
        request_timeout_ms: Optional[float] = None,
        max_attempts: Optional[int] = None,
        l2: Any = None,
        l2_timeout_ms: Optional[float] = None,
        epoch_poll_interval_ms: Optional[float] = None,
        on_read: Optional[OnRead] = None,
        clock: Optional[Callable[[], float]] = None,
        environ: Optional[Mapping[str, str]] = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self._options: ResolvedOptions = resolve_options(
            {
                "table_name": table_name,
                "max_age_seconds": max_age_seconds,
                "max_entries": max_entries,
                "not_found_max_age_seconds": not_found_max_age_seconds,
                "stale_while_revalidate_seconds": stale_while_revalidate_seconds,
                "stale_if_error_seconds": stale_if_error_seconds,
                "catalog_max_age_seconds": catalog_max_age_seconds,
                "request_timeout_ms": request_timeout_ms,
                "max_attempts": max_attempts,
                "l2_timeout_ms": l2_timeout_ms,
                "epoch_poll_interval_ms": epoch_poll_interval_ms,
            },
            env,
        )
        o = self._options
        self._clock: Callable[[], float] = clock or time.time
        if on_read is not None and not callable(on_read):
            raise PromptServingError(f"on_read must be a function (info, client) -> None, got {type(on_read).__name__}")
        counters = self._counters = Counters()
        self._path = path = ReadPath(o, self._clock, counters)
        self._reader = reader = TableReader(
            dynamodb_client if dynamodb_client is not None else default_dynamodb_client(o.request_timeout),
            o.table_name, o.request_timeout, o.max_attempts, counters,
        )
        self._l2, self._owns_l2, startup_epoch = build_l2(l2, env, o, counters)
        self._epoch = epoch = EpochWatcher(self._l2, l2_epoch_key(o.table_name), o.epoch_poll_interval, self._clock,
                                           counters, path.revalidate)
        if startup_epoch is not NO_EPOCH:
            epoch.seed(startup_epoch)
        self._tiers = tiers = SharedReader(reader, self._l2, o.max_age, o.stale_while_revalidate, counters, self._clock,
                                           lambda: epoch.incarnation, epoch.first_incarnation)
        shared = self._l2 is not None
        self._catalog = Catalog(
            reader, o.catalog_max_age, counters, self._clock,
            (lambda: tiers.read_shared(CATALOG_ID, CURRENT)) if shared else None,
            (lambda raw, fetched_at: tiers.fill(CATALOG_ID, CURRENT, raw, fetched_at)) if shared else None,
        )
        path.attach(epoch, tiers, self._catalog, Loader(reader, tiers, self._catalog, counters, self._clock, path.accept,
                                                        path.prompts.delete, path.mark_failing, lambda: path.generation))
        fast, self._fast_hits = path.getter()
        if on_read is None:
            # An instance attribute, so a cached read is one closure call: no bound method, no attribute lookups.
            self.get_prompt = fast  # type: ignore[method-assign]
        else:
            report = ReadReporter(on_read, o.table_name)

            def get_prompt_reporting(prompt_id: str, version: Optional[int] = None, *,
                                     fallback: Optional[PromptFallback] = None, label: Optional[str] = None,
                                     stickiness_key: Optional[str] = None) -> Prompt:
                prompt = fast(prompt_id, version, fallback=fallback, label=label, stickiness_key=stickiness_key)
                report(prompt, version, self)
                return prompt

            self.get_prompt = get_prompt_reporting  # type: ignore[method-assign]
        if shared:  # a reader the L2 serves makes its first table read when the cache fails: warm up now
            threading.Thread(target=reader.warm_up, name="prompt-sdk-warm-up", daemon=True).start()

    def get_prompt(self, prompt_id: str, version: Optional[int] = None, *,
                   fallback: Optional[PromptFallback] = None, label: Optional[str] = None,
                   stickiness_key: Optional[str] = None) -> Prompt:
        """The CURRENT version of a prompt (one eventually consistent ``GetItem`` of its pointer when not cached),
        or an exact version with ``version=3`` (the ``v000003`` item; immutable, cached until evicted).

        ``fallback`` is returned (flagged ``stale``, version 0) only when nothing can be read: the table fails, and
        neither the L2 nor memory holds a copy within ``stale_if_error_seconds``. Never used for a prompt that does
        not exist. Default: no fallback, the read raises ``PromptStoreError``.

        ``label="production"`` reads a label instead of CURRENT (cached, negative-cached and kept fresh as CURRENT is);
        while the label has a rollout, ``stickiness_key`` (a user or tenant id) picks the arm, the same for the same
        key for the whole rollout; without it each read picks at random by the rollout's share. The prompt reports
        ``label``, ``rollout`` (:class:`PromptRollout`) and ``source_deleted``.

        :raises PromptNotFoundError: if the prompt does not exist, was deleted, or the id or version is invalid or
            reserved (answered without any remote call)
        :raises PromptStoreError: if the table cannot be read, no copy within ``stale_if_error_seconds`` is held and
            no ``fallback`` is given
        :raises PromptServingError: for ``version`` and ``label`` together, or a ``stickiness_key`` that is not a str

        Example::

            prompt = prompts.get_prompt("support-triage")
            labeled = prompts.get_prompt("support-triage", label="production", stickiness_key=user_id)
            logger.info("served %s %s", labeled.version, labeled.rollout)
            pinned = prompts.get_prompt("support-triage", version=3)
            safe = prompts.get_prompt("support-triage", fallback=PromptFallback(text="Triage: {{ticket}}"))
        """
        return self._path.read(prompt_id, version, fallback, label, stickiness_key)  # replaced per instance

    def preload(self, prompt_ids: Iterable[str] = (), *, labels: Optional[Iterable[str]] = None) -> None:
        """Reads the catalog, and the CURRENT version of each listed prompt not fresh in memory (joining reads under
        way, up to 8 at once), so the first requests are served from memory. Unknown ids are remembered as not
        found and do not fail. With ``labels``, each id's label items too (and a rollout's candidate version).

        :raises PromptNotFoundError: for an id or a label name that can never be valid (reserved, empty, too long)
        :raises PromptStoreError: if the table cannot be read for one of the prompts

        Example::

            prompts = PromptClient()
            prompts.preload(["support-triage", "summarize"])  # at import time, outside the handler
            prompts.preload(["support-triage"], labels=["production"])
        """
        given = list(prompt_ids)
        for prompt_id in given:
            current(prompt_id).validate()
        ids = list(dict.fromkeys(given))
        targets: List[Target] = [current(p) for p in ids]
        for label in list(labels or ()):
            invalid = invalid_label_reason(label)
            if invalid is not None:
                raise PromptNotFoundError(ids[0] if ids else "", None, invalid)
            targets += [labeled(p, label) for p in ids]
        self._catalog.refresh(self._reader.deadline())
        todo = self._path.stale_targets(targets)
        errors: List[PromptServingError] = []

        def one(target: Target) -> None:
            try:
                self._path.loader.load(target)
            except PromptNotFoundError:
                pass
            except PromptServingError as err:
                errors.append(err)

        if len(todo) == 1:
            one(todo[0])
        elif todo:
            with ThreadPoolExecutor(max_workers=min(8, len(todo)), thread_name_prefix="prompt-preload") as pool:
                list(pool.map(one, todo))
        if errors:
            raise errors[0]

    def invalidate(self, prompt_id: Optional[str] = None) -> None:
        """Drops in-process copies so the next read goes to the L2 (or the table): of one prompt (its CURRENT version,
        its exact versions and any not-found answer), or of everything, the catalog included (re-read in the
        background). The shared L2 is kept fresh by the invalidation function and is not touched.

        Example::

            prompts.invalidate("support-triage")  # after an out-of-band change, or in a test
            prompts.invalidate()                  # everything
        """
        try:
            hash(prompt_id)
        except TypeError:  # an unhashable "id" names nothing held
            return
        self._path.invalidate(prompt_id)
        if prompt_id is None:
            self._catalog.refresh_in_background()

    def close(self) -> None:
        """Stops the freshness-epoch watch and closes the L2 connections the client opened itself (tests, scripts; a
        Lambda function never needs to). Reads still work afterwards, from memory and the table (and from an L2 you
        passed as ``l2``, which stays yours to close).

        Example::

            prompts.close()
        """
        self._epoch.stop()
        l2 = self._l2
        if l2 is None or not self._owns_l2:
            return
        self._tiers.l2 = None
        closer = getattr(l2, "close", None)
        if callable(closer):
            try:
                closer()
            except Exception as err:  # noqa: BLE001 - closing never fails
                logger.debug("L2 close failed: %s", err)

    def stats(self) -> PromptClientStats:
        """Counters since the client was created (the Node client's ``stats()``, in snake_case; ``stats.STATS_DOC``
        says what each counts): ``hits``, ``misses``, ``stale_serves``, ``negative_hits``, ``catalog_rejections``,
        ``store_reads``, ``store_errors``, ``retries``, ``catalog_loads``, ``l2_hits``, ``l2_misses``, ``l2_errors``,
        ``l2_unavailable``, ``fallback_serves``, ``epoch_moves``, ``revalidations``, ``evictions`` and ``entries``.

        Example::

            logger.info("prompt cache %s", prompts.stats())
        """
        path = self._path
        return self._counters.snapshot(path.hits + self._fast_hits(), path.prompts.evictions, len(path.prompts))
