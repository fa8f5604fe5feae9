"""The Valkey/Redis L2 against a real redis-server (TLS, ACL users, cluster mode, one node owning all slots), and
the cross-language contract: a Python reader and a Node reader (node-redis + src/schema/l2.ts) share one cache
and agree on every value."""
import time
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from cdk_prompt_serving_runtime import PromptClient, PromptNotFoundError
from cdk_prompt_serving_runtime.ddb_codec import to_json_item
from cdk_prompt_serving_runtime.schema.catalog import bloom_build, bloom_parameters
from cdk_prompt_serving_runtime.schema.l2 import encode_fill_value, l2_epoch_key, l2_fill_key, l2_item_key
from cdk_prompt_serving_runtime.valkey import ValkeyL2
from services import ADMIN_PASSWORD, READER_PASSWORD, CallCounter, RedisServer, create_serving_table, put_items, run_node_l2, wait_for

POINTER = {
    "prompt_id": {"S": "shared"}, "version": {"S": "CURRENT"}, "version_number": {"N": "1"}, "revision": {"N": "1"},
    "checksum": {"S": "sha256:" + "1" * 64}, "status": {"S": "ACTIVE"}, "template_type": {"S": "TEXT"},
    "text": {"S": "Hello {{name}} é 漢"}, "input_variables": {"L": [{"S": "name"}]},
    "inference_config": {"M": {"temperature": {"N": "0.5"}}}, "blob": {"B": b"\x00\x01\xff"},
}


def reader_l2(redis_secure: RedisServer, **overrides: Any) -> ValkeyL2:
    options: Dict[str, Any] = dict(auth="none", user="reader", password=READER_PASSWORD, ssl_ca_certs=redis_secure.ca,
                                   timeout_ms=2000)
    options.update(overrides)
    return ValkeyL2("127.0.0.1", redis_secure.port, **options)


@pytest.fixture
def shared_table(ddb: Any) -> Iterator[str]:
    table = create_serving_table(ddb, "py-l2")
    put_items(ddb, table, [POINTER])
    yield table
    ddb.delete_table(TableName=table)


def client_for(ddb_local: Any, table: str, l2: Any, **options: Any) -> Tuple[PromptClient, CallCounter]:
    ddb = ddb_local.client()
    counter = CallCounter(ddb)
    return PromptClient(table_name=table, dynamodb_client=ddb, l2=l2, **options), counter


def node(redis_secure: RedisServer, ops: List[Dict[str, Any]], user: str = "reader", password: str = READER_PASSWORD) -> Any:
    return run_node_l2({"port": redis_secure.port, "ca": redis_secure.ca, "username": user, "password": password, "ops": ops})


INC = "2026-01-02T03:04:05.678"
"""The stream label (table incarnation) the Node side writes with, playing the invalidation function."""


def writer(redis_secure: RedisServer, ops: List[Dict[str, Any]]) -> Any:
    """Node as the invalidation function (write-through and epoch scripts; the admin user has the writer's rights)."""
    return node(redis_secure, ops, user="admin", password=ADMIN_PASSWORD)


def test_a_prompt_one_client_read_from_the_table_is_served_to_another_from_the_l2(
    ddb_local: Any, shared_table: str, redis_secure: RedisServer,
) -> None:
    first, c1 = client_for(ddb_local, shared_table, reader_l2(redis_secure))
    assert first.get_prompt("shared").version == 1
    assert c1.keys == ["#catalog/CURRENT", "shared/CURRENT"]
    second, c2 = client_for(ddb_local, shared_table, reader_l2(redis_secure))
    prompt = second.get_prompt("shared")
    assert (prompt.version, prompt.render({"name": "A"})) == (1, "Hello A é 漢")
    assert dict(prompt.content)["blob"] == b"\x00\x01\xff"
    assert "shared/CURRENT" not in c2.keys
    assert second.stats()["l2_hits"] == 1
    # the fill lives for the reader's L1 bound (max_age_seconds + stale_while_revalidate_seconds), never 24 h
    ttl = redis_secure.admin().ttl(l2_fill_key(shared_table, "shared", "CURRENT"))
    assert 100 < ttl <= 120
    assert redis_secure.admin().exists(l2_item_key(shared_table, "shared", "CURRENT")) == 0


