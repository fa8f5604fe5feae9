"""Labels and sticky rollouts in the Python client, against DynamoDB Local (GetItem counted with a botocore hook),
and the shared conformance vectors (test/conformance/fixtures/labels.json, rollout.json) the Node client runs too."""
import json
import logging
import os
from typing import Any, Dict, List, Optional, Tuple

import pytest

from cdk_prompt_serving_runtime import PromptClient, PromptNotFoundError, PromptRollout, PromptServingError
from cdk_prompt_serving_runtime.labels import prompt_from_label_item
from cdk_prompt_serving_runtime.schema import checksum
from cdk_prompt_serving_runtime.schema.labels import label_name_problem, parse_rollout, rollout_arm, rollout_bucket
from services import REPO, CallCounter, create_serving_table

FIXTURES = os.path.join(REPO, "test", "conformance", "fixtures")


def load(name: str) -> Dict[str, Any]:
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


LABELS = load("labels.json")
ROLLOUT = load("rollout.json")


def attr(value: Any) -> Dict[str, Any]:
    """A plain value as a DynamoDB attribute value (the subset the tests write)."""
    if isinstance(value, bool):
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if isinstance(value, (int, float)):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, list):
        return {"L": [attr(v) for v in value]}
    return {"M": {k: attr(v) for k, v in value.items()}}


def text(t: str) -> Dict[str, Any]:
    return {"template_type": "TEXT", "text": t, "input_variables": ["name"]}


V1, V2, V3 = text("Hello v1 {{name}}"), text("Hello v2 {{name}}"), text("Hello v3 {{name}}")


def put(ddb: Any, table: str, item: Dict[str, Any]) -> None:
    ddb.put_item(TableName=table, Item={k: attr(v) for k, v in item.items() if v is not None})


def publish(ddb: Any, table: str, prompt_id: str, n: int, content: Dict[str, Any]) -> None:
    meta = {"prompt_id": prompt_id, "version_number": n, "checksum": checksum(content), "source": "test", "schema_version": 2}
    put(ddb, table, {**content, **meta, "version": f"v{n:06d}"})
    put(ddb, table, {**content, **meta, "version": "CURRENT", "status": "ACTIVE", "latest_version_number": n})


def write_label(ddb: Any, table: str, prompt_id: str, label: str, n: int, content: Dict[str, Any], **extra: Any) -> None:
    put(ddb, table, {**content, "prompt_id": prompt_id, "version": f"LABEL#{label}", "version_number": n,
                     "checksum": checksum(content), "status": "ACTIVE", "schema_version": 2, "label": label,
                     "moved_at": "2026-12-01T18:00:00.000Z", "moved_by": "arn:aws:iam::123456789012:role/release", **extra})


def rollout_map(rollout_id: str, n: int, content: Dict[str, Any], percent_bp: int) -> Dict[str, Any]:
    return {"rollout_id": rollout_id, "candidate_version": n, "candidate_checksum": checksum(content), "percent_bp": percent_bp}


@pytest.fixture(scope="module")
def labeled(ddb_local: Any) -> Any:
    ddb = ddb_local.client()
    table = create_serving_table(ddb, "py-labels")
    for n, content in [(1, V1), (2, V2), (3, V3)]:
        publish(ddb, table, "greeting", n, content)
    write_label(ddb, table, "greeting", "production", 1, V1)
    write_label(ddb, table, "greeting", "staging", 2, V2)
    yield ddb, table
    ddb.delete_table(TableName=table)


def reads(counter: CallCounter) -> int:
    return counter["GetItem"] + counter["BatchGetItem"]


def new_client(ddb_local: Any, table: str, **options: Any) -> Tuple[PromptClient, CallCounter]:
    ddb = ddb_local.client()
    counter = CallCounter(ddb)
    return PromptClient(table_name=table, dynamodb_client=ddb, l2=False, **options), counter


# -- reads against DynamoDB Local --------------------------------------------------------------------------------

def test_a_label_serves_its_version_reports_the_label_and_leaves_label_attributes_out(ddb_local: Any, labeled: Any) -> None:
    _, table = labeled
    client, counter = new_client(ddb_local, table)
    production = client.get_prompt("greeting", label="production")
    assert (production.version, production.label, production.source_deleted, production.rollout) == (1, "production", False, None)
    assert production.checksum == checksum(V1)
    assert dict(production.content) == {"template_type": "TEXT", "text": "Hello v1 {{name}}", "input_variables": ("name",)}
    assert client.get_prompt("greeting", label="staging").version == 2
    assert client.get_prompt("greeting").label is None
    before = reads(counter)
    for _ in range(100):
        client.get_prompt("greeting", label="production")
    assert reads(counter) == before  # cached: no table read


