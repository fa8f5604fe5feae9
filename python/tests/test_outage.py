"""Fault tests as for the Node client: DynamoDB Local stopped under load, and a table that never answers."""
import socket
import threading
import time
from typing import Any, List

import pytest

from cdk_prompt_serving_runtime import PromptClient, PromptStoreError
from services import DynamoDBLocal, create_serving_table, run_sync


def test_dynamodb_local_stopped_under_load_cached_prompts_never_fail(tmp_path: Any, clock: Any) -> None:
    # GIVEN a table of its own (this DynamoDB Local is stopped), synced by the real engine, and a client that read it
    local = DynamoDBLocal()
    try:
        for i in range(5):
            (tmp_path / f"p{i}.md").write_text(f"Prompt {i} for {{{{name}}}}.", encoding="utf-8")
        (tmp_path / "never-read.md").write_text("Nobody asked.", encoding="utf-8")
        table = create_serving_table(local.client(), "py-outage")
        run_sync(local.endpoint, table, str(tmp_path))
        client = PromptClient(table_name=table, dynamodb_client=local.client(timeout=0.5), clock=clock,
                              max_age_seconds=60, stale_while_revalidate_seconds=0, stale_if_error_seconds=3600,
                              request_timeout_ms=500)
        ids = [f"p{i}" for i in range(5)]
        client.preload(ids)

        failures: List[BaseException] = []
        reads = [0]
        stop = threading.Event()

        def reader() -> None:
            while not stop.is_set():
                for prompt_id in ids:
                    try:
                        assert client.get_prompt(prompt_id).render({"name": "n"}).startswith("Prompt")
                        reads[0] += 1
                    except BaseException as err:  # noqa: BLE001 - every failure is counted
                        failures.append(err)

        threads = [threading.Thread(target=reader) for _ in range(8)]
        for t in threads:
            t.start()
        # WHEN the table goes away mid-load, and the copies expire while it is away
        time.sleep(0.2)
        local.stop()
        clock.advance(120)
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join()
        # THEN no read of a cached prompt failed; they were served stale; a never-read prompt fails in time
        assert failures == []
        assert reads[0] > 1000
        stats = client.stats()
        assert stats["stale_serves"] > 0 and stats["store_errors"] >= 1
        assert client.get_prompt("p0").stale is True
        started = time.monotonic()
        with pytest.raises(PromptStoreError):
            client.get_prompt("never-read")
        assert time.monotonic() - started < 1.5
    finally:
        local.stop()


def test_a_table_that_accepts_connections_but_never_answers_costs_at_most_the_request_timeout() -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        import boto3
        from botocore.config import Config

        ddb = boto3.session.Session().client(
            "dynamodb", endpoint_url=f"http://127.0.0.1:{silent.getsockname()[1]}", region_name="us-east-1",
            aws_access_key_id="local", aws_secret_access_key="local",
            config=Config(retries={"total_max_attempts": 1}, connect_timeout=0.3, read_timeout=0.3))
        client = PromptClient(table_name="silent-table", dynamodb_client=ddb, request_timeout_ms=300, max_attempts=3)
        started = time.monotonic()
        with pytest.raises(PromptStoreError, match="timed out|ReadTimeout"):
            client.get_prompt("anything")
        assert time.monotonic() - started < 1.2
    finally:
        silent.close()