def test_python_and_node_agree_on_every_value(ddb_local: Any, shared_table: str, redis_secure: RedisServer, clock: Any) -> None:
    key = l2_item_key(shared_table, "shared", "CURRENT")
    fill_key = l2_fill_key(shared_table, "shared", "CURRENT")
    redis_secure.admin().delete(key)
    redis_secure.admin().delete(fill_key)
    # Python fills from the table; Node decodes exactly the item the table holds
    client, counter = client_for(ddb_local, shared_table, reader_l2(redis_secure), clock=clock, epoch_poll_interval_ms=1000)
    client.get_prompt("shared")
    decoded = node(redis_secure, [{"op": "decodeFill", "key": fill_key, "promptId": "shared"}])[0]
    expected = dict(POINTER, blob={"B": "AAH/"})
    assert decoded["item"] == expected
    assert decoded["fetchedAt"] == round(clock.now * 1000)
    # Node (the invalidation function) writes a newer pointer through and moves the epoch; Python takes it at its
    # next epoch poll, without a table read
    newer = to_json_item(dict(POINTER, revision={"N": "2"}, version_number={"N": "2"}, text={"S": "Hi {{name}}, v2"}))
    epoch = l2_epoch_key(shared_table)
    assert writer(redis_secure, [{"op": "writeThrough", "key": key, "item": newer, "inc": INC, "seq": "20"}])[0] == 1
    assert client._epoch.poll() is False  # the first read learnt the epoch (absent): no change yet
    writer(redis_secure, [{"op": "bumpEpoch", "key": epoch, "inc": INC}])
    counter.reset()
    assert client._epoch.poll() is True
    prompt = client.get_prompt("shared")
    assert (prompt.version, prompt.render({"name": "B"})) == (2, "Hi B, v2")
    assert "shared/CURRENT" not in counter.keys and client.stats()["revalidations"] == 1  # (this table has no catalog)
    # an older write-through (a redelivered stream record) is refused; a reader may not write stream values at all
    assert writer(redis_secure, [{"op": "writeThrough", "key": key, "item": to_json_item(POINTER), "inc": INC, "seq": "19"}])[0] == 0
    import redis

    with pytest.raises(redis.exceptions.NoPermissionError):
        reader_l2(redis_secure).set(key, "{}", 60)
    with pytest.raises(redis.exceptions.NoPermissionError):
        reader_l2(redis_secure).set(epoch, "1 " + INC, 60)
    assert node(redis_secure, [{"op": "decodeStream", "key": key, "promptId": "shared"}])[0]["seq"] == "20"


def test_the_epoch_is_polled_once_per_interval_in_the_background(ddb_local: Any, shared_table: str, redis_secure: RedisServer, clock: Any) -> None:
    client, _ = client_for(ddb_local, shared_table, reader_l2(redis_secure), clock=clock, epoch_poll_interval_ms=1000)
    client.get_prompt("shared")
    for _ in range(1000):
        client.get_prompt("shared")
    wait_for(lambda: client._epoch.polls == 1)
    for _ in range(1000):
        client.get_prompt("shared")
    assert client._epoch.polls == 1  # same interval: no more polls
    clock.advance(1.5)
    wait_for(lambda: client.get_prompt("shared") is not None and client._epoch.polls == 2)




