"""The read-provenance vectors (test/conformance/fixtures/provenance.json) against the Python client, DynamoDB Local
behind it (the Node side: test/runtime/provenance-conformance.test.ts); then the hook's own behaviour and the helpers.
``opentelemetry-api`` is not installed on the machines this suite was written on: the helper's absent path is tested
for real, its present path with a stand-in ``trace`` module handed to the loader."""
import json
import os
import re
import threading
from typing import Any, Dict, Iterator, List

import pytest

from cdk_prompt_serving_runtime import (
    PromptClient, PromptFallback, ReadInfo, combine_read_hooks, emf_read_metrics, log_reads, otel_read_attributes,
)
from cdk_prompt_serving_runtime.read_metrics import EmfReadMetrics
from services import REPO, put_items

with open(os.path.join(REPO, "test", "conformance", "fixtures", "provenance.json"), encoding="utf-8") as f:
    FIXTURE = json.load(f)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def fail_get_items(ddb: Any) -> None:
    """Every later GetItem fails with a 500 before reaching DynamoDB Local."""
    from botocore.awsrequest import AWSResponse

    class _Raw:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b""

    def before_send(request: Any, **_: Any) -> Any:
        response = AWSResponse(request.url, 500, {"Content-Type": "application/x-amz-json-1.0"}, _Raw())
        response._content = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "injected"}).encode()  # type: ignore[attr-defined]
        return response

    ddb.meta.events.register("before-send.dynamodb.GetItem", before_send)


@pytest.fixture
def items_table(ddb: Any, table: str) -> str:
    put_items(ddb, table, FIXTURE["items"])
    return table


@pytest.mark.parametrize("scenario", FIXTURE["scenarios"], ids=[s["name"] for s in FIXTURE["scenarios"]])
def test_vector(scenario: Dict[str, Any], ddb_local: Any, items_table: str, clock: Any) -> None:
    ddb = ddb_local.client()
    reads: List[ReadInfo] = []
    options = {snake(k): v for k, v in scenario["options"].items()}
    client = PromptClient(table_name=items_table, dynamodb_client=ddb, clock=clock,
                          on_read=lambda info, _client: reads.append(info), **options)
    for step in scenario["steps"]:
        if "advance" in step:
            clock.advance(step["advance"])
        if step.get("failTable"):
            fail_get_items(ddb)
        if "read" not in step:
            continue
        fallback = PromptFallback(**step["fallback"]) if "fallback" in step else None
        prompt = client.get_prompt(step["read"], step.get("version"), fallback=fallback, label=step.get("label"),
                                   stickiness_key=step.get("stickinessKey"))
        want = step["expect"]
        info = reads[-1]
        assert (prompt.provenance.source, prompt.provenance.stale, prompt.version) == (want["source"], want["stale"], want["version"])
        assert abs(prompt.provenance.age_seconds - want["ageSeconds"]) < 0.5
        assert (info.table_name, info.prompt_id, info.version, info.requested_version, info.checksum, info.source, info.stale) == (
            items_table, step["read"], want["version"], want.get("requestedVersion"), prompt.checksum, want["source"], want["stale"])
        assert abs(info.age_seconds - want["ageSeconds"]) < 0.5
        arm = (want.get("label"), want.get("rolloutId"), want.get("arm"))
        assert (prompt.label, prompt.rollout.rollout_id if prompt.rollout else None,
                prompt.rollout.arm if prompt.rollout else None) == arm
        assert (info.label, info.rollout_id, info.arm) == arm
    assert len(reads) == sum(1 for s in scenario["steps"] if "read" in s)
    client.close()


def info_of(i: Dict[str, Any]) -> ReadInfo:
    """A vector's ReadInfo (camelCase keys, null for None)."""
    return ReadInfo(*(i[snake_key] for snake_key in (
        "tableName", "promptId", "version", "requestedVersion", "checksum", "source", "stale", "ageSeconds", "label",
        "rolloutId", "arm")))


@pytest.mark.parametrize("vector", ["logLine", "logLineLabeled"])
def test_log_line_vector(vector: str) -> None:
    lines: List[str] = []
    log_reads(write=lines.append)(info_of(FIXTURE[vector]["info"]), None)  # type: ignore[arg-type]
    assert json.loads(lines[0]) == FIXTURE[vector]["expected"]


