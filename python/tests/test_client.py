"""PromptClient against DynamoDB Local with prompts written by the REAL sync engine (examples/prompts/ plus a few
of our own), counting GetItem calls with a botocore event hook. Expiry is driven by a fake clock, not sleeps."""
import json
import os
import shutil
import threading
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from cdk_prompt_serving_runtime import PromptClient, PromptNotFoundError, PromptRenderError, PromptServingError, PromptStoreError
from services import REPO, CallCounter, create_serving_table, run_sync, wait_for

EXAMPLES = os.path.join(REPO, "examples", "prompts")


def write_prompt(directory: str, name: str, text: str) -> None:
    with open(os.path.join(directory, name + ".md"), "w", encoding="utf-8") as f:
        f.write(text)


@pytest.fixture(scope="module")
def synced(ddb_local: Any, tmp_path_factory: Any) -> Iterator[Tuple[str, str, Dict[str, Any]]]:
    """A table synced once from examples/prompts/ plus greeting.md and faq.md, by the real sync engine."""
    directory = str(tmp_path_factory.mktemp("prompts") / "prompts")
    shutil.copytree(EXAMPLES, directory)
    write_prompt(directory, "greeting", "Hello {{name}}, welcome to {{ product }}.")
    admin = ddb_local.client()
    table = create_serving_table(admin, "py-client")
    report = run_sync(ddb_local.endpoint, table, directory)
    yield table, directory, report
    admin.delete_table(TableName=table)


def new_client(ddb_local: Any, table: str, **options: Any) -> Tuple[PromptClient, CallCounter]:
    ddb = ddb_local.client()
    counter = CallCounter(ddb)
    return PromptClient(table_name=table, dynamodb_client=ddb, **options), counter


def test_the_real_sync_wrote_what_the_client_serves(ddb_local: Any, synced: Any) -> None:
    table, _, report = synced
    assert report["failed"] == 0 and report["written"] >= 4
    client, _ = new_client(ddb_local, table)
    greeting = client.get_prompt("greeting")
    assert (greeting.template_type, greeting.version, greeting.stale) == ("TEXT", 1, False)
    assert greeting.checksum.startswith("sha256:") and len(greeting.checksum) == 71
    assert greeting.render({"name": "Ana", "product": "Acme"}) == "Hello Ana, welcome to Acme."
    summarize = client.get_prompt("summarize")
    assert summarize.model_id == "anthropic.claude-3-5-haiku-20241022-v1:0"
    assert dict(summarize.inference_config) == {"temperature": 0.2, "maxTokens": 512}
    assert set(summarize.input_variables) == {"audience", "sentences", "document"}
    triage = client.get_prompt("support-triage")
    assert triage.template_type == "CHAT" and triage.messages
    rendered = triage.render({v: "x" for v in triage.input_variables})
    assert set(rendered) == {"messages", "system"} and isinstance(rendered["messages"], list)
    assert rendered["system"][0]["text"] == "You triage customer support tickets for x. Answer with one label."
    with pytest.raises(PromptRenderError) as caught:
        summarize.render({"audience": "execs"})
    assert caught.value.missing_variables == ("sentences", "document")


def test_served_prompts_are_immutable(ddb_local: Any, synced: Any) -> None:
    client, _ = new_client(ddb_local, synced[0])
    prompt = client.get_prompt("summarize")
    with pytest.raises(TypeError):
        prompt.inference_config["temperature"] = 1.0  # type: ignore[index]
    with pytest.raises(AttributeError):  # a frozen dataclass's FrozenInstanceError is an AttributeError
        prompt.text = "changed"  # type: ignore[misc]
    assert client.get_prompt("summarize").inference_config["temperature"] == 0.2