def test_l2_down_reads_go_to_the_table(ddb_local: Any, shared_table: str) -> None:
    server = RedisServer()
    try:
        l2 = ValkeyL2("127.0.0.1", server.port, tls=False, auth="none", cluster=False, timeout_ms=100)
        warm, _ = client_for(ddb_local, shared_table, l2)
        warm.get_prompt("shared")
        assert server.admin().exists(l2_fill_key(shared_table, "shared", "CURRENT")) == 1
        server.stop()
        for _ in range(5):
            client, counter = client_for(ddb_local, shared_table, l2)
            started = time.monotonic()
            assert client.get_prompt("shared").version == 1
            assert time.monotonic() - started < 0.5
            assert "shared/CURRENT" in counter.keys
            assert client.stats()["l2_errors"] >= 1
    finally:
        server.stop()


def test_iam_auth_signs_a_token_per_connection_for_the_user(redis_secure: RedisServer) -> None:
    from botocore.credentials import Credentials

    l2 = ValkeyL2("127.0.0.1", redis_secure.port, auth="iam", user="iam-reader", cache_name="test-cache",
                  region="us-east-1", credentials=Credentials("AKIDEXAMPLE", "secret", None), ssl_ca_certs=redis_secure.ca,
                  timeout_ms=2000)
    assert l2.get(l2_item_key("t", "nothing", "CURRENT")) is None
    clients = redis_secure.admin().client_list()
    assert any(c.get("user") == "iam-reader" for c in clients)


def test_a_fresh_password_per_connection_and_reconnects_of_old_connections(redis_secure: RedisServer, clock: Any) -> None:
    calls: List[float] = []

    def provider() -> str:
        calls.append(clock.now)
        return READER_PASSWORD

    l2 = reader_l2(redis_secure, token_provider=provider, max_connection_age_seconds=100, monotonic=clock)
    key = l2_item_key("t", "nothing", "CURRENT")
    l2.get(key)
    clock.advance(60)
    l2.get(key)
    assert len(calls) == 1  # one connection, one token
    clock.advance(60)
    l2.get(key)
    assert len(calls) == 2  # older than the bound: reopened with a fresh token before the command
    redis_secure.admin().execute_command("CLIENT", "KILL", "USER", "reader")
    assert l2.get(key) is None  # a connection the server dropped is reopened, signing again
    assert len(calls) == 3


def test_the_reader_acl_refuses_other_keys(redis_secure: RedisServer) -> None:
    import redis

    with pytest.raises(redis.exceptions.NoPermissionError):
        reader_l2(redis_secure).get("someone-else:key")


def test_prompt_client_builds_the_l2_from_the_environment_contract(ddb_local: Any, shared_table: str, redis_secure: RedisServer,
                                                                   monkeypatch: Any) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", redis_secure.ca)  # the test CA stands in for the system's
    env = {
        "PROMPT_SERVING_TABLE_NAME": shared_table,
        "PROMPT_SERVING_CACHE_ENDPOINT": redis_secure.endpoint,
        "PROMPT_SERVING_CACHE_USER": "iam-reader",
        "PROMPT_SERVING_CACHE_NAME": "test-cache",
        "AWS_REGION": "us-east-1",
    }
    ddb = ddb_local.client()
    first = PromptClient(dynamodb_client=ddb, environ=env)
    first.get_prompt("shared")
    second = PromptClient(dynamodb_client=ddb, environ=env)
    second.get_prompt("shared")
    assert second.stats()["l2_hits"] == 1 and second.stats()["l2_errors"] == 0
    broken = PromptClient(dynamodb_client=ddb, environ=dict(env, PROMPT_SERVING_CACHE_TLS="maybe"))
    assert broken.get_prompt("shared").version == 1  # a bad cache setting never fails a read
    assert broken.stats()["l2_errors"] == 1


