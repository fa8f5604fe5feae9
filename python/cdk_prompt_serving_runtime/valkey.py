"""The Valkey/Redis L2 adapter (redis-py, the ``valkey`` extra): TLS, IAM auth tokens, cluster redirects, bounded
reconnects. ``PromptClient()`` builds one by itself when ``PROMPT_SERVING_CACHE_ENDPOINT`` is set.

Works with redis-py 4.3 (Debian 12) and later: the IAM token is set in a ``Connection`` subclass's
``on_connect`` (no ``credential_provider`` needed), so every new connection signs a fresh token, and a connection
older than ``max_connection_age_seconds`` (default 11 h; ElastiCache drops IAM connections at 12 h) is closed
and reopened before its next command.

Cluster mode (``PROMPT_SERVING_CACHE_CLUSTER=true``, the default: a serverless cache is a cluster endpoint) sends
every command, all single-key, to the endpoint and follows ``MOVED`` redirects, remembering the node of each
slot; no ``CLUSTER``/``COMMAND`` calls are needed, so the narrow ACL of the construct's users suffices.

A start-up budget (as the Node client's): from the adapter's first call (a reader's first L2 read, the start-up epoch
read), for ``connect_timeout_ms`` (1 s by default), a call may take until that budget ends (its first connection, TLS
handshake and login are paid once, more slowly on a host where others start beside it); after that every call is
bounded by ``timeout_ms``. Only a call that fails to answer within the budget trips the breaker.

Connections cannot hang: after the start-up every call has a socket timeout (``timeout_ms``), so a black-holed connection fails its
call within that time and is closed (redis-py drops a connection whose call timed out); an idle pooled connection
is health-checked (``PING``) before use once ``health_check_interval`` has passed, and TCP keep-alive is on.

A breaker: after a call fails to reach the cache (refused, closed, timed out), every call fails at once (no socket
timeout waited) while one background probe per adapter (a daemon thread) looks for the cache every 0.2 to 0.6 s: a
``PING`` within ``timeout_ms`` on a fresh connection (the failed one was closed). Calls resume as soon as a probe is
answered, so a cache that comes back serves again within about half a second, and a cache that is down costs a
reader one timeout, then nothing but a counter. A refused login (an ACL user deleted, a bad token) is probed on a
growing, jittered pause instead (1 s doubling to 10 s, times 1 to 1.25): at most one connection attempt per second.

Thread safety: safe to share between threads (redis-py connection pools are thread-safe; the slot map and the
pause are guarded by a lock).
"""
import logging
import os
import random
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .iam_token import RESOURCE_REPLICATION_GROUP, RESOURCE_SERVERLESS, iam_auth_token
from .schema.env import Env

logger = logging.getLogger(__name__)

MAX_CONNECTION_AGE_SECONDS = 11 * 3600
PAUSE_MIN_SECONDS = 1.0
PAUSE_MAX_SECONDS = 10.0
PROBE_INTERVAL_SECONDS = 0.4
"""The breaker's probe runs this long after the previous one, times a jitter of 0.5 to 1.5."""
HEALTH_CHECK_INTERVAL_SECONDS = 5


class L2UnavailableError(Exception):
    """The adapter's breaker is open after a failure (a probe is looking for the cache); the read goes to the table."""


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


def _parse_bool(name: str, raw: Optional[str], default: bool) -> bool:
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(f"{name} must be true or false, got {raw!r}")


