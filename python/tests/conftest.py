"""Session-scoped real services for the Python tests (free loopback ports; stopped at the end)."""
import os
import sys
from typing import Any, Iterator

import pytest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
sys.path.insert(0, os.path.dirname(__file__))

from services import CallCounter, DynamoDBLocal, RedisServer, create_serving_table, set_local_aws_environment  # noqa: E402

set_local_aws_environment()


@pytest.fixture(scope="session")
def ddb_local() -> Iterator[DynamoDBLocal]:
    local = DynamoDBLocal()
    yield local
    local.stop()


@pytest.fixture(scope="session")
def redis_secure() -> Iterator[RedisServer]:
    """TLS + ACL users + cluster mode, one node owning all slots: a stand-in of a serverless cache."""
    server = RedisServer(secure=True)
    yield server
    server.stop()


@pytest.fixture
def ddb(ddb_local: DynamoDBLocal) -> Any:
    return ddb_local.client()


@pytest.fixture
def counter(ddb: Any) -> CallCounter:
    return CallCounter(ddb)


@pytest.fixture
def table(ddb: Any) -> Iterator[str]:
    name = create_serving_table(ddb)
    yield name
    try:
        ddb.delete_table(TableName=name)
    except Exception:  # noqa: BLE001
        pass


class FakeClock:
    """Wall clock in epoch seconds that moves only when told to (fake timers, not sleeps)."""

    def __init__(self, start: float = 1_767_323_045.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