def test_a_client_built_from_the_environment_takes_its_start_up_epoch_read_as_the_watch_s_first(
        ddb_local: Any, shared_table: str, redis_secure: RedisServer, monkeypatch: Any) -> None:
    # GIVEN the epoch of a written-through table and a stream value of the prompt
    monkeypatch.setenv("SSL_CERT_FILE", redis_secure.ca)
    item = ddb_local.client().get_item(TableName=shared_table, Key={"prompt_id": {"S": "shared"}, "version": {"S": "CURRENT"}})["Item"]
    writer(redis_secure, [{"op": "writeThrough", "key": l2_item_key(shared_table, "shared", "CURRENT"), "item": to_json_item(item),
                           "inc": INC, "seq": "40"}, {"op": "bumpEpoch", "key": l2_epoch_key(shared_table), "inc": INC}])
    env = {
        "PROMPT_SERVING_TABLE_NAME": shared_table, "PROMPT_SERVING_CACHE_ENDPOINT": redis_secure.endpoint,
        "PROMPT_SERVING_CACHE_USER": "iam-reader", "PROMPT_SERVING_CACHE_NAME": "test-cache", "AWS_REGION": "us-east-1",
    }
    # WHEN a reader is created from the environment (it reads the epoch once at start-up) and reads the prompt
    client = PromptClient(dynamodb_client=ddb_local.client(), environ=env)
    prompt = client.get_prompt("shared")
    # THEN the stream value was served, and the watch did not read the epoch again before the item (one round trip
    # fewer on a cold start): it knows the incarnation from the start-up read
    assert prompt.version == 1 and client.stats()["l2_hits"] >= 1
    assert client._epoch.polled and client._epoch.polls == 0 and client._epoch.incarnation == INC
    client.close()


def test_a_fleet_cold_start_reads_each_key_from_the_table_once_and_a_pushed_change_needs_no_table_read(
        ddb_local: Any, ddb: Any, redis_secure: RedisServer, tmp_path: Any, clock: Any) -> None:
    from services import run_sync

    (tmp_path / "alpha.md").write_text("Alpha {{x}}.", encoding="utf-8")
    table = create_serving_table(ddb, "py-fleet")
    run_sync(ddb_local.endpoint, table, str(tmp_path))
    # GIVEN one process that read the catalog and a prompt from the table (and filled the L2)
    first, c1 = client_for(ddb_local, table, reader_l2(redis_secure), clock=clock)
    first.get_prompt("alpha")
    assert c1.keys == ["#catalog/CURRENT", "alpha/CURRENT"]
    # WHEN the rest of the fleet starts
    fleet = [client_for(ddb_local, table, reader_l2(redis_secure), clock=clock) for _ in range(5)]
    for client, _ in fleet:
        assert client.get_prompt("alpha").render({"x": "1"}) == "Alpha 1."
        with pytest.raises(Exception, match="not in the catalog"):
            client.get_prompt("beta")
    # THEN none of it read a prompt from the table; each read the catalog once, as a catalog from a fill (which may
    # predate the table's) never rules an id out alone
    assert [counter.keys for _, counter in fleet] == [["#catalog/CURRENT"]] * 5
    # WHEN a prompt is created and the invalidation function (played by Node) writes the stream's new images
    # through and bumps the epoch
    watcher, wc = fleet[0]
    watcher._epoch.poll()
    (tmp_path / "beta.md").write_text("Beta.", encoding="utf-8")
    run_sync(ddb_local.endpoint, table, str(tmp_path))
    images = [ddb.get_item(TableName=table, Key={"prompt_id": {"S": pid}, "version": {"S": "CURRENT"}})["Item"]
              for pid in ("#catalog", "beta")]
    ops = [{"op": "writeThrough", "key": l2_item_key(table, img["prompt_id"]["S"], "CURRENT"), "item": to_json_item(img),
            "inc": INC, "seq": str(30 + i)} for i, img in enumerate(images)]
    assert writer(redis_secure, ops) == [1, 1]
    writer(redis_secure, [{"op": "bumpEpoch", "key": l2_epoch_key(table), "inc": INC}])
    # THEN the next epoch poll takes the new catalog, and the new prompt is served from the L2: no table read
    wc.reset()
    assert watcher._epoch.poll() is True
    assert watcher.get_prompt("beta").render() == "Beta."
    assert wc.keys == []