def _parse_endpoint(endpoint: str) -> Tuple[str, int]:
    host, sep, port = endpoint.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{Env.cache_endpoint} must be host:port, got {endpoint!r}")
    return host.strip("[]"), int(port)


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

        if auth not in ("iam", "none"):
            raise ValueError(f"{Env.cache_auth} must be iam or none, got {auth!r}")
        if resource_type not in (RESOURCE_SERVERLESS, RESOURCE_REPLICATION_GROUP):
            raise ValueError(
                f"{Env.cache_resource_type} must be {RESOURCE_SERVERLESS} or {RESOURCE_REPLICATION_GROUP}, got {resource_type!r}"
            )
        if token_provider is None and auth == "iam":
            if not user or not cache_name:
                raise ValueError(
                    f"IAM auth needs {Env.cache_user} and {Env.cache_name} (the construct's addReader sets both)"
                )
            region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            if not region:
                raise ValueError("IAM auth needs a Region: set AWS_REGION (the Lambda runtime does)")
            if credentials is None:
                import botocore.session

                credentials = botocore.session.Session().get_credentials()
                if credentials is None:
                    raise ValueError("IAM auth needs AWS credentials; none found in the standard places")
            creds, name, uid, reg, rtype = credentials, cache_name, user, region, resource_type
            token_provider = lambda: iam_auth_token(name, uid, reg, creds, rtype)  # noqa: E731
        elif token_provider is None and password is not None:
            static = password
            token_provider = lambda: static  # noqa: E731

        self._redis = redis
        self._cluster = cluster
        self._timeout = timeout_ms / 1000.0
        self._connect_timeout = connect_timeout_ms / 1000.0
        self._startup_ends_at: Optional[float] = None
        """When the start-up budget ends (``time.monotonic``): ``None`` before the first call, ``0`` once over."""
        self._lock = threading.Lock()
        self._slots: Dict[int, Tuple[str, int]] = {}
        self._clients: Dict[Tuple[str, int], Any] = {}
        self._endpoint = (host, port)
        self._pause = 0.0
        self._tripped = False
        self._probing = False
        self._closed = False
        self.probes = 0
        """Breaker probes run so far (tests, diagnostics)."""
        self._monotonic = monotonic
        base = redis.connection.SSLConnection if tls else redis.connection.Connection
        self._pool_kwargs: Dict[str, Any] = {
            "connection_class": _connection_class(base, token_provider, max_connection_age_seconds, monotonic,
                                                  self._call_timeout),
            "socket_timeout": self._timeout,
            "socket_connect_timeout": self._timeout,
            "socket_keepalive": True,
            "health_check_interval": HEALTH_CHECK_INTERVAL_SECONDS,
            "username": user if (user and token_provider is not None) else None,
            "decode_responses": True,
            "max_connections": 64,
        }
        if tls:
            self._pool_kwargs["ssl_cert_reqs"] = "required"
            self._pool_kwargs["ssl_check_hostname"] = True
            if ssl_ca_certs:
                self._pool_kwargs["ssl_ca_certs"] = ssl_ca_certs

    @classmethod
    def from_environment(
        cls, env: Optional[Mapping[str, str]] = None, *, timeout_ms: float = 100, **overrides: Any
    ) -> "ValkeyL2":
        """The adapter the ``PROMPT_SERVING_CACHE_*`` variables describe (the construct's ``addReader`` sets them).

        :raises ValueError: naming the variable when one is missing or malformed
        """
        env = os.environ if env is None else env
        endpoint = env.get(Env.cache_endpoint)
        if not endpoint:
            raise ValueError(f"{Env.cache_endpoint} is not set")
        host, port = _parse_endpoint(endpoint)
        options: Dict[str, Any] = {
            "tls": _parse_bool(Env.cache_tls, env.get(Env.cache_tls), True),
            "auth": (env.get(Env.cache_auth) or "iam").strip(),
            "user": env.get(Env.cache_user) or None,
            "cache_name": env.get(Env.cache_name) or None,
            "resource_type": (env.get(Env.cache_resource_type) or RESOURCE_SERVERLESS).strip(),
            "cluster": _parse_bool(Env.cache_cluster, env.get(Env.cache_cluster), True),
            "region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
            "timeout_ms": timeout_ms,
        }
        connect_timeout = env.get("PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS")
        if connect_timeout is not None and connect_timeout.strip() != "":
            try:
                options["connect_timeout_ms"] = float(connect_timeout)
            except ValueError:
                raise ValueError(f"PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS must be a number, got {connect_timeout!r}") from None
            if not options["connect_timeout_ms"] >= 0:
                raise ValueError(f"PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS must be 0 or more, got {connect_timeout!r}")
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
        return self._tripped

    def close(self) -> None:
        with self._lock:
            self._closed = True
            clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            try:
                c.connection_pool.disconnect()
            except Exception:  # noqa: BLE001
                pass

    # -- routing, pauses -------------------------------------------------------------------------------

    def _client(self, addr: Tuple[str, int]) -> Any:
        with self._lock:
            c = self._clients.get(addr)
            if c is None:
                pool = self._redis.ConnectionPool(host=addr[0], port=addr[1], **self._pool_kwargs)
                c = self._clients[addr] = self._redis.Redis(connection_pool=pool)
            return c

    def _call_timeout(self) -> float:
        """The socket timeout of a command sent now: ``timeout_ms``, or during the start-up (``connect_timeout_ms``
        from the first call) until the start-up ends (``src/runtime/tiers.ts`` ``l2CallTimeoutMs``)."""
        ends_at = self._startup_ends_at
        if ends_at == 0.0:
            return self._timeout
        now = time.monotonic()
        if ends_at is None:
            self._startup_ends_at = now + self._connect_timeout
            return max(self._connect_timeout, self._timeout)
        if ends_at - now > self._timeout:
            return ends_at - now
        self._startup_ends_at = 0.0  # over: one comparison from now on
        return self._timeout

    def _call(self, key: str, run: Callable[[Any], Any]) -> Any:
        if self._startup_ends_at is None:
            self._call_timeout()  # the start-up budget starts at the first call
        if self._tripped:
            raise L2UnavailableError("L2 skipped after a failure (a background probe is looking for it)")
        try:
            return self._route(key, run)
        except (_AuthRefused, self._redis.exceptions.ConnectionError, self._redis.exceptions.TimeoutError, OSError) as err:
            self._trip(err)
            raise

    def _refused(self, err: BaseException) -> bool:
        """Whether ``err`` is a refused login (probed on the growing pause, not every half second)."""
        return isinstance(err, (_AuthRefused, self._redis.exceptions.AuthenticationError)) or _is_auth_failure(err)

    def _route(self, key: str, run: Callable[[Any], Any]) -> Any:
        slot = key_slot(key) if self._cluster else -1
        addr = self._slots.get(slot, self._endpoint)
        for _ in range(3):
            try:
                return run(self._client(addr))
            except self._redis.exceptions.ResponseError as err:
                moved = str(err).split()
                if _is_auth_failure(err):  # the connection was refused (a deleted user, a bad token): back off
                    raise _AuthRefused(str(err)) from err
                if not self._cluster or len(moved) != 3 or moved[0] != "MOVED":
                    raise
                host, _, port = moved[2].rpartition(":")
                addr = (host or self._endpoint[0], int(port))
                with self._lock:
                    self._slots[int(moved[1])] = addr
        raise L2UnavailableError("too many MOVED redirects")

    # -- the breaker -----------------------------------------------------------------------------------

    def _trip(self, err: BaseException) -> None:
        """Opens the breaker and starts its probe (one per adapter)."""
        with self._lock:
            self._tripped = True
            if self._probing or self._closed:
                return
            self._probing = True
        logger.debug("L2 cache unreachable, skipped until a probe answers: %s", err)
        threading.Thread(target=self._probe, args=(self._refused(err),), name="prompt-l2-probe",
                         daemon=True).start()

    def _probe(self, refused: bool) -> None:
        """Until a ``PING`` is answered: waits (0.2–0.6 s; after a refused login the growing pause), then pings."""
        try:
            while not self._closed:
                if refused:
                    self._pause = min(PAUSE_MAX_SECONDS, max(PAUSE_MIN_SECONDS, self._pause * 2))
                    time.sleep(self._pause * (1 + random.random() / 4))
                else:
                    time.sleep(PROBE_INTERVAL_SECONDS * (0.5 + random.random()))
                self.probes += 1
                try:
                    self._route("", lambda r: r.ping())
                except Exception as err:  # noqa: BLE001 - any failure: probe again
                    logger.debug("L2 probe failed: %s", err)
                    refused = self._refused(err)
                    continue
                with self._lock:
                    self._pause = 0.0
                    self._tripped = False
                return
        finally:
            with self._lock:
                self._probing = False


