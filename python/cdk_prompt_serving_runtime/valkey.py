"""The Valkey/Redis L2 adapter (redis-py, the ``valkey`` extra): TLS, IAM auth tokens, cluster redirects, bounded
reconnects. ``PromptClient()`` builds one by itself when ``PROMPT_SERVING_CACHE_ENDPOINT`` is set.

Its parts: this module routes each call (below) and holds the adapter; :mod:`.valkey_connection` the redis-py
connection class (a fresh IAM token per connection, the age bound, the start-up budget, socket timeouts);
:mod:`.valkey_breaker` the breaker (after a failure every call fails at once while one probe looks for the cache);
:mod:`.valkey_options` the ``PROMPT_SERVING_CACHE_*`` variables and the password source.

Cluster mode (``PROMPT_SERVING_CACHE_CLUSTER=true``, the default: a serverless cache is a cluster endpoint) sends
every command, all single-key, to the endpoint and follows ``MOVED`` redirects, remembering the node of each
slot; no ``CLUSTER``/``COMMAND`` calls are needed, so the narrow ACL of the construct's users suffices.

Thread safety: safe to share between threads (redis-py connection pools are thread-safe; the slot map and the
breaker are guarded by locks).
"""
import os
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .iam_token import RESOURCE_SERVERLESS
from .valkey_breaker import (PAUSE_MAX_SECONDS, PAUSE_MIN_SECONDS, PROBE_INTERVAL_SECONDS, Breaker,
                             L2UnavailableError)
from .valkey_connection import (HEALTH_CHECK_INTERVAL_SECONDS, MAX_CONNECTION_AGE_SECONDS, AuthRefusedError,
                                StartupBudget, is_auth_failure, pool_options)
from .valkey_options import options_from_environment, password_source

__all__ = [
    "HEALTH_CHECK_INTERVAL_SECONDS", "MAX_CONNECTION_AGE_SECONDS", "PAUSE_MAX_SECONDS", "PAUSE_MIN_SECONDS",
    "PROBE_INTERVAL_SECONDS", "L2UnavailableError", "ValkeyL2", "key_slot",
]