def test_100_threads_cold_reading_one_id_send_one_getitem_for_it(ddb_local: Any, synced: Any) -> None:
    client, counter = new_client(ddb_local, synced[0])
    barrier = threading.Barrier(100)
    results: List[Any] = []

    def read() -> None:
        barrier.wait()
        results.append(client.get_prompt("greeting").id)

    threads = [threading.Thread(target=read) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["greeting"] * 100
    assert counter["GetItem"] == 2  # the catalog once, the prompt once
    assert client.stats()["catalog_loads"] == 1


def test_1000_unknown_id_reads_send_at_most_one_getitem_and_none_with_the_catalog_preloaded(ddb_local: Any, synced: Any) -> None:
    client, counter = new_client(ddb_local, synced[0])
    for _ in range(1000):
        with pytest.raises(PromptNotFoundError, match="not in the catalog"):
            client.get_prompt("no-such-prompt")
    assert counter["GetItem"] == 1  # the catalog
    preloaded, counter2 = new_client(ddb_local, synced[0])
    preloaded.preload()
    counter2.reset()
    for _ in range(1000):
        with pytest.raises(PromptNotFoundError):
            preloaded.get_prompt("no-such-prompt")
    assert counter2["GetItem"] == 0
    assert preloaded.stats()["catalog_rejections"] == 1000


def test_cached_reads_send_nothing(ddb_local: Any, synced: Any) -> None:
    client, counter = new_client(ddb_local, synced[0])
    client.preload(["greeting", "summarize"])
    counter.reset()
    for _ in range(500):
        client.get_prompt("greeting")
        client.get_prompt("summarize")
    assert counter["GetItem"] == 0
    assert client.stats()["hits"] == 1000


def test_exact_versions_never_expire(ddb_local: Any, synced: Any, clock: Any) -> None:
    client, counter = new_client(ddb_local, synced[0], clock=clock, max_age_seconds=1)
    assert client.get_prompt("greeting", 1).version == 1
    with pytest.raises(PromptNotFoundError):
        client.get_prompt("greeting", 2)
    for bad in (0, -1, 1_000_000, True, 1.5, "1"):
        with pytest.raises(PromptNotFoundError):
            client.get_prompt("greeting", bad)  # type: ignore[arg-type]
    counter.reset()
    clock.advance(10 * 24 * 3600)
    assert client.get_prompt("greeting", 1).stale is False
    assert counter["GetItem"] == 0


def test_without_a_catalog_an_unknown_id_is_read_once_then_remembered(ddb_local: Any, ddb: Any, clock: Any) -> None:
    table = create_serving_table(ddb, "py-nocatalog")
    client, counter = new_client(ddb_local, table, clock=clock, not_found_max_age_seconds=10)
    for _ in range(1000):
        with pytest.raises(PromptNotFoundError):
            client.get_prompt("ghost")
    assert counter["GetItem"] == 2  # the (absent) catalog, then the id
    assert client.stats()["negative_hits"] == 999
    clock.advance(11)
    with pytest.raises(PromptNotFoundError):
        client.get_prompt("ghost")
    assert counter["GetItem"] == 3


def test_size_bound_evicts_the_least_recently_used(ddb_local: Any, synced: Any) -> None:
    client, counter = new_client(ddb_local, synced[0], max_entries=2)
    client.get_prompt("greeting")
    client.get_prompt("summarize")
    client.get_prompt("translate")
    assert client.stats()["entries"] == 2 and client.stats()["evictions"] == 1
    counter.reset()
    client.get_prompt("translate")
    client.get_prompt("summarize")
    assert counter["GetItem"] == 0
    client.get_prompt("greeting")
    assert counter["GetItem"] == 1


def test_a_change_synced_to_the_table_is_served_within_the_bounds(ddb_local: Any, ddb: Any, tmp_path: Any, clock: Any) -> None:
    directory = str(tmp_path)
    write_prompt(directory, "faq", "Answer {{question}}.")
    write_prompt(directory, "doomed", "Soon gone.")
    table = create_serving_table(ddb, "py-fresh")
    run_sync(ddb_local.endpoint, table, directory)
    client, counter = new_client(ddb_local, table, clock=clock, max_age_seconds=60, stale_while_revalidate_seconds=30)
    assert client.get_prompt("faq").version == 1
    assert client.get_prompt("doomed").version == 1
    write_prompt(directory, "faq", "Answer {{question}} briefly.")
    os.remove(os.path.join(directory, "doomed.md"))
    run_sync(ddb_local.endpoint, table, directory)

    clock.advance(59)
    assert client.get_prompt("faq").version == 1  # within max_age: the cached copy, no read
    counter.reset()
    clock.advance(2)
    stale = client.get_prompt("faq")  # past max_age, within stale-while-revalidate: old copy at once
    assert (stale.version, stale.stale) == (1, True)
    wait_for(lambda: client.get_prompt("faq").version == 2)
    fresh = client.get_prompt("faq")
    assert (fresh.version, fresh.stale, fresh.render({"question": "q"})) == (2, False, "Answer q briefly.")

    clock.advance(61 + 31)  # past max_age + stale-while-revalidate: the deletion is seen
    with pytest.raises(PromptNotFoundError):
        client.get_prompt("doomed")




def throttle_next_get_items(ddb: Any, count: int, code: str) -> None:
    """Answers the next ``count`` GetItem calls with DynamoDB's throttling error (DynamoDB Local never throttles)."""
    from botocore.awsrequest import AWSResponse

    remaining = [count]

    class _Raw:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b""

    def before_send(request: Any, **_: Any) -> Any:
        if remaining[0] <= 0 or b"GetItem" not in request.headers.get("X-Amz-Target", b""):
            return None
        remaining[0] -= 1
        response = AWSResponse(request.url, 400, {"Content-Type": "application/x-amz-json-1.0"}, _Raw())
        body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "Rate of requests exceeds"}).encode()
        response._content = body  # type: ignore[attr-defined]
        return response

    ddb.meta.events.register("before-send.dynamodb.GetItem", before_send)