def test_an_unknown_label_is_not_found_through_the_negative_cache(ddb_local: Any, labeled: Any) -> None:
    _, table = labeled
    client, counter = new_client(ddb_local, table)
    for _ in range(3):
        with pytest.raises(PromptNotFoundError, match="prompt 'greeting' not found: no label 'canary'"):
            client.get_prompt("greeting", label="canary")
    assert reads(counter) == 1
    assert client.stats()["negative_hits"] == 2


@pytest.mark.parametrize("label", ["__proto__", "toString", "Production", "", "x" * 64, "current", 42, None, ["production"], "prod#1"])
def test_hostile_labels_are_not_found_without_a_remote_call(ddb_local: Any, labeled: Any, label: Any) -> None:
    _, table = labeled
    client, counter = new_client(ddb_local, table)
    if label is None:  # label=None means CURRENT: the hostile case is the empty string and the others
        assert client.get_prompt("greeting", label=label).version == 3
        return
    with pytest.raises(PromptNotFoundError, match=r"not a valid label \("):
        client.get_prompt("greeting", label=label)
    assert reads(counter) == 0


def test_version_with_label_or_a_non_string_key_are_rejected(ddb_local: Any, labeled: Any) -> None:
    _, table = labeled
    client, counter = new_client(ddb_local, table)
    with pytest.raises(PromptServingError, match="give `version` or `label`, not both"):
        client.get_prompt("greeting", 2, label="production")
    with pytest.raises(PromptServingError, match="`stickiness_key` must be a string, got number"):
        client.get_prompt("greeting", label="production", stickiness_key=42)  # type: ignore[arg-type]
    assert reads(counter) == 0


def test_a_label_whose_prompt_the_source_deleted_keeps_serving(ddb_local: Any, labeled: Any) -> None:
    ddb, table = labeled
    publish(ddb, table, "retired", 1, V1)
    write_label(ddb, table, "retired", "production", 1, V1, source_deleted_at="2026-12-01T18:00:00.000Z")
    put(ddb, table, {"prompt_id": "retired", "version": "CURRENT", "status": "DELETED", "version_number": 1, "checksum": checksum(V1)})
    client, _ = new_client(ddb_local, table)
    with pytest.raises(PromptNotFoundError):
        client.get_prompt("retired")
    p = client.get_prompt("retired", label="production")
    assert (p.version, p.label, p.source_deleted) == (1, "production", True)


def test_preload_with_labels_and_invalidate(ddb_local: Any, labeled: Any) -> None:
    ddb, table = labeled
    client, counter = new_client(ddb_local, table)
    client.preload(["greeting"], labels=["production", "staging"])
    before = reads(counter)
    assert client.get_prompt("greeting", label="staging").version == 2
    assert reads(counter) == before
    write_label(ddb, table, "greeting", "moving", 1, V1)
    assert client.get_prompt("greeting", label="moving").version == 1
    write_label(ddb, table, "greeting", "moving", 3, V3)
    client.invalidate("greeting")
    assert client.get_prompt("greeting", label="moving").version == 3
    with pytest.raises(PromptNotFoundError, match="not a valid label"):
        client.preload(["greeting"], labels=["Bad"])


KEYS = [f"user-{i}" for i in range(300)]


def test_rollout_arms_follow_the_hash_for_each_key_and_the_candidate_is_read_once(ddb_local: Any, labeled: Any) -> None:
    ddb, table = labeled
    write_label(ddb, table, "greeting", "ro-sticky", 1, V1, rollout=rollout_map("r-sticky", 3, V3, 2500))
    client, counter = new_client(ddb_local, table)
    for key in KEYS + KEYS:
        p = client.get_prompt("greeting", label="ro-sticky", stickiness_key=key)
        arm = "B" if rollout_bucket("greeting", "ro-sticky", key) < 2500 else "A"
        assert p.rollout == PromptRollout(label="ro-sticky", rollout_id="r-sticky", arm=arm, percent_bp=2500, candidate_version=3)
        assert (p.version, p.checksum, p.label) == ((3, checksum(V3), "ro-sticky") if arm == "B" else (1, checksum(V1), "ro-sticky"))
    assert reads(counter) == 2  # the label item and the candidate, once each
    assert client.stats()["rollout_faults"] == 0