def _crc16(data: bytes) -> int:
    """CRC16-XMODEM, Redis Cluster's key hash."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def key_slot(key: str) -> int:
    """The cluster slot of ``key`` (hash tags ``{…}`` honoured, as Redis does)."""
    data = key.encode("utf-8")
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1 : end]
    return _crc16(data) % 16384


class ValkeyL2:
    """A :class:`~cdk_prompt_serving_runtime.l2.PromptCacheL2` over redis-py.

    :param host: the cache endpoint's host
    :param port: its port
    :param tls: TLS to the cache (ElastiCache requires it). Default ``True``.
    :param auth: ``"iam"`` (a fresh IAM token per connection) or ``"none"`` (``password`` if given)
    :param user: the user id (IAM auth) or ACL user name
    :param cache_name: the cache name the IAM token is signed for
    :param region: the AWS Region for the token; default ``AWS_REGION`` / ``AWS_DEFAULT_REGION``
    :param resource_type: ``ServerlessCache`` (default) or ``ReplicationGroup``
    :param cluster: follow ``MOVED`` redirects (cluster-mode endpoint). Default ``True``.
    :param timeout_ms: socket connect and read timeout of every call once the start-up is over. Default 100.
    :param connect_timeout_ms: the start-up budget: for this long from the first call, a call may take until it
        ends (the Node client's ``l2ConnectTimeoutMs``). Default 1000; ``PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS`` in
        :meth:`from_environment`.
    :param password: a static password (``auth="none"`` with an ACL user, or tests)
    :param ssl_ca_certs: a CA bundle file for TLS; default the system's
    :param credentials: botocore credentials for IAM tokens; default a botocore session's
    :param token_provider: builds the password per connection (overrides IAM/static)
    :param max_connection_age_seconds: a connection older than this is reopened (with a fresh token) before its
        next command. Default 11 h (ElastiCache closes IAM-authenticated connections at 12 h).
    :param monotonic: the clock for connection ages and pauses (tests pass a fake one)
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: bool = True,
        auth: str = "iam",
        user: Optional[str] = None,
        cache_name: Optional[str] = None,
        region: Optional[str] = None,
        resource_type: str = RESOURCE_SERVERLESS,
        cluster: bool = True,
        timeout_ms: float = 100,
        connect_timeout_ms: float = 1000,
        password: Optional[str] = None,
        ssl_ca_certs: Optional[str] = None,
        credentials: Any = None,
        token_provider: Optional[Callable[[], str]] = None,
        max_connection_age_seconds: float = MAX_CONNECTION_AGE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        import redis  # the optional extra

        token_provider = password_source(auth=auth, user=user, cache_name=cache_name, region=region,
                                         resource_type=resource_type, password=password, credentials=credentials,
                                         token_provider=token_provider)
        self._redis = redis
        self._errors = (AuthRefusedError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
        self._cluster = cluster
        self._timeout = timeout_ms / 1000.0
        self._connect_timeout = connect_timeout_ms / 1000.0
        self._budget = StartupBudget(self._timeout, self._connect_timeout)
        self._breaker = Breaker(lambda: self._route("", lambda r: r.ping()), self._refused)
        self._lock = threading.Lock()
        self._slots: Dict[int, Tuple[str, int]] = {}
        self._clients: Dict[Tuple[str, int], Any] = {}
        self._endpoint = (host, port)
        self._pool_kwargs = pool_options(redis, tls=tls, user=user, token_provider=token_provider,
                                         timeout=self._timeout, max_age=max_connection_age_seconds,
                                         monotonic=monotonic, call_timeout=self._budget, ssl_ca_certs=ssl_ca_certs)

    @classmethod
    def from_environment(
        cls, env: Optional[Mapping[str, str]] = None, *, timeout_ms: float = 100, **overrides: Any
    ) -> "ValkeyL2":
        """The adapter the ``PROMPT_SERVING_CACHE_*`` variables describe (the construct's ``addReader`` sets them).

        :raises ValueError: naming the variable when one is missing or malformed
        """
        host, port, options = options_from_environment(os.environ if env is None else env, timeout_ms)
        options.update(overrides)
        return cls(host, port, **options)

    # -- PromptCacheL2 ---------------------------------------------------------------------------------

    def get(self, key: str) -> Optional[str]:
        return self._call(key, lambda r: r.get(key))  # type: ignore[no-any-return]

    write_through = True
    """The construct's cache tier: the invalidation function writes every change through and moves the epoch."""

    def set(self, key: str, value: str, ttl_seconds: int) -> None:
        """Stores a fill for ``ttl_seconds`` (the reader's ACL allows writes to its fill keys only)."""
        self._call(key, lambda r: r.set(key, value, ex=ttl_seconds))

    @property
    def tripped(self) -> bool:
        """Whether the breaker is open: calls fail at once while a background probe looks for the cache."""
        return self._breaker.tripped

    @property
    def probes(self) -> int:
        """Breaker probes run so far (tests, diagnostics)."""
        return self._breaker.probes

    def close(self) -> None:
        self._breaker.close()
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            try:
                c.connection_pool.disconnect()
            except Exception:  # noqa: BLE001
                pass

    # -- routing ---------------------------------------------------------------------------------------

    def _client(self, addr: Tuple[str, int]) -> Any:
        with self._lock:
            c = self._clients.get(addr)
            if c is None:
                pool = self._redis.ConnectionPool(host=addr[0], port=addr[1], **self._pool_kwargs)
                c = self._clients[addr] = self._redis.Redis(connection_pool=pool)
            return c

    def _call(self, key: str, run: Callable[[Any], Any]) -> Any:
        if self._budget.ends_at is None:
            self._budget()  # the start-up budget starts at the first call
        if self._breaker.tripped:
            raise L2UnavailableError("L2 skipped after a failure (a background probe is looking for it)")
        try:
            return self._route(key, run)
        except self._errors as err:
            self._breaker.trip(err)
            raise

    def _refused(self, err: BaseException) -> bool:
        """Whether ``err`` is a refused login (probed on the growing pause, not every half second)."""
        return isinstance(err, (AuthRefusedError, self._redis.exceptions.AuthenticationError)) or is_auth_failure(err)

    def _route(self, key: str, run: Callable[[Any], Any]) -> Any:
        slot = key_slot(key) if self._cluster else -1
        addr = self._slots.get(slot, self._endpoint)
        for _ in range(3):
            try:
                return run(self._client(addr))
            except self._redis.exceptions.ResponseError as err:
                moved = str(err).split()
                if is_auth_failure(err):  # the connection was refused (a deleted user, a bad token): back off
                    raise AuthRefusedError(str(err)) from err
                if not self._cluster or len(moved) != 3 or moved[0] != "MOVED":
                    raise
                host, _, port = moved[2].rpartition(":")
                addr = (host or self._endpoint[0], int(port))
                with self._lock:
                    self._slots[int(moved[1])] = addr
        raise L2UnavailableError("too many MOVED redirects")