@pytest.mark.parametrize("vector", FIXTURE["otel"], ids=[str(i) for i in range(len(FIXTURE["otel"]))])
def test_otel_attributes_vector(vector: Dict[str, Any]) -> None:
    calls: List[Dict[str, Any]] = []

    class Span:
        def is_recording(self) -> bool:
            return True

        def set_attributes(self, attributes: Dict[str, Any]) -> None:
            calls.append(dict(attributes))

    class Trace:
        @staticmethod
        def get_current_span() -> Span:
            return Span()

    hook = otel_read_attributes(lambda: Trace)
    assert hook is not None
    hook(info_of(vector["info"]), None)  # type: ignore[arg-type]
    assert calls == [vector["expected"]]


def test_emf_line_vector(ddb_local: Any) -> None:
    v = FIXTURE["emf"]
    client = PromptClient(table_name=v["tableName"], dynamodb_client=ddb_local.client())
    lines: List[str] = []
    metrics = emf_read_metrics(write=lines.append)
    for r in v["reads"]:
        metrics.on_read(ReadInfo(v["tableName"], "p", 1, None, "c", r["source"], r["stale"], 0.0), client)
    metrics.flush()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert isinstance(line["_aws"].pop("Timestamp"), int)
    assert line == v["expected"]


def test_hits_return_the_same_object_and_the_hook_unset_costs_nothing(ddb_local: Any, items_table: str) -> None:
    client = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client())
    first = client.get_prompt("greeting")
    a = client.get_prompt("greeting")
    assert a is client.get_prompt("greeting")
    assert (first.provenance.source, a.provenance.source) == ("table", "l1")
    assert a.content is first.content
    with pytest.raises(AttributeError):
        a.provenance.source = "table"  # type: ignore[misc]


def test_a_hook_that_raises_never_fails_the_read_and_is_logged_once(ddb_local: Any, items_table: str, caplog: Any) -> None:
    def broken(info: ReadInfo, client: PromptClient) -> None:
        raise RuntimeError("hook bug")

    client = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client(), on_read=broken)
    assert [client.get_prompt("greeting").version for _ in range(3)] == [2, 2, 2]
    assert len([r for r in caplog.records if "on_read" in r.getMessage()]) == 1


def test_emf_flushes_by_itself_after_the_interval_and_counts_table_reads(ddb_local: Any, items_table: str, clock: Any) -> None:
    lines: List[str] = []
    metrics = EmfReadMetrics(flush_interval_seconds=60, write=lines.append, clock=clock)
    client = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client(), clock=clock, on_read=metrics.on_read,
                          stale_while_revalidate_seconds=0)
    client.get_prompt("greeting")
    client.get_prompt("greeting")
    assert lines == []
    clock.advance(61)
    client.get_prompt("greeting")  # expired: read from the table again, then the interval is due
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert (line["ReaderServedTable"], line["ReaderServedL1"], line["TableName"]) == (2, 1, items_table)
    assert line["ReaderTableReads"] >= 1
    metrics.flush()
    assert len(lines) == 1  # an empty interval writes nothing


def test_emf_counts_table_reads_from_creation_per_table_and_writes_a_fallback_at_once(ddb_local: Any, items_table: str) -> None:
    lines: List[str] = []
    metrics = emf_read_metrics(write=lines.append, flush_interval_seconds=3600)
    a = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client(), on_read=metrics.on_read)
    b = PromptClient(table_name="other-table", dynamodb_client=ddb_local.client(), on_read=metrics.on_read)
    a.get_prompt("greeting")  # the first reported read: its GetItem happened before the hook ran
    a.get_prompt("greeting")
    metrics.on_read(ReadInfo("other-table", "p", 1, None, "c", "table", False, 0.0), b)
    metrics.flush()
    by_table = {line["TableName"]: line for line in map(json.loads, lines)}
    assert sorted(by_table) == sorted([items_table, "other-table"])
    t = by_table[items_table]
    assert (t["ReaderServedTable"], t["ReaderServedL1"], t["ReaderTableReads"]) == (1, 1, a.stats()["store_reads"])
    assert t["ReaderTableReads"] >= 1
    o = by_table["other-table"]
    assert (o["ReaderServedTable"], o["ReaderServedL1"], o["ReaderTableReads"]) == (1, 0, 0)
    lines.clear()
    metrics.on_read(ReadInfo("other-table", "p", 1, None, "c", "fallback", True, 0.0), b)  # written at once
    assert [(json.loads(x)["TableName"], json.loads(x)["ReaderServedFallback"]) for x in lines] == [("other-table", 1)]