def test_throttling_is_retried_with_backoff_and_succeeds(ddb_local: Any, synced: Any) -> None:
    ddb = ddb_local.client()
    client = PromptClient(table_name=synced[0], dynamodb_client=ddb, max_attempts=3)
    client.preload()
    throttle_next_get_items(ddb, 2, "ProvisionedThroughputExceededException")
    assert client.get_prompt("greeting").id == "greeting"
    assert client.stats()["retries"] == 2


def test_throttling_past_max_attempts_fails_with_store_error_keeping_the_cause(ddb_local: Any, synced: Any) -> None:
    from botocore.exceptions import ClientError

    ddb = ddb_local.client()
    client = PromptClient(table_name=synced[0], dynamodb_client=ddb, max_attempts=2)
    client.preload()
    throttle_next_get_items(ddb, 5, "ThrottlingException")
    with pytest.raises(PromptStoreError, match="ThrottlingException") as caught:
        client.get_prompt("greeting")
    assert isinstance(caught.value.__cause__, ClientError)
    assert client.stats()["retries"] == 1


def test_options_come_from_the_environment_with_the_node_names(ddb_local: Any, synced: Any) -> None:
    env = {"PROMPT_SERVING_TABLE_NAME": synced[0], "PROMPT_SERVING_MAX_AGE_SECONDS": "7", "PROMPT_SERVING_MAX_ENTRIES": "3"}
    client = PromptClient(dynamodb_client=ddb_local.client(), environ=env)
    assert client.get_prompt("greeting").id == "greeting"
    assert (client._options.max_age, client._options.max_entries) == (7.0, 3)
    with pytest.raises(PromptServingError, match="PROMPT_SERVING_TABLE_NAME"):
        PromptClient(dynamodb_client=ddb_local.client(), environ={})
    with pytest.raises(PromptServingError, match="`max_age_seconds` must be a number of at least 0, got -1"):
        PromptClient(table_name="t", dynamodb_client=ddb_local.client(), max_age_seconds=-1)


def test_hostile_ids_fail_alone_without_a_remote_call(ddb_local: Any, synced: Any) -> None:
    client, counter = new_client(ddb_local, synced[0])
    client.preload()
    counter.reset()
    for bad in ["", "#catalog", "#epoch", "x" * 1025, "€" * 683, "a\ud800", None, 42, ["greeting"], {"id": 1}]:
        with pytest.raises(PromptNotFoundError):
            client.get_prompt(bad)  # type: ignore[arg-type]
    assert counter["GetItem"] == 0
    assert client.get_prompt("greeting").id == "greeting"  # nothing lost


def test_exact_versions_share_the_size_bound_and_leave_memory_with_it(ddb_local: Any, synced: Any) -> None:
    client, counter = new_client(ddb_local, synced[0], max_entries=2)
    client.get_prompt("greeting", 1)
    client.get_prompt("summarize")
    client.get_prompt("translate")  # evicts the unused pinned copy
    assert client.stats()["evictions"] == 1 and ("greeting", 1) not in client._path.prompts.map
    counter.reset()
    assert client.get_prompt("greeting", 1).version == 1
    assert counter.keys == ["greeting/v000001"]
    assert client.get_prompt("greeting", 1) is client.get_prompt("greeting", 1)  # a hit serves the same object
    assert counter.keys == ["greeting/v000001"]