def test_without_a_key_each_read_picks_at_random(ddb_local: Any, labeled: Any) -> None:
    ddb, table = labeled
    write_label(ddb, table, "greeting", "ro-random", 1, V1, rollout=rollout_map("r-random", 2, V2, 5000))
    client, _ = new_client(ddb_local, table)
    arms = [client.get_prompt("greeting", label="ro-random").rollout.arm for _ in range(1000)]  # type: ignore[union-attr]
    assert 400 < arms.count("B") < 600


@pytest.mark.parametrize("name,edit,reason", [
    ("percent", lambda m: {**m, "percent_bp": 12000}, "percent_bp 12000 is not a whole number from 0 to 10000"),
    ("candidate-missing", lambda m: {k: v for k, v in m.items() if k != "candidate_version"}, "candidate_version absent"),
    ("candidate-absent", lambda m: {**m, "candidate_version": 9}, "candidate version item v000009 is absent"),
    ("checksum", lambda m: {**m, "candidate_checksum": checksum(V2)}, "candidate v000003 has checksum"),
    ("not-a-map", lambda m: "fifty percent", "rollout is not a map"),
])
def test_a_malformed_rollout_fails_alone(ddb_local: Any, labeled: Any, caplog: Any, name: str, edit: Any, reason: str) -> None:
    ddb, table = labeled
    label = f"bad-{name}"
    write_label(ddb, table, "greeting", label, 1, V1, rollout=edit(rollout_map("r-bad", 3, V3, 10000)))
    client, _ = new_client(ddb_local, table)
    with caplog.at_level(logging.WARNING):
        served = [client.get_prompt("greeting", label=label, stickiness_key=k) for k in KEYS[:50]]
    assert all((p.version, p.checksum, p.label) == (1, checksum(V1), label) for p in served)
    assert client.stats()["rollout_faults"] == 50
    warnings = [r.getMessage() for r in caplog.records if "cannot serve arm B" in r.getMessage()]
    assert len(warnings) == 1 and reason in warnings[0]


def test_a_rollout_stepped_up_only_moves_keys_from_a_to_b_and_removing_it_returns_all_to_a(ddb_local: Any, labeled: Any) -> None:
    ddb, table = labeled
    client, _ = new_client(ddb_local, table)
    previous: Optional[List[str]] = None
    for percent_bp in (1000, 5000, 10000):
        write_label(ddb, table, "greeting", "ro-steps", 1, V1, rollout=rollout_map("r-steps", 2, V2, percent_bp))
        client.invalidate("greeting")
        arms = [client.get_prompt("greeting", label="ro-steps", stickiness_key=k).rollout.arm for k in KEYS]  # type: ignore[union-attr]
        assert arms == [rollout_arm(rollout_bucket("greeting", "ro-steps", k), percent_bp) for k in KEYS]
        if previous is not None:
            assert not any(a == "A" and b == "B" for a, b in zip(arms, previous))
        previous = arms
    write_label(ddb, table, "greeting", "ro-steps", 1, V1)
    client.invalidate("greeting")
    assert all(client.get_prompt("greeting", label="ro-steps", stickiness_key=k).rollout is None for k in KEYS)


# -- conformance vectors (both clients) --------------------------------------------------------------------------

@pytest.mark.parametrize("case", LABELS["names"], ids=[c["name"] for c in LABELS["names"]])
def test_label_names(case: Dict[str, Any]) -> None:
    assert label_name_problem(case["label"]) == case["problem"]