def test_emf_counts_from_many_threads_add_up(ddb_local: Any, items_table: str) -> None:
    lines: List[str] = []
    metrics = emf_read_metrics(write=lines.append, flush_interval_seconds=3600)
    client = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client(), on_read=metrics.on_read)
    client.get_prompt("greeting")

    def reader() -> None:
        for _ in range(500):
            client.get_prompt("greeting")

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    metrics.flush()
    assert json.loads(lines[0])["ReaderServedL1"] == 4000


def test_otel_helper_is_none_without_opentelemetry_api() -> None:
    try:
        import opentelemetry  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
        pytest.skip("opentelemetry-api is installed here: the absent path is covered by the loader test below")
    except ImportError:
        assert otel_read_attributes() is None


def test_otel_helper_absent_by_loader_and_present_with_a_trace_module() -> None:
    def missing() -> Any:
        raise ImportError("No module named 'opentelemetry'")

    assert otel_read_attributes(missing) is None

    class Span:
        def __init__(self) -> None:
            self.attributes: Dict[str, Any] = {}

        def is_recording(self) -> bool:
            return True

        def set_attributes(self, attributes: Dict[str, Any]) -> None:
            self.attributes.update(attributes)

    span = Span()

    class Trace:
        @staticmethod
        def get_current_span() -> Span:
            return span

    hook = combine_read_hooks(otel_read_attributes(lambda: Trace), None)
    hook(ReadInfo("t", "greeting", 2, None, "c", "l1", False, 1.5), None)  # type: ignore[arg-type]
    assert span.attributes == {"gen_ai.prompt.name": "greeting", "gen_ai.prompt.version": 2, "prompt.source": "l1",
                               "prompt.stale": False, "prompt.age_seconds": 1.5}


def test_a_copy_served_from_the_l2_says_l2_with_the_age_of_the_table_read_behind_it(ddb_local: Any, ddb: Any, table: str,
                                                                                     redis_secure: Any, clock: Any) -> None:
    from test_l2 import POINTER, reader_l2

    put_items(ddb, table, [POINTER])
    first = PromptClient(table_name=table, dynamodb_client=ddb_local.client(), l2=reader_l2(redis_secure), clock=clock)
    assert first.get_prompt("shared").provenance.source == "table"
    clock.advance(7)
    reads: List[ReadInfo] = []
    second = PromptClient(table_name=table, dynamodb_client=ddb_local.client(), l2=reader_l2(redis_secure), clock=clock,
                          on_read=lambda info, _client: reads.append(info))
    shared = second.get_prompt("shared")
    assert (shared.provenance.source, shared.provenance.stale) == ("l2", False)
    assert abs(shared.provenance.age_seconds - 7) < 0.5
    assert [(r.source, r.version) for r in reads] == [("l2", 1)]
    assert second.get_prompt("shared").provenance.source == "l1"


def test_labeled_hits_return_one_object_per_arm_built_once_and_the_first_read_is_its_load(ddb_local: Any,
                                                                                             items_table: str) -> None:
    reads: List[ReadInfo] = []
    client = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client(),
                          on_read=lambda info, _client: reads.append(info))
    first_b = client.get_prompt("greeting", label="canary", stickiness_key="user-4")
    hits_b = [client.get_prompt("greeting", label="canary", stickiness_key="user-4") for _ in range(2)]
    hits_a = [client.get_prompt("greeting", label="canary", stickiness_key="user-0") for _ in range(2)]
    plain = [client.get_prompt("greeting", label="production") for _ in range(3)]
    assert first_b.provenance.source == "table"
    assert hits_b[0] is hits_b[1] and hits_a[0] is hits_a[1] and plain[1] is plain[2]
    assert hits_b[0] is not first_b and plain[0] is not plain[1]
    assert [(p.provenance.source, p.version, p.rollout.arm if p.rollout else None) for p in (hits_a[0], hits_b[0], plain[1])] == [
        ("l1", 1, "A"), ("l1", 2, "B"), ("l1", 1, None)]
    assert [(r.source, r.version, r.label, r.rollout_id, r.arm) for r in reads] == [
        ("table", 2, "canary", "r-conformance", "B"), ("l1", 2, "canary", "r-conformance", "B"),
        ("l1", 2, "canary", "r-conformance", "B"), ("l1", 1, "canary", "r-conformance", "A"),
        ("l1", 1, "canary", "r-conformance", "A"), ("table", 1, "production", None, None),
        ("l1", 1, "production", None, None), ("l1", 1, "production", None, None)]
    client.close()