def test_a_tombstone_written_through_to_the_l2_is_not_found_without_a_table_read(ddb_local: Any, shared_table: str,
                                                                                redis_secure: RedisServer) -> None:
    tombstone = to_json_item(dict(POINTER, status={"S": "DELETED"}, revision={"N": "9"}))
    assert writer(redis_secure, [
        {"op": "writeThrough", "key": l2_item_key(shared_table, "shared", "CURRENT"), "item": tombstone, "inc": INC, "seq": "9"},
        {"op": "bumpEpoch", "key": l2_epoch_key(shared_table), "inc": INC},
    ])[0] == 1
    client, counter = client_for(ddb_local, shared_table, reader_l2(redis_secure))
    with pytest.raises(PromptNotFoundError, match="not found: deleted"):
        client.get_prompt("shared")
    for _ in range(2):
        with pytest.raises(PromptNotFoundError):
            client.get_prompt("shared")
    assert "shared/CURRENT" not in counter.keys
    assert client.stats()["negative_hits"] == 2


def test_a_stream_value_of_another_table_incarnation_is_not_used(ddb_local: Any, shared_table: str, redis_secure: RedisServer) -> None:
    # GIVEN a stream value left by a table deleted and re-created under the same name, and the epoch naming the new one
    old = to_json_item(dict(POINTER, version_number={"N": "7"}, text={"S": "from the old table"}))
    writer(redis_secure, [
        {"op": "writeThrough", "key": l2_item_key(shared_table, "shared", "CURRENT"), "item": old, "inc": INC, "seq": "999"},
        {"op": "bumpEpoch", "key": l2_epoch_key(shared_table), "inc": "2026-02-03T04:05:06.789"},
    ])
    # WHEN a reader reads the prompt
    client, counter = client_for(ddb_local, shared_table, reader_l2(redis_secure))
    prompt = client.get_prompt("shared")
    # THEN the old incarnation's value was not trusted: the table's version 1 was read
    assert (prompt.version, prompt.text) == (1, "Hello {{name}} é 漢")
    assert counter.keys[-1] == "shared/CURRENT"


def test_an_epoch_move_never_discards_the_last_good_copy(ddb_local: Any, shared_table: str, redis_secure: RedisServer,
                                                         clock: Any) -> None:
    """Stale if error, as test/runtime/stale-if-error.test.ts: the epoch moves while the L2 no longer holds the value
    and the table throttles: the last good copy is served (stale) instead of a failure, then replaced."""
    from botocore.exceptions import ClientError

    key = l2_item_key(shared_table, "shared", "CURRENT")
    writer(redis_secure, [
        {"op": "writeThrough", "key": key, "item": to_json_item(POINTER), "inc": INC, "seq": "10"},
        {"op": "bumpEpoch", "key": l2_epoch_key(shared_table), "inc": INC},
    ])
    ddb = ddb_local.client()
    counter = CallCounter(ddb)
    client = PromptClient(table_name=shared_table, dynamodb_client=ddb, l2=reader_l2(redis_secure), clock=clock,
                          max_age_seconds=60, stale_if_error_seconds=3600, max_attempts=1)
    assert (client.get_prompt("shared").version, client.get_prompt("shared").stale) == (1, False)
    assert "shared/CURRENT" not in counter.keys
    # WHEN the value leaves the L2 (its 24 h TTL), another batch moves the epoch, and the table throttles
    redis_secure.admin().delete(key)
    redis_secure.admin().delete(l2_fill_key(shared_table, "shared", "CURRENT"))
    writer(redis_secure, [{"op": "bumpEpoch", "key": l2_epoch_key(shared_table), "inc": INC}])
    assert client._epoch.poll() is True
    failing = [3]

    def throttle(**_: Any) -> None:
        if failing[0] > 0:
            failing[0] -= 1
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "injected"},
                               "ResponseMetadata": {"HTTPStatusCode": 400}}, "GetItem")

    ddb.meta.events.register("before-call.dynamodb.GetItem", throttle)
    served = client.get_prompt("shared")
    # THEN the last good copy is served, flagged stale
    assert (served.version, served.stale) == (1, True)
    assert client.stats()["stale_serves"] == 1
    # AND once the table answers again, a fresh copy replaces it
    failing[0] = 0
    wait_for(lambda: not client.get_prompt("shared").stale)


