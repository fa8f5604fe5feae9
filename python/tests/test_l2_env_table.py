"""The cache the environment names serves the environment's table only: a client given another table explicitly
does not take it (the construct's cache user may read that table's keys only, and its epoch is moved by that table's
stream)."""
from typing import Any, Dict, Iterator

import pytest

from cdk_prompt_serving_runtime import PromptClient
from cdk_prompt_serving_runtime.schema.l2 import l2_fill_key
from services import RedisServer, create_serving_table, put_items

POINTER = {
    "prompt_id": {"S": "mine"}, "version": {"S": "CURRENT"}, "version_number": {"N": "1"}, "revision": {"N": "1"},
    "checksum": {"S": "sha256:" + "1" * 64}, "status": {"S": "ACTIVE"}, "template_type": {"S": "TEXT"},
    "text": {"S": "Hello {{name}}"}, "input_variables": {"L": [{"S": "name"}]},
}


@pytest.fixture
def table(ddb: Any) -> Iterator[str]:
    name = create_serving_table(ddb, "py-l2-env-table")
    put_items(ddb, name, [POINTER])
    yield name
    ddb.delete_table(TableName=name)


def cache_env(redis_secure: RedisServer, env_table: str) -> Dict[str, str]:
    return {
        "PROMPT_SERVING_TABLE_NAME": env_table, "PROMPT_SERVING_CACHE_ENDPOINT": redis_secure.endpoint,
        "PROMPT_SERVING_CACHE_USER": "iam-reader", "PROMPT_SERVING_CACHE_NAME": "test-cache", "AWS_REGION": "us-east-1",
    }


def test_a_client_given_another_table_than_the_environment_s_does_not_take_the_environment_s_cache(
        ddb_local: Any, table: str, redis_secure: RedisServer, monkeypatch: Any) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", redis_secure.ca)
    # GIVEN a function whose environment names a table and its cache (what addReader sets)
    env = cache_env(redis_secure, "the-function-s-table")
    # WHEN the code builds a client for another table, explicitly
    client = PromptClient(table_name=table, dynamodb_client=ddb_local.client(), environ=env)
    prompt = client.get_prompt("mine")
    # THEN it reads its table without an L2: no cache call, no fill of its keys in the other table's cache
    assert prompt.version == 1
    assert client._l2 is None
    stats = client.stats()
    assert (stats["l2_hits"], stats["l2_misses"], stats["l2_errors"]) == (0, 0, 0)
    assert redis_secure.admin().exists(l2_fill_key(table, "mine", "CURRENT")) == 0
    client.close()


def test_a_client_given_the_environment_s_own_table_explicitly_uses_its_cache(
        ddb_local: Any, table: str, redis_secure: RedisServer, monkeypatch: Any) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", redis_secure.ca)
    # GIVEN an environment naming the table and its cache, and a client given the same table explicitly
    env = cache_env(redis_secure, table)
    client = PromptClient(table_name=table, dynamodb_client=ddb_local.client(), environ=env)
    # WHEN it reads
    assert client.get_prompt("mine").version == 1
    # THEN it used the cache: its table read was filled into it
    assert client._l2 is not None and client.stats()["l2_misses"] >= 1
    assert redis_secure.admin().exists(l2_fill_key(table, "mine", "CURRENT")) == 1
    client.close()
