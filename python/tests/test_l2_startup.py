"""The Valkey adapter's start-up budget (the Node client's ``l2ConnectTimeoutMs``): for the first second from a
reader's first L2 call, a call may take until that second ends; after it, ``l2_timeout_ms`` bounds every call. A
real redis-server (TLS, ACL users) behind a loopback proxy that holds every answer back for a while."""
import socket
import threading
import time
from typing import Any, List

from cdk_prompt_serving_runtime import PromptClient
from cdk_prompt_serving_runtime.schema.l2 import l2_item_key
from cdk_prompt_serving_runtime.valkey import ValkeyL2
from services import READER_PASSWORD, CallCounter, RedisServer, create_serving_table, put_items

POINTER = {
    "prompt_id": {"S": "slow"}, "version": {"S": "CURRENT"}, "version_number": {"N": "1"}, "revision": {"N": "1"},
    "checksum": {"S": "sha256:" + "1" * 64}, "status": {"S": "ACTIVE"}, "template_type": {"S": "TEXT"},
    "text": {"S": "Hello {{name}}"}, "input_variables": {"L": [{"S": "name"}]},
}


class _SlowProxy:
    """Forwards to the cache; every chunk the cache sends back is held ``delay`` seconds first."""

    def __init__(self, target_port: int, delay: float) -> None:
        self.delay = delay
        self._target = target_port
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self._socks: List[Any] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            self._socks += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, src: Any, dst: Any, slow: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
                if not data:
                    return
                if slow and self.delay:
                    time.sleep(self.delay)
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self._listener.close()
        for s in self._socks:
            s.close()


def slow_reader_l2(redis_secure: RedisServer, proxy: _SlowProxy, **overrides: Any) -> ValkeyL2:
    options = dict(auth="none", user="reader", password=READER_PASSWORD, ssl_ca_certs=redis_secure.ca, cluster=False,
                   timeout_ms=30)
    options.update(overrides)
    l2 = ValkeyL2("127.0.0.1", redis_secure.port, **options)
    l2._endpoint = ("127.0.0.1", proxy.port)  # the proxy stands between the reader and the cache
    return l2


def test_a_first_l2_read_slower_than_the_l2_timeout_but_inside_the_start_up_budget_is_served_from_the_l2(
        ddb_local: Any, ddb: Any, redis_secure: RedisServer) -> None:
    table = create_serving_table(ddb, "py-l2-startup")
    put_items(ddb, table, [POINTER])
    proxy = _SlowProxy(redis_secure.port, 0.0)
    try:
        # GIVEN the prompt in the L2 (a first reader's fill)
        first = PromptClient(table_name=table, dynamodb_client=ddb_local.client(),
                             l2=slow_reader_l2(redis_secure, proxy, timeout_ms=2000))
        assert first.get_prompt("slow").version == 1
        # AND a cache whose every answer comes 60 ms late (a container starting beside many others), while a
        # reader's L2 timeout is 30 ms
        proxy.delay = 0.06
        client_ddb = ddb_local.client()
        counter = CallCounter(client_ddb)
        reader = PromptClient(table_name=table, dynamodb_client=client_ddb, l2=slow_reader_l2(redis_secure, proxy))
        # WHEN the new reader reads the prompt (its first L2 calls: a connection, the epoch, the value)
        started = time.monotonic()
        prompt = reader.get_prompt("slow")
        took = time.monotonic() - started
        # THEN it was served from the L2, within the start-up budget (1 s), not from the table
        assert prompt.version == 1
        assert "slow/CURRENT" not in counter.keys, counter.keys
        assert reader.stats()["l2_hits"] == 1 and reader.stats()["l2_errors"] == 0
        assert took < 1.2
        first.close()
        reader.close()
    finally:
        proxy.close()
        ddb.delete_table(TableName=table)


def test_after_the_start_up_budget_a_slow_answer_costs_the_l2_timeout(redis_secure: RedisServer) -> None:
    proxy = _SlowProxy(redis_secure.port, 0.0)
    try:
        # GIVEN a reader whose first call was answered in time (its start-up budget begins), 30 ms timeout
        l2 = slow_reader_l2(redis_secure, proxy)
        key = l2_item_key("t", "x", "CURRENT")
        assert l2.get(key) is None
        # WHEN the cache answers 300 ms late, first inside the start-up budget, then after it
        proxy.delay = 0.3
        started = time.monotonic()
        assert l2.get(key) is None  # inside: waited for
        inside = time.monotonic() - started
        time.sleep(max(0.0, 1.1 - (time.monotonic() - started)))
        while l2.tripped:  # (not expected: the call inside the budget was answered)
            time.sleep(0.05)
        started = time.monotonic()
        try:
            l2.get(key)
            answered = True
        except Exception:  # noqa: BLE001 - the timeout
            answered = False
        after = time.monotonic() - started
        # THEN the call inside the budget waited for its answer; the call after it gave up at the L2 timeout
        assert inside >= 0.25 and not answered and after < 0.25, (inside, answered, after)
        assert l2.tripped
    finally:
        proxy.close()


def test_the_start_up_budget_is_read_from_the_environment(redis_secure: RedisServer) -> None:
    env = {"PROMPT_SERVING_CACHE_ENDPOINT": redis_secure.endpoint, "PROMPT_SERVING_CACHE_AUTH": "none",
           "PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS": "250"}
    assert ValkeyL2.from_environment(env)._connect_timeout == 0.25
    assert ValkeyL2.from_environment(dict(env, PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS=""))._connect_timeout == 1.0
    for bad in ("soon", "-1"):
        try:
            ValkeyL2.from_environment(dict(env, PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS=bad))
        except ValueError as err:
            assert "PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS" in str(err)
        else:
            raise AssertionError(f"{bad!r} accepted")