def test_a_copy_the_epoch_marked_is_not_served_as_fresh(ddb_local: Any, ddb: Any, shared_table: str, redis_secure: RedisServer,
                                                        clock: Any) -> None:
    key = l2_item_key(shared_table, "shared", "CURRENT")
    client, _ = client_for(ddb_local, shared_table, reader_l2(redis_secure), clock=clock, max_age_seconds=60)
    assert client.get_prompt("shared").version == 1
    # WHEN the table changes, no stream value holds it, and the epoch moves
    put_items(ddb, shared_table, [dict(POINTER, version_number={"N": "2"}, text={"S": "v2"})])
    redis_secure.admin().delete(key)
    redis_secure.admin().delete(l2_fill_key(shared_table, "shared", "CURRENT"))
    writer(redis_secure, [{"op": "bumpEpoch", "key": l2_epoch_key(shared_table), "inc": INC}])
    client._epoch.poll()
    # THEN the next read re-validates (not stale-while-revalidate) and serves the change
    prompt = client.get_prompt("shared")
    assert (prompt.version, prompt.stale) == (2, False)


def test_an_epoch_deleted_and_re_created_never_repeats_a_value_the_reader_saw(ddb_local: Any, ddb: Any, shared_table: str,
                                                                            redis_secure: RedisServer) -> None:
    # GIVEN an epoch created from nothing by the invalidation function (Node, as deployed), and a reader that read a
    # prompt and the epoch
    key = l2_epoch_key(shared_table)
    redis_secure.admin().delete(key)
    writer(redis_secure, [{"op": "bumpEpoch", "key": key, "inc": INC}])
    client, _ = client_for(ddb_local, shared_table, reader_l2(redis_secure), max_age_seconds=60)
    assert client.get_prompt("shared").version == 1
    client._epoch.poll()
    seen = redis_secure.admin().get(key)
    # WHEN the epoch is lost (eviction, a failover) and the next batch, a change of the prompt, re-creates it
    redis_secure.admin().delete(key)
    put_items(ddb, shared_table, [dict(POINTER, version_number={"N": "2"}, text={"S": "v2"})])
    redis_secure.admin().delete(l2_fill_key(shared_table, "shared", "CURRENT"))
    writer(redis_secure, [{"op": "bumpEpoch", "key": key, "inc": INC}])
    # THEN the re-created epoch is a value the reader never saw, so its next poll re-validates and the change is served
    # within the push bound (one poll), not after max_age_seconds
    assert redis_secure.admin().get(key) != seen
    assert client._epoch.poll() is True
    assert client.get_prompt("shared").version == 2


class _BlackholeProxy:
    """A loopback TCP proxy whose open connections can be black-holed (they stop forwarding, the sockets stay open);
    new connections are forwarded again."""

    def __init__(self, target_port: int) -> None:
        import socket
        import threading

        self._target = target_port
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self.accepted = 0
        self._dead: List[Any] = []
        self._live: List[Any] = []
        self._closed = False
        self.silent = False
        """New connections are accepted and never answered (the cache's host silent)."""
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            upstream = socket.create_connection(("127.0.0.1", self._target))
            pair = {"dead": self.silent, "socks": (client, upstream)}
            self._live.append(pair)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b, pair), daemon=True).start()

    @staticmethod
    def _pump(src: Any, dst: Any, pair: Dict[str, Any]) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                return
            if not pair["dead"]:
                try:
                    dst.sendall(data)
                except OSError:
                    return

    def blackhole(self) -> None:
        for pair in self._live:
            pair["dead"] = True

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for pair in self._live:
            for s in pair["socks"]:
                s.close()