def test_a_labeled_read_served_from_the_l2_says_l2_for_each_arm(ddb_local: Any, items_table: str,
                                                                redis_secure: Any) -> None:
    from test_l2 import reader_l2

    first = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client(), l2=reader_l2(redis_secure))
    assert first.get_prompt("greeting", label="canary", stickiness_key="user-0").provenance.source == "table"
    second = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client(), l2=reader_l2(redis_secure))
    b = second.get_prompt("greeting", label="canary", stickiness_key="user-4")
    third = PromptClient(table_name=items_table, dynamodb_client=ddb_local.client(), l2=reader_l2(redis_secure))
    a = third.get_prompt("greeting", label="canary", stickiness_key="user-0")
    assert (b.provenance.source, b.version, b.rollout.arm if b.rollout else None) == ("l2", 2, "B")
    assert (a.provenance.source, a.version, a.rollout.arm if a.rollout else None) == ("l2", 1, "A")
    assert second.stats()["store_reads"] + third.stats()["store_reads"] == 0
    for c in (first, second, third):
        c.close()


def test_an_on_read_that_is_not_callable_fails_the_client_creation() -> None:
    from cdk_prompt_serving_runtime import PromptServingError

    with pytest.raises(PromptServingError, match="on_read must be a function"):
        PromptClient(table_name="t", on_read="log")  # type: ignore[arg-type]


OTEL_PYTHON = os.path.join(REPO, ".tmp", "venvs", "otel", "bin", "python")
"""A venv with opentelemetry-api and -sdk (made with ``python3 -m venv --system-site-packages .tmp/venvs/otel`` and
``pip install opentelemetry-api opentelemetry-sdk``): the system interpreter this suite runs on has neither."""


@pytest.mark.skipif(not os.path.exists(OTEL_PYTHON), reason="no .tmp/venvs/otel with opentelemetry-api and -sdk")
def test_otel_helper_sets_the_attributes_on_a_real_sdk_span() -> None:
    import subprocess

    script = "\n".join([
        "import json",
        "from opentelemetry import trace",
        "from opentelemetry.sdk.trace import TracerProvider",
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor",
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter",
        "from cdk_prompt_serving_runtime import ReadInfo, otel_read_attributes",
        "exporter = InMemorySpanExporter()",
        "provider = TracerProvider()",
        "provider.add_span_processor(SimpleSpanProcessor(exporter))",
        "trace.set_tracer_provider(provider)",
        "hook = otel_read_attributes()",
        "with trace.get_tracer('test').start_as_current_span('handler'):",
        "    hook(ReadInfo('t', 'greeting', 3, None, 'c', 'l2', True, 2.5), None)",
        "print(json.dumps({'hook': hook is not None, 'attributes': dict(exporter.get_finished_spans()[0].attributes)}))",
    ])
    run = subprocess.run([OTEL_PYTHON, "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.path.join(REPO, "python")})
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"hook": True, "attributes": {
        "gen_ai.prompt.name": "greeting", "gen_ai.prompt.version": 3, "prompt.source": "l2", "prompt.stale": True,
        "prompt.age_seconds": 2.5}}


def test_surface_read_info_fields_in_order() -> None:
    with open(os.path.join(REPO, "test", "conformance", "fixtures", "surface.json"), encoding="utf-8") as f:
        fields = json.load(f)["readInfo"]["fields"]
    assert list(ReadInfo._fields) == [snake(name) for name in fields]
