"""Labels with the cache tier in the Python client: a label move and a rollout step written through by the Node side
(playing the invalidation function, with the contract's scripts) reach a Python reader at its next epoch poll, with no
table read, and a key's arm follows the step (never back from B to A)."""
from typing import Any, Dict, Iterator, Tuple

import pytest

from cdk_prompt_serving_runtime import PromptClient
from cdk_prompt_serving_runtime.ddb_codec import to_json_item
from cdk_prompt_serving_runtime.schema import checksum
from cdk_prompt_serving_runtime.schema.l2 import l2_epoch_key, l2_item_key
from cdk_prompt_serving_runtime.schema.labels import rollout_bucket
from services import ADMIN_PASSWORD, CallCounter, RedisServer, create_serving_table, put_items, run_node_l2
from test_l2 import reader_l2

INC = "2026-01-02T03:04:05.678"


def content(n: int) -> Dict[str, Any]:
    return {"template_type": "TEXT", "text": f"Hello v{n} {{{{name}}}}", "input_variables": ["name"]}


def item(version: str, n: int, **extra: Dict[str, Any]) -> Dict[str, Any]:
    c = content(n)
    out = {"prompt_id": {"S": "labeled"}, "version": {"S": version}, "version_number": {"N": str(n)},
           "checksum": {"S": checksum(c)}, "status": {"S": "ACTIVE"}, "template_type": {"S": "TEXT"},
           "text": {"S": c["text"]}, "input_variables": {"L": [{"S": "name"}]}}
    out.update(extra)
    return out


def label_item(n: int, rollout: Any = None) -> Dict[str, Any]:
    extra: Dict[str, Any] = {"label": {"S": "production"}}
    if rollout is not None:
        extra["rollout"] = {"M": {"rollout_id": {"S": "r-py"}, "candidate_version": {"N": str(rollout[0])},
                                  "candidate_checksum": {"S": checksum(content(rollout[0]))},
                                  "percent_bp": {"N": str(rollout[1])}}}
    return item("LABEL#production", n, **extra)


@pytest.fixture
def label_table(ddb: Any) -> Iterator[str]:
    table = create_serving_table(ddb, "py-labels-l2")
    put_items(ddb, table, [item("v000001", 1), item("v000002", 2), item("v000003", 3), label_item(1)])
    yield table
    ddb.delete_table(TableName=table)


def write_through(redis: RedisServer, table: str, value: Dict[str, Any], seq: int) -> None:
    assert run_node_l2({"port": redis.port, "ca": redis.ca, "username": "admin", "password": ADMIN_PASSWORD, "ops": [
        {"op": "writeThrough", "key": l2_item_key(table, "labeled", "LABEL#production"), "item": to_json_item(value),
         "inc": INC, "seq": str(seq)},
        {"op": "bumpEpoch", "key": l2_epoch_key(table), "inc": INC},
    ]})[0] == 1


def client_for(ddb_local: Any, table: str, redis: RedisServer, clock: Any) -> Tuple[PromptClient, CallCounter]:
    ddb = ddb_local.client()
    counter = CallCounter(ddb)
    return PromptClient(table_name=table, dynamodb_client=ddb, l2=reader_l2(redis), clock=clock,
                        epoch_poll_interval_ms=1000), counter


def test_a_label_move_and_rollout_steps_reach_a_python_reader_by_the_epoch_without_a_table_read(
        ddb_local: Any, label_table: str, redis_secure: RedisServer, clock: Any) -> None:
    # GIVEN a reader holding production (v1) and knowing the epoch
    write_through(redis_secure, label_table, label_item(1), 10)
    client, counter = client_for(ddb_local, label_table, redis_secure, clock)
    assert client.get_prompt("labeled", label="production").version == 1
    client._epoch.poll()
    keys = [f"user-{i}" for i in range(200)]
    # WHEN the label moves to v2 (written through, epoch moved)
    write_through(redis_secure, label_table, label_item(2), 11)
    counter.reset()
    assert client._epoch.poll() is True
    # THEN the reader serves v2 without reading the label item from the table
    assert client.get_prompt("labeled", label="production").version == 2
    assert "labeled/LABEL#production" not in counter.keys
    # WHEN a rollout of v3 starts at 10 % and steps to 50 %
    previous = None
    for seq, percent_bp in [(12, 1000), (13, 5000)]:
        write_through(redis_secure, label_table, label_item(2, (3, percent_bp)), seq)
        assert client._epoch.poll() is True
        arms = [client.get_prompt("labeled", label="production", stickiness_key=k).rollout.arm for k in keys]  # type: ignore[union-attr]
        # THEN each key gets the hash's arm, and no key goes back from B to A
        assert arms == ["B" if rollout_bucket("labeled", "production", k) < percent_bp else "A" for k in keys]
        if previous is not None:
            assert not any(a == "A" and b == "B" for a, b in zip(arms, previous))
        previous = arms
    assert "labeled/LABEL#production" not in counter.keys  # the candidate (v000003) only, once
    assert counter.keys.count("labeled/v000003") == 1
    # WHEN the rollout is removed (abort): every key is back on A (v2), at the next poll
    write_through(redis_secure, label_table, label_item(2), 14)
    assert client._epoch.poll() is True
    assert all(client.get_prompt("labeled", label="production", stickiness_key=k).version == 2 for k in keys)
    assert client.stats()["rollout_faults"] == 0