def test_a_black_holed_connection_fails_its_call_in_time_and_is_replaced(redis_secure: RedisServer) -> None:
    """Connections that cannot hang, as test/runtime/connections.test.ts."""
    import redis

    proxy = _BlackholeProxy(redis_secure.port)
    try:
        l2 = reader_l2(redis_secure, timeout_ms=300, cluster=False, connect_timeout_ms=0)  # past its start-up budget
        l2._endpoint = ("127.0.0.1", proxy.port)  # the proxy stands between the reader and the cache
        assert l2.get(l2_item_key("t", "x", "CURRENT")) is None
        proxy.blackhole()
        started = time.monotonic()
        with pytest.raises((redis.exceptions.TimeoutError, redis.exceptions.ConnectionError)):
            l2.get(l2_item_key("t", "x", "CURRENT"))
        assert time.monotonic() - started < 1.0
        # the timed-out connection was closed; after the pause (1 s, jittered) a new one serves calls
        deadline = time.monotonic() + 5
        while True:
            try:
                assert l2.get(l2_item_key("t", "x", "CURRENT")) is None
                break
            except Exception:  # noqa: BLE001 - paused or reconnecting
                assert time.monotonic() < deadline, "not replaced within 5 s"
                time.sleep(0.05)
        assert proxy.accepted == 2
    finally:
        proxy.close()


def _read_for(l2: ValkeyL2, seconds: float) -> List[Tuple[float, bool, bool]]:
    """``get`` every 20 ms for ``seconds``: (when, answered, waited for the socket timeout) of each call."""
    calls: List[Tuple[float, bool, bool]] = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        at = time.monotonic()
        try:
            l2.get(l2_item_key("t", "x", "CURRENT"))
            ok = True
        except Exception:  # noqa: BLE001 - the cache is away
            ok = False
        calls.append((at - start, ok, time.monotonic() - at >= 0.09))
        time.sleep(0.02)
    return calls


def test_the_cache_gone_costs_one_timeout_then_nothing_and_serves_again_within_a_second(redis_secure: RedisServer) -> None:
    proxy = _BlackholeProxy(redis_secure.port)
    try:
        # GIVEN a reader connected through the proxy, its L2 timeout 100 ms
        l2 = reader_l2(redis_secure, timeout_ms=100, cluster=False, connect_timeout_ms=0)  # past its start-up budget
        l2._endpoint = ("127.0.0.1", proxy.port)
        assert l2.get(l2_item_key("t", "x", "CURRENT")) is None
        # WHEN the cache's host goes silent (the open connection and every new one get no answer) for 3 s
        proxy.silent = True
        proxy.blackhole()
        outage = _read_for(l2, 3.0)
        # THEN nothing was answered, one call waited for the timeout, every other failed at once
        assert [c for c in outage if c[1]] == []
        assert len([c for c in outage if c[2]]) == 1
        assert l2.tripped
        # WHEN the cache answers again
        proxy.silent = False
        after = _read_for(l2, 2.0)
        # THEN calls are answered again within about a second (the probe), none waiting meanwhile
        answered = [c for c in after if c[1]]
        assert answered and answered[0][0] < 1.2, answered[:1]
        assert [c for c in after if c[2]] == []
    finally:
        proxy.close()


def test_a_reader_whose_user_was_deleted_reconnects_at_most_once_a_second(redis_secure: RedisServer) -> None:
    admin = redis_secure.admin()
    admin.execute_command("ACL", "SETUSER", "doomed-py", "on", ">pw", "~*", "+@all")
    signed: List[float] = []

    def provider() -> str:
        signed.append(time.monotonic())
        return "pw"

    l2 = reader_l2(redis_secure, user="doomed-py", token_provider=provider, timeout_ms=300)
    assert l2.get(l2_item_key("t", "x", "CURRENT")) is None
    admin.execute_command("ACL", "DELUSER", "doomed-py")
    before = len(signed)
    failures = 0
    until = time.monotonic() + 4
    while time.monotonic() < until:
        try:
            l2.get(l2_item_key("t", "x", "CURRENT"))
        except Exception:  # noqa: BLE001 - every call fails while the user is gone
            failures += 1
        time.sleep(0.01)
    attempts = len(signed) - before
    assert failures > 100
    assert 1 <= attempts <= 4, attempts