def test_invalidate_one_prompt_sends_the_next_read_to_the_table_and_invalidate_all_drops_everything(ddb_local: Any, synced: Any) -> None:
    """As test/runtime/client-extras.test.ts."""
    table, _, _ = synced
    client, counter = new_client(ddb_local, table)
    client.get_prompt("greeting")
    client.get_prompt("greeting", version=1)
    counter.reset()
    client.get_prompt("greeting")
    assert counter["GetItem"] == 0
    client.invalidate("greeting")
    client.get_prompt("greeting")
    client.get_prompt("greeting", version=1)
    assert counter.keys == ["greeting/CURRENT", "greeting/v000001"]  # the pinned copy went too
    client.invalidate()
    wait_for(lambda: counter.keys[-1:] == ["#catalog/CURRENT"])  # the catalog is re-read in the background
    client.get_prompt("greeting")
    assert counter.keys[2:] == ["#catalog/CURRENT", "greeting/CURRENT"]
    client.invalidate(["not", "hashable"])  # type: ignore[arg-type]  # names nothing held: no error


def test_fallback_is_served_only_when_nothing_can_be_read_and_never_for_a_prompt_that_does_not_exist(ddb_local: Any, synced: Any) -> None:
    """As test/runtime/client-extras.test.ts."""
    import boto3
    from botocore.config import Config

    from cdk_prompt_serving_runtime import PromptFallback

    table, _, _ = synced
    # GIVEN a client whose table endpoint refuses connections
    down = boto3.session.Session().client("dynamodb", endpoint_url="http://127.0.0.1:9", region_name="us-east-1",
                                          config=Config(retries={"total_max_attempts": 1}, connect_timeout=0.5))
    client = PromptClient(table_name=table, dynamodb_client=down, request_timeout_ms=500)
    # WHEN a read with a fallback fails
    served = client.get_prompt("greeting", fallback=PromptFallback(text="Hi {{name}}"))
    # THEN the fallback is returned, flagged stale, version 0, and renders
    assert (served.id, served.version, served.stale, served.template_type, served.input_variables) == (
        "greeting", 0, True, "TEXT", ("name",))
    assert served.render({"name": "Ana"}) == "Hi Ana"
    assert client.stats()["fallback_serves"] == 1
    # AND without one the read fails
    with pytest.raises(PromptStoreError):
        client.get_prompt("greeting")
    # AND an unknown id stays not found with a working table
    up, _ = new_client(ddb_local, table)
    with pytest.raises(PromptNotFoundError):
        up.get_prompt("nope", fallback=PromptFallback(text="x"))
    assert up.stats()["fallback_serves"] == 0


def test_a_prompt_read_only_by_cached_hits_stays_in_memory_over_one_never_read_again(ddb_local: Any, synced: Any) -> None:
    # GIVEN two entries: greeting read over and over (its hits no longer touch the entry), summarize loaded once
    client, counter = new_client(ddb_local, synced[0], max_entries=2)
    client.preload(["greeting", "summarize"])
    for _ in range(1000):
        client.get_prompt("greeting")
    # WHEN a third prompt needs the room
    client.get_prompt("translate")
    counter.reset()
    # THEN the unused one left, the hot one is still served from memory, and every hit was counted
    assert client.get_prompt("greeting").id == "greeting"
    assert counter.keys == []
    assert client.stats()["evictions"] == 1 and client.stats()["hits"] == 1001
    client.get_prompt("summarize")
    assert counter.keys == ["summarize/CURRENT"]


def test_a_cached_read_rejects_what_the_slow_read_rejects(ddb_local: Any, synced: Any) -> None:
    # GIVEN version 1 fresh in memory
    client, _ = new_client(ddb_local, synced[0])
    client.get_prompt("greeting", 1)
    client.get_prompt("greeting", 1)
    # WHEN versions equal to 1 but not an int ask for it, THEN they are not found, as before it was cached
    for bad in (True, 1.0):
        with pytest.raises(PromptNotFoundError, match="a version is an integer"):
            client.get_prompt("greeting", bad)  # type: ignore[arg-type]
    with pytest.raises(PromptServingError, match="give `version` or `label`"):
        client.get_prompt("greeting", 1, label="production")
