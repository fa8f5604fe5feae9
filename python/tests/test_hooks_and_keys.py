"""What a caller hands the client cannot hurt the process: an ``on_read`` hook that raises anything (an exception whose
``str()`` raises, one with no usable text) or returns anything (a coroutine object from an ``async def`` hook) leaves
every read served and is reported once; a stickiness key of any size is remembered as a fixed-size digest, and its
arm stays the conformance bucket's. Against DynamoDB Local."""
import gc
import logging
import tracemalloc
import warnings
from typing import Any, List

import pytest

from cdk_prompt_serving_runtime import PromptClient, ReadInfo
from cdk_prompt_serving_runtime.schema.labels import rollout_bucket
from test_labels import V1, V3, publish, rollout_map, write_label
from services import create_serving_table


@pytest.fixture(scope="module")
def hooked(ddb_local: Any) -> Any:
    ddb = ddb_local.client()
    table = create_serving_table(ddb, "py-hooks")
    publish(ddb, table, "greeting", 1, V1)
    publish(ddb, table, "greeting", 3, V3)
    write_label(ddb, table, "greeting", "canary", 1, V1, rollout=rollout_map("r-keys", 3, V3, 5000))
    yield table
    ddb.delete_table(TableName=table)


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("no text for you")

    def __repr__(self) -> str:
        raise ValueError("no repr either")


def _raise_unprintable(info: ReadInfo, client: PromptClient) -> None:
    raise UnprintableError()


def _raise_plain(info: ReadInfo, client: PromptClient) -> None:
    raise RuntimeError("hook bug")


async def _async_hook(info: ReadInfo, client: PromptClient) -> None:
    raise RuntimeError("an async hook that would reject")


def _returns_junk(info: ReadInfo, client: PromptClient) -> Any:
    return object()


@pytest.mark.parametrize("hook", [_raise_unprintable, _raise_plain, _async_hook],
                         ids=["str-raises", "plain", "coroutine-returned"])
def test_a_hook_that_fails_in_any_way_leaves_every_read_served_and_is_reported_once(
        ddb_local: Any, hooked: str, caplog: Any, hook: Any) -> None:
    # GIVEN a client whose on_read hook fails on every read
    client = PromptClient(table_name=hooked, dynamodb_client=ddb_local.client(), l2=False, on_read=hook)
    # WHEN it serves reads of CURRENT, a version and a label (nothing may leak as an unraisable or a warning)
    with warnings.catch_warnings(record=True) as leaked:
        warnings.simplefilter("always")
        with caplog.at_level(logging.WARNING):
            served = [client.get_prompt("greeting").version for _ in range(3)]
            served += [client.get_prompt("greeting", 1).version for _ in range(2)]
            served += [client.get_prompt("greeting", label="canary", stickiness_key="u").label is not None for _ in range(2)]
    # THEN every read is served, and the failure is reported once, as a readable warning naming the hook's failure
    assert served == [3, 3, 3, 1, 1, True, True]
    assert not [w for w in leaked if "never awaited" in str(w.message)]
    reported = [r for r in caplog.records if "on_read" in r.getMessage()]
    assert len(reported) == 1
    assert reported[0].levelno == logging.WARNING
    assert any(word in reported[0].getMessage() for word in ("UnprintableError", "RuntimeError", "coroutine"))


def test_a_hook_returning_a_value_is_ignored_silently(ddb_local: Any, hooked: str, caplog: Any) -> None:
    client = PromptClient(table_name=hooked, dynamodb_client=ddb_local.client(), l2=False, on_read=_returns_junk)
    with caplog.at_level(logging.WARNING):
        assert [client.get_prompt("greeting").version for _ in range(2)] == [3, 3]
    assert not [r for r in caplog.records if "on_read" in r.getMessage()]


def test_huge_stickiness_keys_are_remembered_as_fixed_size_digests_with_the_conformance_bucket(
        ddb_local: Any, hooked: str) -> None:
    # GIVEN a label with a 50 % rollout, both arms in memory
    client = PromptClient(table_name=hooked, dynamodb_client=ddb_local.client(), l2=False)
    client.get_prompt("greeting", label="canary", stickiness_key="warm")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        arms: List[str] = []
        expected: List[str] = []
        # WHEN 200 distinct 1 MB keys are read (each dropped by the caller after its read)
        for i in range(200):
            key = f"{i}:" + "k" * (1 << 20)
            prompt = client.get_prompt("greeting", label="canary", stickiness_key=key)
            assert prompt.rollout is not None
            arms.append(prompt.rollout.arm)
            expected.append("B" if rollout_bucket("greeting", "canary", key) < 5000 else "A")
            del key
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # THEN the arms are the conformance bucket's, and what the client kept is far below one key's size
    assert arms == expected
    assert retained < 1 << 20, f"{retained} bytes retained after 200 keys of 1 MB"