def test_close_stops_the_epoch_watch_and_closes_only_the_l2_the_client_opened(ddb_local: Any, shared_table: str,
                                                                           redis_secure: RedisServer, monkeypatch: Any) -> None:
    import math

    monkeypatch.setenv("SSL_CERT_FILE", redis_secure.ca)
    env = {
        "PROMPT_SERVING_TABLE_NAME": shared_table,
        "PROMPT_SERVING_CACHE_ENDPOINT": redis_secure.endpoint,
        "PROMPT_SERVING_CACHE_USER": "iam-reader",
        "PROMPT_SERVING_CACHE_NAME": "test-cache",
        "AWS_REGION": "us-east-1",
    }
    ddb = ddb_local.client()
    counter = CallCounter(ddb)
    # GIVEN a client that built its L2 from the environment and read a prompt through it
    own = PromptClient(dynamodb_client=ddb, environ=env, max_age_seconds=0, stale_while_revalidate_seconds=0)
    assert own.get_prompt("shared").version == 1
    adapter = own._l2
    assert adapter is not None and adapter._clients
    # WHEN it is closed
    own.close()
    # THEN its connections are closed, no epoch poll is due, and reads still work, from the table, without the L2
    assert adapter._clients == {} and own._epoch.due == math.inf
    before = own.stats()
    counter.reset()
    assert own.get_prompt("shared").version == 1
    after = own.stats()
    assert counter.keys == ["shared/CURRENT"]
    assert (after["l2_hits"], after["l2_misses"], after["l2_errors"]) == (before["l2_hits"], before["l2_misses"], before["l2_errors"])
    assert adapter._clients == {}  # not reopened
    # AND an L2 the caller passed stays the caller's: used before and after close, never closed by the client
    passed = reader_l2(redis_secure)
    theirs, _ = client_for(ddb_local, shared_table, passed)
    theirs.get_prompt("shared")
    theirs.close()
    assert passed._clients


def _catalog_item(ids: List[str]) -> Dict[str, Any]:
    bits, hashes = bloom_parameters(len(ids))
    return {"prompt_id": {"S": "#catalog"}, "version": {"S": "CURRENT"}, "bloom": {"B": bloom_build(ids, bits, hashes)},
            "bloom_bits": {"N": str(bits)}, "bloom_hashes": {"N": str(hashes)}, "count": {"N": str(len(ids))},
            "revision": {"N": "1"}}


def test_a_catalog_fill_never_rules_out_a_prompt_the_table_catalog_holds(ddb_local: Any, ddb: Any, shared_table: str,
                                                                        redis_secure: RedisServer) -> None:
    # GIVEN the table's catalog naming "shared", and a fresh fill of an older catalog without it, of no lineage (a
    # reader filled it while the epoch was garbage; the epoch is now absent, as after a write-through that could not land)
    put_items(ddb, shared_table, [_catalog_item(["shared", "other"])])
    fill = encode_fill_value(None, time.time() * 1000 - 1000, to_json_item(_catalog_item(["other"])))
    l2 = reader_l2(redis_secure)
    l2.set(l2_fill_key(shared_table, "#catalog", "CURRENT"), fill, 60)
    # WHEN a fresh reader asks for "shared"
    client, counter = client_for(ddb_local, shared_table, l2)
    prompt = client.get_prompt("shared")
    # THEN the fill's verdict was checked against the table's catalog, and the prompt served
    assert prompt.version == 1
    assert counter.keys.count("#catalog/CURRENT") == 1
    # AND an id neither catalog holds is still ruled out, with no further table read of the catalog
    with pytest.raises(PromptNotFoundError, match="not in the catalog"):
        client.get_prompt("never-synced")
    assert counter.keys.count("#catalog/CURRENT") == 1