@pytest.mark.parametrize("case", LABELS["reads"], ids=[c["name"] for c in LABELS["reads"]])
def test_label_reads(case: Dict[str, Any]) -> None:
    item = case["item"]
    prompt = prompt_from_label_item(item, case["label"])
    if "notFound" in case:
        assert prompt is None
        return
    assert prompt is not None
    spec, _ = parse_rollout(item["rollout"]) if "rollout" in item else (None, None)
    if spec is not None:  # arm A at 0 % without a key, as served
        from cdk_prompt_serving_runtime.rollout import RolloutState, choose_arm

        state = RolloutState(spec, case["label"], prompt)
        assert choose_arm(item["prompt_id"], case["label"], None, spec.percent_bp) == "A"
        prompt = state.arm_a
    e = case["expect"]
    assert (prompt.id, prompt.version, prompt.label, prompt.source_deleted) == (e["id"], e["version"], e["label"], e["sourceDeleted"])
    if "checksum" in e:
        assert prompt.checksum == e["checksum"]
    expected_rollout = e["rollout"]
    if expected_rollout is None:
        assert prompt.rollout is None
    else:
        assert prompt.rollout == PromptRollout(label=expected_rollout["label"], rollout_id=expected_rollout["rolloutId"],
                                               arm=expected_rollout["arm"], percent_bp=expected_rollout["percentBp"],
                                               candidate_version=expected_rollout["candidateVersion"])
    assert json.loads(json.dumps(prompt.content)) == e["content"]


def test_rollout_vectors() -> None:
    assert len(ROLLOUT["vectors"]) >= 50
    for v in ROLLOUT["vectors"]:
        assert rollout_bucket(v["promptId"], v["label"], v["key"]) == v["bucket"], v
    for a in ROLLOUT["arms"]:
        assert rollout_arm(rollout_bucket(a["promptId"], a["label"], a["key"]), a["percentBp"]) == a["arm"], a
    for c in ROLLOUT["shareCounts"]:
        on_b = sum(1 for k in range(10000) if rollout_bucket(c["promptId"], c["label"], f"user-{k}") < c["percentBp"])
        assert on_b == c["armB"]


def test_rollout_bucket_encodes_surrogates_as_javascript_does() -> None:
    # json.loads joins an escaped surrogate pair into one code point; a caller may hold the pair as two code points.
    assert rollout_bucket("summarize", "production", "\ud83d" + "\ude00") == rollout_bucket("summarize", "production", "\U0001f600")
    # A pair split across fields is two lone surrogates (the 0x00 separator sits between them), each U+FFFD.
    assert rollout_bucket("summarize\ud83d", "p", "\ude00") == rollout_bucket("summarize\ufffd", "p", "\ufffd")
    assert rollout_bucket("a", "p", "\ud800") == rollout_bucket("a", "p", "\ufffd")


@pytest.mark.parametrize("case", ROLLOUT["maps"], ids=[c["name"] for c in ROLLOUT["maps"]])
def test_rollout_maps(case: Dict[str, Any]) -> None:
    spec, problem = parse_rollout(case["map"])
    if "problem" in case:
        assert (spec, problem) == (None, case["problem"])
    else:
        assert problem is None and spec is not None
        assert (spec.rollout_id, spec.candidate_version, spec.candidate_checksum, spec.percent_bp) == (
            case["spec"]["rolloutId"], case["spec"]["candidateVersion"], case["spec"]["candidateChecksum"], case["spec"]["percentBp"])


def test_surface_prompt_fields_and_rollout_type() -> None:
    import dataclasses

    from cdk_prompt_serving_runtime import Prompt

    surface = load("surface.json")["labels"]
    names = [f.name for f in dataclasses.fields(Prompt)]
    for field in surface["promptFields"]:
        assert {"sourceDeleted": "source_deleted"}.get(field, field) in names
    assert [f.name for f in dataclasses.fields(PromptRollout)] == ["label", "rollout_id", "arm", "percent_bp", "candidate_version"]
    assert len(surface["rolloutFields"]) == 5


def test_a_stale_serve_keeps_each_key_on_its_arm(ddb_local: Any, labeled: Any, clock: Any) -> None:
    ddb, table = labeled
    write_label(ddb, table, "greeting", "ro-stale", 1, V1, rollout=rollout_map("r-stale", 2, V2, 5000))
    client, counter = new_client(ddb_local, table, clock=clock, max_age_seconds=10, stale_while_revalidate_seconds=60)
    fresh = [client.get_prompt("greeting", label="ro-stale", stickiness_key=k) for k in KEYS]
    clock.advance(11)  # past max_age_seconds, within stale-while-revalidate
    stale = [client.get_prompt("greeting", label="ro-stale", stickiness_key=k) for k in KEYS]
    assert [p.rollout.arm for p in stale] == [p.rollout.arm for p in fresh]  # type: ignore[union-attr]
    assert [p.version for p in stale] == [p.version for p in fresh]
    assert stale[0].stale is True and fresh[0].stale is False
