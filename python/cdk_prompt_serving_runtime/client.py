"""``PromptClient`` (``src/runtime/client.ts``): reads prompts from the serving table through an in-process cache
(and an optional shared L2), with single-flight loads across threads, negative caching, a Bloom-filter catalog,
stale-while-revalidate and stale-if-error.
"""
import dataclasses
import logging
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Hashable, Iterable, List, Mapping, Optional, Set, Tuple

from .catalog import Catalog
from .epoch import EpochWatcher
from .errors import PromptNotFoundError, PromptServingError, PromptStoreError
from .fallback import PromptFallback, fallback_prompt
from .l2 import PromptCacheL2
from .labels import (
    invalid_label_reason,
    label_cache_key,
    label_item_key,
    missing_label_reason,
    prompt_from_label_item,
)
from .lru import Lru, Slot
from .options import ResolvedOptions, resolve_options
from .prompt import Prompt, is_deleted, prompt_from_item
from .provenance import OnRead, Provenance, read_info
from .rollout import SERVE_HIT, SERVE_LOADED, SERVE_STALE, RolloutState, log_rollout_fault
from .schema.env import Env
from .schema.keys import CATALOG_ID, CURRENT, MAX_VERSION_NUMBER, PROMPT_ID_RULE, is_valid_prompt_id, version_key
from .schema.l2 import compare_tokens, l2_epoch_key
from .schema.labels import LabelAttr, _js_type, parse_rollout
from .stats import Counters, PromptClientStats, report_l2_unavailable
from .store import TableReader
from .tiers import SharedReader, Token

logger = logging.getLogger(__name__)

_NO_EPOCH = object()
"""No epoch was read at start-up (an absent epoch key reads as ``None``, a value like any other)."""

INVALID_ID_REASON = f"not a valid prompt id ({PROMPT_ID_RULE}, which is reserved)"
"""Why an id that can never exist is not found (the Node client's reason, word for word)."""


class _Entry:
    """One remembered prompt. ``failing``: the last read of this key failed, so serve this copy at once (within
    the stale-if-error bound) while reads retry. ``invalidated``: the epoch moved and the L2 could not confirm this
    copy, so it is not served as fresh (nor stale-while-revalidate) but kept as the last good copy for
    stale-if-error until a newer one is in hand. ``token``: the stream value's ordering token (stream copies only)."""

    __slots__ = ("key", "prompt", "hit", "version", "expires_at", "token", "failing", "invalidated", "used", "_stale",
                 "label", "rollout", "rollout_problem")

    def __init__(self, key: Hashable, prompt: Prompt, version: Optional[int], expires_at: float,
                 token: Optional[Token]) -> None:
        self.key = key
        self.used = False
        self.prompt = prompt
        self.hit = prompt.served_copy("l1", False)
        """The prompt as a hit serves it (provenance ``l1``), built once."""
        self.version = version
        self.expires_at = expires_at
        self.token = token
        self.failing = False
        self.invalidated = False
        self._stale: Optional[Prompt] = None
        self.label: Optional[str] = None
        """A label entry's label (``None`` for CURRENT and exact versions)."""
        self.rollout: Optional[RolloutState] = None
        self.rollout_problem: Optional[str] = None
        """Why a label entry's rollout map cannot be used (every read is served arm A and counted)."""

    @property
    def stale(self) -> Prompt:
        s = self._stale
        if s is None:
            s = self._stale = self.prompt.served_copy("l1", True)
        return s


class _Flight:
    """A load under way: the first thread runs it, the others wait for its outcome."""

    __slots__ = ("done", "result", "error", "entry")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Optional[Prompt] = None
        self.error: Optional[BaseException] = None
        self.entry: Optional[_Entry] = None
        """A label load's outcome: the entry, so each waiting read picks its own arm."""