class _AuthRefused(Exception):
    """The server refused the login (a deleted ACL user, a bad token): reachable, but of no use until it accepts."""


def _is_auth_failure(err: BaseException) -> bool:
    text = str(err)
    return text.startswith(("WRONGPASS", "NOAUTH")) or "invalid username-password pair" in text


def _connection_class(base: Any, token_provider: Optional[Callable[[], str]], max_age: float,
                      monotonic: Callable[[], float], call_timeout: Callable[[], float]) -> Any:
    class PromptServingConnection(base):  # type: ignore[misc]
        """Signs a fresh password per connection; reconnects a connection older than ``max_age``; bounds each
        command (and a connection opened for it) by ``call_timeout()`` (the start-up budget, then ``timeout_ms``)."""

        _opened_at = 0.0
        _handshake = False

        def on_connect(self) -> None:
            self._sign(lambda: super(PromptServingConnection, self).on_connect())

        # Newer redis-py (8.1 tested) connects through on_connect_check_health and never calls on_connect: sign there too.
        def on_connect_check_health(self, check_health: bool = True) -> None:
            self._sign(lambda: super(PromptServingConnection, self).on_connect_check_health(check_health=check_health))

        def _sign(self, handshake: Callable[[], None]) -> None:
            if token_provider is not None:
                self.password = token_provider()
            self._opened_at = monotonic()
            self._handshake = True
            try:
                handshake()
            finally:
                self._handshake = False

        def _bound(self) -> None:
            timeout = call_timeout()
            current: Optional[float] = getattr(self, "socket_timeout", None)
            if timeout != current:  # only during the start-up, and once when it ends
                self.socket_timeout = self.socket_connect_timeout = timeout
                if self._sock is not None:
                    self._sock.settimeout(timeout)
                buffer = getattr(getattr(self, "_parser", None), "_buffer", None)
                if buffer is not None and hasattr(buffer, "socket_timeout"):
                    buffer.socket_timeout = timeout  # redis-py's reader restores this after a health check

        def connect(self, *args: Any, **kwargs: Any) -> None:
            if self._sock is None:
                self._bound()
            super().connect(*args, **kwargs)

        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            self._bound()
            if not self._handshake and self._sock is not None and monotonic() - self._opened_at > max_age:
                self.disconnect()
            super().send_packed_command(command, check_health)

    return PromptServingConnection
