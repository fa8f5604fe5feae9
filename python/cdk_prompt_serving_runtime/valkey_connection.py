"""The Valkey adapter's connections (:class:`~cdk_prompt_serving_runtime.valkey.ValkeyL2`): the redis-py connection
class and pool settings, the start-up budget, and what a refused login looks like.

Works with redis-py 4.3 (Debian 12) and later: the IAM token is set in a ``Connection`` subclass's ``on_connect``
(no ``credential_provider`` needed), so every new connection signs a fresh token, and a connection older than
``max_connection_age_seconds`` (default 11 h; ElastiCache drops IAM connections at 12 h) is closed and reopened
before its next command.

A start-up budget (as the Node client's): from the adapter's first call (a reader's first L2 read, the start-up epoch
read), for ``connect_timeout_ms`` (1 s by default), a call may take until that budget ends (its first connection, TLS
handshake and login are paid once, more slowly on a host where others start beside it); after that every call is
bounded by ``timeout_ms``. Only a call that fails to answer within the budget trips the breaker.

Connections cannot hang: after the start-up every call has a socket timeout (``timeout_ms``), so a black-holed
connection fails its call within that time and is closed (redis-py drops a connection whose call timed out); an idle
pooled connection is health-checked (``PING``) before use once ``health_check_interval`` has passed, and TCP
keep-alive is on.
"""
import time
from typing import Any, Callable, Dict, Optional

MAX_CONNECTION_AGE_SECONDS = 11 * 3600
HEALTH_CHECK_INTERVAL_SECONDS = 5


class StartupBudget:
    """The socket timeout of a command sent now: ``timeout`` (seconds), or during the start-up (``connect_timeout``
    from the first call) until the start-up ends (``src/runtime/tiers.ts`` ``l2CallTimeoutMs``)."""

    def __init__(self, timeout: float, connect_timeout: float) -> None:
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.ends_at: Optional[float] = None
        """When the start-up budget ends (``time.monotonic``): ``None`` before the first call, ``0`` once over."""

    def __call__(self) -> float:
        ends_at = self.ends_at
        if ends_at == 0.0:
            return self.timeout
        now = time.monotonic()
        if ends_at is None:
            self.ends_at = now + self.connect_timeout
            return max(self.connect_timeout, self.timeout)
        if ends_at - now > self.timeout:
            return ends_at - now
        self.ends_at = 0.0  # over: one comparison from now on
        return self.timeout


class AuthRefusedError(Exception):
    """The server refused the login (a deleted ACL user, a bad token): reachable, but of no use until it accepts."""


def is_auth_failure(err: BaseException) -> bool:
    text = str(err)
    return text.startswith(("WRONGPASS", "NOAUTH")) or "invalid username-password pair" in text


def pool_options(redis: Any, *, tls: bool, user: Optional[str], token_provider: Optional[Callable[[], str]],
                 timeout: float, max_age: float, monotonic: Callable[[], float], call_timeout: Callable[[], float],
                 ssl_ca_certs: Optional[str]) -> Dict[str, Any]:
    """The keyword arguments of every ``redis.ConnectionPool`` of one adapter (one pool per cluster node)."""
    base = redis.connection.SSLConnection if tls else redis.connection.Connection
    options: Dict[str, Any] = {
        "connection_class": connection_class(base, token_provider, max_age, monotonic, call_timeout),
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "socket_keepalive": True,
        "health_check_interval": HEALTH_CHECK_INTERVAL_SECONDS,
        "username": user if (user and token_provider is not None) else None,
        "decode_responses": True,
        "max_connections": 64,
    }
    if tls:
        options["ssl_cert_reqs"] = "required"
        options["ssl_check_hostname"] = True
        if ssl_ca_certs:
            options["ssl_ca_certs"] = ssl_ca_certs
    return options


def connection_class(base: Any, token_provider: Optional[Callable[[], str]], max_age: float,
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