def _default_dynamodb_client(request_timeout: float) -> Any:
    """A DynamoDB client from the standard environment, with retries left to ``PromptClient`` and socket timeouts
    inside the request deadline. ``AWS_ENDPOINT_URL_DYNAMODB`` / ``AWS_ENDPOINT_URL`` are honoured on botocore
    versions that predate them."""
    import boto3
    from botocore.config import Config

    timeout = max(0.1, request_timeout)
    config = Config(
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=timeout,
        read_timeout=timeout,
        max_pool_connections=50,
    )
    endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL") or None
    return boto3.session.Session().client("dynamodb", config=config, endpoint_url=endpoint)


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
        self._on_read = on_read
        self._on_read_failed = False
        if on_read is not None:
            # Reads report through a wrapper bound on this instance only, so a client without a hook runs the plain
            # get_prompt, without even a None check on its hit path (docs/BENCHMARKS.md, read provenance).
            self.get_prompt = self._get_prompt_reporting  # type: ignore[method-assign]
        self._counters = Counters()
        self._hits = 0  # the hot path's counter, kept on the client itself (one attribute lookup less)
        self._prompts: Lru[_Entry] = Lru(o.max_entries, self._unpin)
        self._map = self._prompts.map  # the hot path reads the LRU's dict directly
        # Exact-version entries of _prompts by id then version, so a pinned hit builds no key tuple.
        self._pinned: Dict[str, Dict[int, _Entry]] = {}
        self._not_found: Lru[Slot[float]] = Lru(o.max_entries)
        self._flights: Dict[Hashable, _Flight] = {}
        # Label entries of _prompts (under label_cache_key) by label then id, so a labeled hit builds no key tuple.
        self._labeled: Dict[str, Dict[str, _Entry]] = {}
        self._labels_asked: Set[str] = set()
        """Labels answered not found, so ``invalidate(id)`` forgets those answers too (bounded by ``max_entries``)."""
        self._faults_logged: Dict[Hashable, str] = {}
        self._lock = threading.Lock()
        self._reader = TableReader(
            dynamodb_client if dynamodb_client is not None else _default_dynamodb_client(o.request_timeout),
            o.table_name,
            o.request_timeout,
            o.max_attempts,
            self._counters,
        )
        self._owns_l2 = False
        """The client built its L2 from the environment (``close`` closes it)."""
        self._startup_epoch: Any = _NO_EPOCH
        """The epoch as read at start-up by an L2 built from the environment (the epoch watch's first read)."""
        self._l2: Optional[PromptCacheL2] = self._build_l2(l2, env)
        self._generation = 0
        """Epoch moves seen: a load that started before the latest one may carry what it replaced."""
        self._epoch = EpochWatcher(
            self._l2, l2_epoch_key(o.table_name), o.epoch_poll_interval, self._clock, self._counters, self._revalidate,
        )
        if self._startup_epoch is not _NO_EPOCH:
            self._epoch.seed(self._startup_epoch)
        self._tiers = SharedReader(
            self._reader, self._l2, o.max_age, o.stale_while_revalidate, self._counters, self._clock,
            lambda: self._epoch.incarnation, self._epoch.first_incarnation,
        )
        self._catalog = Catalog(
            self._reader, o.catalog_max_age, self._counters, self._clock,
            (lambda: self._tiers.read_shared(CATALOG_ID, CURRENT)) if self._l2 is not None else None,
            (lambda raw, fetched_at: self._tiers.fill(CATALOG_ID, CURRENT, raw, fetched_at)) if self._l2 is not None else None,
        )
        if self._l2 is not None:  # a reader the L2 serves makes its first table read when the cache fails: warm up now
            threading.Thread(target=self._reader.warm_up, name="prompt-sdk-warm-up", daemon=True).start()

    def _build_l2(self, l2: Any, env: Mapping[str, str]) -> Optional[PromptCacheL2]:
        if l2 is False:
            return None
        if l2 is not None:
            return l2  # type: ignore[no-any-return]
        if not env.get(Env.cache_endpoint):
            return None
        table = self._options.table_name
        try:
            from .valkey import ValkeyL2

            adapter = ValkeyL2.from_environment(env, timeout_ms=self._options.l2_timeout * 1000)
        except ImportError as err:  # redis-py not shipped with the function
            report_l2_unavailable(self._counters, f"{Env.cache_endpoint} is set but redis-py (`redis`) cannot be imported: "
                                  "give the function the construct's reader layer (`addReader` attaches it to Python "
                                  "functions: make sure the function was not created with its own `layers` that replace "
                                  f"it) or ship redis-py with the function; reads go to the table ({err})", table)
            return None
        except Exception as err:  # noqa: BLE001 - an L2 failure never fails a read, nor the client's creation
            self._counters.l2_errors += 1
            logger.warning("L2 cache disabled: %s", err)
            return None
        self._owns_l2 = True
        try:  # one read at start-up, so an unreachable cache is said once now rather than counted per read
            self._startup_epoch = adapter.get(l2_epoch_key(table))  # the epoch watch's first read (seeded below)
        except Exception as err:  # noqa: BLE001
            report_l2_unavailable(self._counters, f"{Env.cache_endpoint} is set but the cache at "
                                  f"{env.get(Env.cache_endpoint)} could not be reached: check the function's VPC subnets "
                                  "and security group (`addReader` opens the cache's ports to it), its "
                                  "`elasticache:Connect` permission and the cache's state; reads go to the table, and "
                                  f"the connection is retried ({err})", table)
        return adapter

    # ------------------------------------------------------------------------------------------------------
    # public API
    # ------------------------------------------------------------------------------------------------------

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
        if label is not None:
            if version is None and stickiness_key is None:  # the hot path of a label without a rollout, inlined
                try:
                    by_id = self._labeled.get(label)
                    entry = by_id.get(prompt_id) if by_id is not None else None
                except TypeError:  # an unhashable label or id: said on the miss path
                    entry = None
                if entry is not None and entry.rollout is None and entry.rollout_problem is None:
                    now = self._clock()
                    epoch = self._epoch
                    if now >= epoch.due:
                        epoch.tick(now)
                    if entry.expires_at > now and not entry.invalidated:
                        entry.used = True
                        self._hits += 1
                        return entry.hit
            return self._get_labeled(prompt_id, label, version, fallback, stickiness_key)
        if version is None:
            try:
                entry = self._map.get(prompt_id)
            except TypeError:  # an unhashable "id": not a valid id, said on the miss path
                entry = None
        elif version.__class__ is int:
            try:
                by_version = self._pinned.get(prompt_id)
            except TypeError:
                by_version = None
            entry = by_version.get(version) if by_version is not None else None
        else:
            return self._miss(prompt_id, version, None, None, fallback)
        epoch = self._epoch
        if entry is not None:
            now = self._clock()
            if now >= epoch.due:
                epoch.tick(now)
            if entry.expires_at > now and not entry.invalidated:
                entry.used = True
                self._hits += 1
                return entry.hit
            return self._miss(prompt_id, version, entry.key, entry, fallback)
        now = self._clock()
        if now >= epoch.due and epoch.polled:  # misses watch the epoch too (the catalog)
            epoch.tick(now)
        return self._miss(prompt_id, version, prompt_id if version is None else (prompt_id, version), None, fallback)

    def _get_prompt_reporting(self, prompt_id: str, version: Optional[int] = None, *,
                              fallback: Optional[PromptFallback] = None, label: Optional[str] = None,
                              stickiness_key: Optional[str] = None) -> Prompt:
        """``get_prompt``, then ``on_read`` (a client with a hook has this as its ``get_prompt``)."""
        prompt = PromptClient.get_prompt(self, prompt_id, version, fallback=fallback, label=label,
                                         stickiness_key=stickiness_key)
        self._report_read(prompt, version)
        return prompt

    def _report_read(self, prompt: Prompt, requested_version: Optional[int]) -> None:
        """Calls ``on_read``; a hook that raises never fails the read (logged once)."""
        assert self._on_read is not None
        try:
            self._on_read(read_info(self._options.table_name, prompt, requested_version), self)
        except Exception as err:  # noqa: BLE001 - the caller's hook must not fail the read
            if not self._on_read_failed:
                self._on_read_failed = True
                logger.warning("the on_read hook raised (reads are served regardless; logged once): %s", err)

    # ------------------------------------------------------------------------------------------------------
    # labels and rollouts
    # ------------------------------------------------------------------------------------------------------

    def _get_labeled(self, prompt_id: Any, label: Any, version: Any, fallback: Optional[PromptFallback],
                     stickiness_key: Any) -> Prompt:
        """``get_prompt`` with a label: a fresh copy in memory (then the rollout's arm), else a miss."""
        if stickiness_key is not None and not isinstance(stickiness_key, str):
            raise PromptServingError(f"`stickiness_key` must be a string, got {_js_type(stickiness_key)}")
        if version is not None:
            raise PromptServingError("give `version` or `label`, not both: a label names its own version")
        try:
            by_id = self._labeled.get(label)
            entry = by_id.get(prompt_id) if by_id is not None else None
        except TypeError:  # an unhashable label or id: said on the miss path
            entry = None
        now = self._clock()
        epoch = self._epoch
        if now >= epoch.due and (entry is not None or epoch.polled):
            epoch.tick(now)
        if entry is not None and entry.expires_at > now and not entry.invalidated:
            entry.used = True
            self._hits += 1
            if entry.rollout is None and entry.rollout_problem is None:
                return entry.hit
            return self._serve_arm(entry, stickiness_key, SERVE_HIT)
        return self._labeled_miss(prompt_id, label, fallback, stickiness_key, entry)

    def _labeled_miss(self, prompt_id: Any, label: Any, fallback: Optional[PromptFallback], stickiness_key: Optional[str],
                      cached: Optional[_Entry]) -> Prompt:
        o = self._options
        now = self._clock()
        if cached is not None and (
            (not cached.invalidated and now < cached.expires_at + o.stale_while_revalidate)
            or (cached.failing and now < cached.expires_at + o.stale_if_error)
        ):
            self._counters.stale_serves += 1
            self._load_label_in_background(prompt_id, label)
            return self._serve_arm(cached, stickiness_key, SERVE_STALE)
        self._assert_valid(prompt_id, None)
        invalid = invalid_label_reason(label)
        if invalid is not None:
            raise PromptNotFoundError(prompt_id, None, invalid)
        key = label_cache_key(label, prompt_id)
        not_found = self._not_found.get(key)
        if not_found is not None and now < not_found.value:
            self._counters.negative_hits += 1
            raise PromptNotFoundError(prompt_id, None, missing_label_reason(label))
        self._counters.misses += 1
        try:
            # The read that loaded the label item: served with that read's provenance (l2 or table), not as a hit.
            return self._serve_arm(self._load_label(prompt_id, label), stickiness_key, SERVE_LOADED)
        except PromptStoreError:
            if cached is not None and self._clock() < cached.expires_at + o.stale_if_error:
                self._counters.stale_serves += 1
                return self._serve_arm(cached, stickiness_key, SERVE_STALE)
            if fallback is None:
                raise
            self._counters.fallback_serves += 1
            # Served for the label asked for (no arm: the fallback is neither version), provenance fallback.
            return dataclasses.replace(fallback_prompt(prompt_id, fallback), label=label)

    def _serve_arm(self, entry: _Entry, stickiness_key: Optional[str], mode: str) -> Prompt:
        """The arm a read of a label entry serves (the entry's own prompt without a usable rollout), as ``mode`` says: a
        hit (``l1``), the read that loaded the entry (its provenance), or stale."""
        rollout = entry.rollout
        if rollout is None:
            if entry.rollout_problem is not None:
                self._rollout_fault(entry, entry.rollout_problem)
            return entry.hit if mode == SERVE_HIT else entry.prompt if mode == SERVE_LOADED else entry.stale
        assert entry.label is not None
        # A hit takes the arm's l1 copy inline (no method call: this is the rollout's hot path).
        if rollout.arm(entry.prompt.id, stickiness_key) == "A":
            return rollout.arm_a_hit if mode == SERVE_HIT else rollout.served_a(mode)
        arm_b_hit = rollout.arm_b_hit
        if arm_b_hit is not None:
            return arm_b_hit if mode == SERVE_HIT else rollout.served_b(mode)
        if rollout.problem is None:  # the candidate could not be read: retried in the background
            self._load_candidate_in_background(entry.prompt.id, rollout)
        self._rollout_fault(entry, rollout.problem or f"candidate v{rollout.spec.candidate_version} could not be read")
        return rollout.served_a(mode)

    def _rollout_fault(self, entry: _Entry, problem: str) -> None:
        """A read served arm A because arm B cannot be: counted, and logged once per label entry and reason."""
        self._counters.rollout_faults += 1
        if self._faults_logged.get(entry.key) == problem:
            return
        if len(self._faults_logged) >= self._options.max_entries:
            self._faults_logged.clear()
        self._faults_logged[entry.key] = problem
        rollout_id = entry.rollout.spec.rollout_id if entry.rollout is not None else ""
        log_rollout_fault(self._options.table_name, entry.prompt.id, entry.label or "", rollout_id, problem)

    def _prepare_candidate(self, prompt_id: str, rollout: RolloutState) -> None:
        """Puts the candidate version in hand: from memory at once, else one read (the catalog not consulted)."""
        version = rollout.spec.candidate_version
        by_version = self._pinned.get(prompt_id)
        held = by_version.get(version) if by_version is not None else None
        if held is not None:
            rollout.offer(held.hit)  # in memory: a read assigned arm B is served from l1
            return
        try:
            rollout.offer(self._load(prompt_id, version, (prompt_id, version), direct=True))
        except PromptNotFoundError:
            rollout.problem = f"candidate version item {version_key(version)} is absent"
        except PromptServingError as err:  # any other failure: retried by the next read assigned arm B
            logger.debug("candidate %s of %s not read: %s", version, prompt_id, err)

    def _load_candidate_in_background(self, prompt_id: str, rollout: RolloutState) -> None:
        if rollout.loading is not None and not rollout.loading.is_set():
            return
        done = rollout.loading = threading.Event()

        def run() -> None:
            try:
                self._prepare_candidate(prompt_id, rollout)
            finally:
                done.set()

        threading.Thread(target=run, name="prompt-candidate", daemon=True).start()

    def _load_label(self, prompt_id: str, label: str) -> _Entry:
        """The load of a label's entry under way (waited for), or a new one run on this thread."""
        key = label_cache_key(label, prompt_id)
        flight, owner = self._join_or_start(key)
        if owner:
            self._run_label(flight, prompt_id, label, key)
        elif not flight.done.wait(self._options.request_timeout * 2 + 1.0):
            self._counters.store_errors += 1
            raise PromptStoreError(
                f"GetItem {prompt_id}/{label_item_key(label)} on table {self._options.table_name} "
                f"timed out after {round(self._options.request_timeout * 1000)} ms"
            )
        if flight.error is not None:
            raise flight.error
        assert flight.entry is not None
        return flight.entry

    def _load_label_in_background(self, prompt_id: str, label: str) -> None:
        key = label_cache_key(label, prompt_id)
        flight, owner = self._join_or_start(key)
        if owner:
            threading.Thread(target=self._run_label, args=(flight, prompt_id, label, key), name="prompt-refresh",
                             daemon=True).start()

    def _run_label(self, flight: _Flight, prompt_id: str, label: str, key: Hashable) -> None:
        def fetch() -> Tuple[Prompt, Optional[_Entry]]:
            entry = self._fetch_label(prompt_id, label, key)
            return entry.prompt, entry

        self._settle(flight, key, fetch)

    def _fetch_label(self, prompt_id: str, label: str, key: Hashable) -> _Entry:
        """L2 → table, within one ``request_timeout_ms``, like a CURRENT read but without the catalog: a label outlives
        its prompt's deletion at the source, which takes the id out of the catalog."""
        deadline = self._reader.deadline()
        sort_key = label_item_key(label)
        generation = self._generation
        shared = self._tiers.read_shared(prompt_id, sort_key)
        if shared is not None:
            try:
                return self._accept_label(key, prompt_id, label, shared.item,
                                          self._clock() if shared.source == "stream" else shared.fetched_at,
                                          shared.token, generation, Provenance("l2", False, shared.fetched_at, self._clock))
            except PromptStoreError as err:  # an L2 value that breaks the contract: read the table
                self._counters.l2_errors += 1
                logger.debug("L2 value of %s/%s ignored: %s", prompt_id, sort_key, err)
        item, fetched_at = self._tiers.read_table(prompt_id, sort_key, deadline)
        return self._accept_label(key, prompt_id, label, item, fetched_at, None, generation,
                                  Provenance("table", False, fetched_at, self._clock))

    def _accept_label(self, key: Hashable, prompt_id: str, label: str, item: Optional[Mapping[str, Any]],
                      fetched_at: float, token: Optional[Token], generation: Optional[int] = None,
                      provenance: Optional[Provenance] = None) -> _Entry:
        """Remembers a label item (or that there is none) and puts a rollout's candidate in hand; returns the entry.
        ``provenance``: the read that brought the item (default: the L2, for a stream value)."""
        if provenance is None:
            provenance = Provenance("l2", False, fetched_at, self._clock)
        served = prompt_from_label_item(item, label, provenance) if item is not None else None
        if item is None or served is None:
            self._forget(key)
            if len(self._labels_asked) < self._options.max_entries:
                self._labels_asked.add(label)
            raise PromptNotFoundError(prompt_id, None, missing_label_reason(label) if item is None
                                      else f"label '{label}' deleted")
        held = self._map.get(key)
        if (held is not None and held.token is not None and not held.invalidated and held.expires_at > self._clock()
                and (token is None or compare_tokens(held.token, token) > 0)):
            return held  # a late load: the stream's newer value arrived meanwhile
        raw_rollout = item.get(LabelAttr.rollout)
        spec, problem = parse_rollout(raw_rollout) if LabelAttr.rollout in item else (None, None)
        rollout = RolloutState(spec, label, served) if spec is not None else None
        if rollout is not None:
            self._prepare_candidate(prompt_id, rollout)
        entry = _Entry(key, rollout.arm_a if rollout is not None else served, None,
                       fetched_at + self._options.max_age, token)
        entry.label = label
        entry.rollout = rollout
        entry.rollout_problem = None if problem is None else f"the rollout map is malformed: {problem}"
        if generation is not None and generation != self._generation:
            entry.invalidated = True
        self._prompts.set(key, entry)
        with self._lock:
            self._labeled.setdefault(label, {})[prompt_id] = entry
        self._not_found.delete(key)
        return entry

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
        ids = list(prompt_ids)
        for prompt_id in ids:
            self._assert_valid(prompt_id, None)
        label_list = list(labels or ())
        for label in label_list:
            invalid = invalid_label_reason(label)
            if invalid is not None:
                raise PromptNotFoundError(ids[0] if ids else "", None, invalid)
        self._catalog.refresh(self._reader.deadline())
        now = self._clock()
        todo: List[Tuple[str, Optional[str]]] = [(p, None) for p in dict.fromkeys(ids) if not self._fresh(p, now)]
        for label in label_list:
            for p in dict.fromkeys(ids):
                held = self._labeled.get(label, {}).get(p)
                if held is None or held.expires_at <= now or held.invalidated:
                    todo.append((p, label))
        if not todo:
            return
        errors: List[PromptServingError] = []

        def one(job: Tuple[str, Optional[str]]) -> None:
            prompt_id, label = job
            try:
                if label is None:
                    self._load(prompt_id, None, prompt_id)
                else:
                    self._load_label(prompt_id, label)
            except PromptNotFoundError:
                pass
            except PromptServingError as err:
                errors.append(err)

        if len(todo) == 1:
            one(todo[0])
        else:
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
        if prompt_id is None:
            for key, _ in self._prompts.items():
                self._prompts.delete(key)
            self._not_found.clear()
            self._catalog.refresh_in_background()
            return
        try:
            hash(prompt_id)
        except TypeError:  # an unhashable "id" names nothing held
            return
        self._prompts.delete(prompt_id)
        self._not_found.delete(prompt_id)
        with self._lock:
            labeled = [by_id[prompt_id] for by_id in self._labeled.values() if prompt_id in by_id]
        for entry in labeled:
            self._prompts.delete(entry.key)
        for label in list(self._labels_asked):
            self._not_found.delete(label_cache_key(label, prompt_id))
        with self._lock:
            pinned = list(self._pinned.get(prompt_id, {}).values())
        for entry in pinned:
            self._prompts.delete(entry.key)
            self._not_found.delete(entry.key)

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
        return self._counters.snapshot(self._hits, self._prompts.evictions, len(self._prompts))

    # ------------------------------------------------------------------------------------------------------
    # misses, loads, fetches
    # ------------------------------------------------------------------------------------------------------

    def _fresh(self, prompt_id: str, now: float) -> bool:
        entry = self._map.get(prompt_id)
        return entry is not None and entry.expires_at > now and not entry.invalidated

    def _miss(self, prompt_id: Any, version: Any, key: Optional[Hashable], cached: Optional[_Entry],
              fallback: Optional[PromptFallback] = None) -> Prompt:
        """Everything but a fresh hit; ``cached`` is the expired copy of this key, if any."""
        o = self._options
        now = self._clock()
        if cached is not None and (
            (not cached.invalidated and now < cached.expires_at + o.stale_while_revalidate)
            or (cached.failing and now < cached.expires_at + o.stale_if_error)
        ):
            self._counters.stale_serves += 1
            self._load_in_background(prompt_id, version, key)
            return cached.stale
        self._assert_valid(prompt_id, version)
        assert key is not None
        not_found = self._not_found.get(key)
        if not_found is not None and now < not_found.value:
            self._counters.negative_hits += 1
            raise PromptNotFoundError(prompt_id, version)
        self._counters.misses += 1
        try:
            return self._load(prompt_id, version, key)
        except PromptStoreError:
            if cached is not None and self._clock() < cached.expires_at + o.stale_if_error:
                self._counters.stale_serves += 1
                return cached.stale
            if fallback is None:
                raise
            self._counters.fallback_serves += 1
            return fallback_prompt(prompt_id, fallback)

    def _join_or_start(self, key: Hashable) -> Tuple[_Flight, bool]:
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                return flight, False
            flight = self._flights[key] = _Flight()
            return flight, True

    def _run(self, flight: _Flight, prompt_id: str, version: Optional[int], key: Hashable, direct: bool = False) -> None:
        self._settle(flight, key, lambda: (self._fetch(prompt_id, version, key, direct), None))

    def _settle(self, flight: _Flight, key: Hashable, fetch: Callable[[], Tuple[Prompt, Optional[_Entry]]]) -> None:
        """Runs a flight's load and hands its outcome to every waiter; a store failure marks the held copy failing."""
        try:
            flight.result, flight.entry = fetch()
        except BaseException as err:  # noqa: BLE001 - handed to every waiter
            flight.error = err
            if isinstance(err, PromptStoreError):
                entry = self._map.get(key)
                if entry is not None:
                    entry.failing = True
        finally:
            with self._lock:
                if self._flights.get(key) is flight:
                    del self._flights[key]
            flight.done.set()

    def _load(self, prompt_id: str, version: Optional[int], key: Hashable, direct: bool = False) -> Prompt:
        """The load of ``key`` under way (waited for), or a new one run on this thread (``direct``: without the
        catalog, for a rollout's candidate)."""
        flight, owner = self._join_or_start(key)
        if owner:
            self._run(flight, prompt_id, version, key, direct)
        elif not flight.done.wait(self._options.request_timeout + 1.0):
            self._counters.store_errors += 1
            raise PromptStoreError(
                f"GetItem {prompt_id}/{self._sort_key(version)} on table {self._options.table_name} "
                f"timed out after {round(self._options.request_timeout * 1000)} ms"
            )
        if flight.error is not None:
            raise flight.error
        assert flight.result is not None
        return flight.result

    def _load_in_background(self, prompt_id: str, version: Optional[int], key: Optional[Hashable]) -> None:
        if key is None:
            return
        flight, owner = self._join_or_start(key)
        if owner:
            threading.Thread(
                target=self._run, args=(flight, prompt_id, version, key), name="prompt-refresh", daemon=True
            ).start()

    @staticmethod
    def _sort_key(version: Optional[int]) -> str:
        return CURRENT if version is None else version_key(version)

    def _fetch(self, prompt_id: str, version: Optional[int], key: Hashable, direct: bool = False) -> Prompt:
        """Catalog → L2 → table, within one ``request_timeout_ms``; remembers what it finds (or that nothing was)."""
        deadline = self._reader.deadline()
        if not direct and not self._catalog.might_contain(prompt_id, deadline):
            self._counters.catalog_rejections += 1
            self._prompts.delete(key)
            raise PromptNotFoundError(prompt_id, version, "not in the catalog")
        sort_key = self._sort_key(version)
        generation = self._generation
        shared = self._tiers.read_shared(prompt_id, sort_key)
        if shared is not None:
            if shared.item is None or is_deleted(shared.item):  # the stream's tombstone or removal
                self._forget(key)
                raise PromptNotFoundError(prompt_id, version, None if shared.item is None else "deleted")
            try:
                served = Provenance("l2", False, shared.fetched_at, self._clock)
                return self._remember(key, prompt_from_item(shared.item, 1, served), version,
                                      self._clock() if shared.source == "stream" else shared.fetched_at, shared.token,
                                      generation)
            except PromptStoreError as err:  # an L2 value that breaks the contract: read the table
                self._counters.l2_errors += 1
                logger.debug("L2 value of %s/%s ignored: %s", prompt_id, sort_key, err)
        item, fetched_at = self._tiers.read_table(prompt_id, sort_key, deadline)
        if item is None or is_deleted(item):
            self._forget(key)
            raise PromptNotFoundError(prompt_id, version, None if item is None else "deleted")
        served = Provenance("table", False, fetched_at, self._clock)
        return self._remember(key, prompt_from_item(item, 1, served), version, fetched_at, None, generation)

    def _remember(self, key: Hashable, prompt: Prompt, version: Optional[int], fetched_at: float,
                  token: Optional[Token], generation: Optional[int] = None) -> Prompt:
        held = self._map.get(key)
        if (held is not None and held.token is not None and not held.invalidated and held.expires_at > self._clock()
                and (token is None or compare_tokens(held.token, token) > 0)):
            return held.hit  # a late load: the stream's newer value arrived meanwhile (served from memory)
        expires_at = fetched_at + self._options.max_age if version is None else math.inf
        entry = _Entry(key, prompt, version, expires_at, token)
        if version is None and generation is not None and generation != self._generation:
            entry.invalidated = True  # loaded before an epoch move that re-validated the rest: re-validated next read
        if version is not None:
            with self._lock:
                self._pinned.setdefault(prompt.id, {})[version] = entry
        self._prompts.set(key, entry)
        self._not_found.delete(key)
        return prompt

    def _forget(self, key: Hashable) -> None:
        """The prompt is gone: drop the copy and remember the not-found for ``not_found_max_age_seconds``."""
        self._prompts.delete(key)
        self._not_found.set(key, Slot(self._clock() + self._options.not_found_max_age))

    def _unpin(self, entry: _Entry) -> None:
        """Keeps ``_pinned`` and ``_labeled`` in step with ``_prompts``: called for every entry that leaves it."""
        if entry.label is not None:
            with self._lock:
                by_id = self._labeled.get(entry.label)
                if by_id is not None and by_id.get(entry.prompt.id) is entry:
                    del by_id[entry.prompt.id]
                    if not by_id:
                        del self._labeled[entry.label]
            return
        if entry.version is None:
            return
        with self._lock:
            by_version = self._pinned.get(entry.prompt.id)
            if by_version is not None and by_version.get(entry.version) is entry:
                del by_version[entry.version]
                if not by_version:
                    del self._pinned[entry.prompt.id]

    # ------------------------------------------------------------------------------------------------------
    # the epoch moved
    # ------------------------------------------------------------------------------------------------------

    def _revalidate(self) -> None:
        self._generation += 1
        self._revalidate_copies()

    def _revalidate_copies(self) -> None:
        """The epoch moved: each CURRENT copy is compared with the L2's stream value (one GET each, no table read):
        replaced by a different one, kept fresh by the same one, otherwise marked for re-validation — never dropped,
        so it stays the last good copy for stale-if-error until a newer one is in hand. Not-found answers are
        forgotten and the catalog is re-read."""
        self._not_found.clear()
        self._catalog.revalidate()
        for key, entry in self._prompts.items():
            if entry.label is not None:
                self._revalidate_label(key, entry)
                continue
            if entry.version is not None or not isinstance(key, str):
                continue  # exact versions are immutable
            shared = self._tiers.read_shared(key, CURRENT, stream_only=True)
            if self._map.get(key) is not entry:
                continue  # replaced meanwhile
            if shared is None or shared.token is None:
                entry.invalidated = True
                continue
            if entry.token is not None and compare_tokens(shared.token, entry.token) == 0:
                entry.expires_at = max(entry.expires_at, self._clock() + self._options.max_age)
                entry.invalidated = False
                continue
            if shared.item is None or is_deleted(shared.item):
                self._forget(key)
            else:
                try:
                    self._remember(key, prompt_from_item(shared.item, 1, Provenance("l2", False, self._clock(), self._clock)),
                                   None, self._clock(), shared.token)
                except PromptStoreError as err:
                    logger.warning("L2 value of %s ignored: %s", key, err)
                    entry.invalidated = True
                    continue
            self._counters.revalidations += 1

    def _revalidate_label(self, key: Hashable, entry: _Entry) -> None:
        """As a CURRENT copy: replaced by the L2's different stream value, kept by the same, else marked."""
        assert entry.label is not None
        shared = self._tiers.read_shared(entry.prompt.id, label_item_key(entry.label), stream_only=True)
        if self._map.get(key) is not entry:
            return
        if shared is None or shared.token is None:
            entry.invalidated = True
            return
        if entry.token is not None and compare_tokens(shared.token, entry.token) == 0:
            entry.expires_at = max(entry.expires_at, self._clock() + self._options.max_age)
            entry.invalidated = False
            return
        try:
            self._accept_label(key, entry.prompt.id, entry.label, shared.item, self._clock(), shared.token)
        except PromptNotFoundError:
            pass
        except PromptStoreError as err:
            logger.warning("L2 value of %s/%s ignored: %s", entry.prompt.id, entry.label, err)
            entry.invalidated = True
            return
        self._counters.revalidations += 1

    # ------------------------------------------------------------------------------------------------------

    @staticmethod
    def _assert_valid(prompt_id: Any, version: Any) -> None:
        """Ids and versions that cannot exist are not found, without a remote call."""
        if not is_valid_prompt_id(prompt_id):
            raise PromptNotFoundError(_show_id(prompt_id), version, INVALID_ID_REASON)
        if version is not None and not (
            isinstance(version, int) and not isinstance(version, bool) and 1 <= version <= MAX_VERSION_NUMBER
        ):
            raise PromptNotFoundError(prompt_id, version, f"a version is an integer from 1 to {MAX_VERSION_NUMBER}")


def _show_id(prompt_id: Any) -> str:
    text = prompt_id if isinstance(prompt_id, str) else repr(prompt_id)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= 120 else text[:117] + "..."
