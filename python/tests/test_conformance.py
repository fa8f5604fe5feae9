"""The conformance suite, Python side: the same JSON fixtures (test/conformance/fixtures) the Node client's jest
test runs, so the two clients cannot drift."""
import base64
import datetime
import hashlib
import json
import os
import re
from typing import Any, Dict

import pytest

from cdk_prompt_serving_runtime import PromptClient, PromptNotFoundError, PromptRenderError, PromptServingError, PromptStoreError
from cdk_prompt_serving_runtime.iam_token import iam_auth_token
from cdk_prompt_serving_runtime.options import resolve_options
from cdk_prompt_serving_runtime.prompt import prompt_from_item
from cdk_prompt_serving_runtime.schema import (
    bloom_build, bloom_indexes, bloom_might_contain, bloom_parameters, canonical_json, checksum, content_of,
    is_valid_prompt_id,
)
from cdk_prompt_serving_runtime.schema import l2 as l2s
from cdk_prompt_serving_runtime.schema.catalog import catalog_problem
from services import REPO, put_items

FIXTURES = os.path.join(REPO, "test", "conformance", "fixtures")


def load(name: str) -> Dict[str, Any]:
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return json.load(f)


def id_of(spec: Any) -> Any:
    if isinstance(spec, dict) and "repeat" in spec:
        return spec["repeat"] * spec["times"]
    return spec


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().replace("dynamo_d_b", "dynamodb")


def cases(name: str, key: str = "cases") -> Any:
    data = load(name)[key]
    return pytest.mark.parametrize("case", data, ids=[str(c.get("name", i)) for i, c in enumerate(data)])


@cases("ids.json")
def test_prompt_ids(case: Dict[str, Any]) -> None:
    assert is_valid_prompt_id(id_of(case["id"])) is case["valid"]


@cases("checksum.json")
def test_checksum(case: Dict[str, Any]) -> None:
    assert canonical_json(content_of(case["content"])) == case["canonical"]
    assert checksum(case["content"]) == case["checksum"]


BLOOM = load("bloom.json")


@pytest.mark.parametrize("case", BLOOM["parameters"], ids=lambda c: f"count={c['count']}")
def test_bloom_parameters(case: Dict[str, Any]) -> None:
    assert bloom_parameters(case["count"]) == (case["bits"], case["hashes"])


@pytest.mark.parametrize("case", BLOOM["indexes"], ids=lambda c: f"{c['id'][:20]!r}/{c['bits']}/{c['hashes']}")
def test_bloom_indexes(case: Dict[str, Any]) -> None:
    assert bloom_indexes(case["id"], case["bits"], case["hashes"]) == case["indexes"]


CATALOGS = load("catalog-integrity.json")


@pytest.mark.parametrize("case", CATALOGS["cases"], ids=lambda c: c["name"])
def test_catalog_integrity(case: Dict[str, Any]) -> None:
    f = case["fields"]
    bloom: Any = f.get("bloom")
    if bloom is not None and not f.get("bloomIsText"):
        bloom = base64.b64decode(bloom)
    problem = catalog_problem(bloom, f.get("bits"), f.get("hashes"), f.get("count"), f.get("revision"))
    assert (problem is None) == case["valid"], problem


@pytest.mark.parametrize("case", BLOOM["filters"], ids=lambda c: f"{len(c['ids'])} ids")
def test_bloom_filters(case: Dict[str, Any]) -> None:
    assert base64.b64encode(bloom_build(case["ids"], case["bits"], case["hashes"])).decode() == case["bloom"]
    data = base64.b64decode(case["bloom"])
    assert {p: bloom_might_contain(data, case["bits"], case["hashes"], p) for p in case["probes"]} == case["probes"]


def _node_message(message: str) -> str:
    """The Node message with option names in backticks spelled the Python way."""
    return re.sub(r"`([A-Za-z]+)`", lambda m: f"`{snake(m.group(1))}`", message)


RESOLVED = {  # fixture (Node, ms) name → (Python field, factor from seconds)
    "tableName": ("table_name", None), "maxAgeMs": ("max_age", 1000), "maxEntries": ("max_entries", None),
    "notFoundMaxAgeMs": ("not_found_max_age", 1000), "staleWhileRevalidateMs": ("stale_while_revalidate", 1000),
    "staleIfErrorMs": ("stale_if_error", 1000), "catalogMaxAgeMs": ("catalog_max_age", 1000),
    "requestTimeoutMs": ("request_timeout", 1000), "maxAttempts": ("max_attempts", None), "l2TimeoutMs": ("l2_timeout", 1000),
}


@cases("options.json")
def test_options(case: Dict[str, Any]) -> None:
    options = {snake(k): v for k, v in case["options"].items()}
    if "error" in case:
        with pytest.raises(PromptServingError) as caught:
            resolve_options(options, case["env"])
        assert str(caught.value) == _node_message(case["error"])
        return
    resolved = resolve_options(options, case["env"])
    for name, expected in case["expect"].items():
        field, factor = RESOLVED[name]
        value = getattr(resolved, field)
        assert (round(value * factor, 6) if factor else value) == expected, name


RENDER_META = {"prompt_id": "render-case", "version": "CURRENT", "version_number": 1, "checksum": "sha256:" + "0" * 64}


@cases("render.json")
def test_render(case: Dict[str, Any]) -> None:
    if "repeat" in case:
        return  # expanded, with every error field, by test_render.py
    prompt = prompt_from_item({**case["content"], **RENDER_META})
    options = {snake(k): v for k, v in case.get("options", {}).items()}
    if "error" in case:
        with pytest.raises(PromptRenderError) as caught:
            prompt.render(case["variables"], **options)
        assert list(caught.value.missing_variables) == case["error"]["missing"]
        assert str(caught.value) == case["error"]["message"]
        return
    assert prompt.render(case["variables"], **options) == case["expected"]


ITEMS = load("items.json")["cases"]


@pytest.fixture
def item_table(ddb: Any, table: str) -> str:
    for case in ITEMS:
        put_items(ddb, table, case["items"])
    return table


def _plain(value: Any) -> Any:
    """Frozen tuples/dicts → lists/dicts, for comparison with JSON."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", ITEMS, ids=[c["name"] for c in ITEMS])
def test_items_read_through_the_real_client(case: Dict[str, Any], ddb: Any, item_table: str) -> None:
    client = PromptClient(table_name=item_table, dynamodb_client=ddb)
    version = case["get"]["version"]
    if case.get("notFound"):
        with pytest.raises(PromptNotFoundError):
            client.get_prompt(case["get"]["id"], version)
        return
    if "storeError" in case:
        with pytest.raises(PromptStoreError, match=re.escape(case["storeError"])):
            client.get_prompt(case["get"]["id"], version)
        return
    prompt = client.get_prompt(case["get"]["id"], version)
    e = case["expect"]
    assert (prompt.id, prompt.version, prompt.checksum, prompt.template_type) == (e["id"], e["version"], e["checksum"], e["templateType"])
    assert list(prompt.input_variables) == e["inputVariables"]
    for fixture_name, attr in [("text", "text"), ("messages", "messages"), ("system", "system"), ("modelId", "model_id"),
                               ("inferenceConfig", "inference_config"), ("content", "content")]:
        if fixture_name in e:
            assert _plain(getattr(prompt, attr)) == e[fixture_name], fixture_name


def test_invalid_ids_are_not_found_without_a_remote_call(ddb: Any, item_table: str, counter: Any) -> None:
    client = PromptClient(table_name=item_table, dynamodb_client=ddb)
    counter.reset()
    invalid = [c for c in load("ids.json")["cases"] if not c["valid"]]
    for case in invalid:
        with pytest.raises(PromptNotFoundError):
            client.get_prompt(id_of(case["id"]))
    assert counter["GetItem"] == 0


@cases("iam-token.json")
def test_iam_token_golden(case: Dict[str, Any]) -> None:
    from botocore.credentials import Credentials

    when = datetime.datetime.strptime(case["date"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    creds = Credentials(case["accessKeyId"], case["secretAccessKey"], case["sessionToken"])
    token = iam_auth_token(case["cacheName"], case["userId"], case["region"], creds, case["resourceType"], now=when)
    assert token == case["token"]
    from urllib.parse import parse_qsl

    assert dict(parse_qsl(token.split("?", 1)[1], keep_blank_values=True)) == case["params"]
    assert case["params"]["X-Amz-Signature"] == case["signature"]
    assert not token.startswith("http")
    assert ("ResourceType=ServerlessCache" in token) is (case["resourceType"] == "ServerlessCache")


L2 = load("l2.json")


def test_l2_keys_scripts_and_encodings() -> None:
    for k in L2["keys"]:
        assert l2s.l2_item_key(k["table"], k["promptId"], k["sortKey"]) == k["key"]
        assert l2s.l2_fill_key(k["table"], k["promptId"], k["sortKey"]) == k["fillKey"]
    assert l2s.l2_catalog_key(L2["catalogKey"]["table"]) == L2["catalogKey"]["key"]
    assert l2s.l2_epoch_key(L2["epochKey"]["table"]) == L2["epochKey"]["key"]
    assert l2s.l2_key_pattern(L2["keyPattern"]["table"]) == L2["keyPattern"]["pattern"]
    assert l2s.l2_fill_pattern(L2["keyPattern"]["table"]) == L2["keyPattern"]["fillPattern"]
    assert l2s.L2_VALUE_TTL_SECONDS == L2["valueTtlSeconds"]
    assert l2s.L2_MAX_CLOCK_SKEW_MS == L2["maxClockSkewMs"]
    assert hashlib.sha1(l2s.L2_WRITE_THROUGH_SCRIPT.encode()).hexdigest() == L2["writeThroughScriptSha1"]
    assert hashlib.sha1(l2s.L2_EPOCH_BUMP_SCRIPT.encode()).hexdigest() == L2["epochBumpScriptSha1"]
    for e in L2["encodeFill"]:
        assert l2s.encode_fill_value(e["inc"], e["fetchedAt"], e["item"]) == e["encoded"]
    for e in L2["encodeStream"]:
        assert l2s.encode_stream_value(e["inc"], e["seq"], e["writtenAt"], e["item"]) == e["encoded"]
    for c in L2["fillTtl"]:
        assert l2s.l2_fill_ttl_seconds(c["maxAgeMs"] / 1000, c["staleWhileRevalidateMs"] / 1000) == c["ttl"], c
    for c in L2["tokens"]:
        result = l2s.compare_tokens(tuple(c["a"]), tuple(c["b"]))
        assert (result > 0) - (result < 0) == c["compare"], c


@pytest.mark.parametrize("case", L2["decodeStream"], ids=[c["name"] for c in L2["decodeStream"]])
def test_l2_stream_value(case: Dict[str, Any]) -> None:
    value = l2s.decode_stream_value(case["raw"], case["promptId"], case["sortKey"])
    got = None if value is None else {"inc": value.inc, "seq": value.seq, "removed": value.item is None}
    assert got == case["expect"]


@pytest.mark.parametrize("case", L2["decodeFill"], ids=[c["name"] for c in L2["decodeFill"]])
def test_l2_fill_value(case: Dict[str, Any]) -> None:
    value = l2s.decode_fill_value(case["raw"], case["promptId"], case["sortKey"], case["nowMs"])
    assert (None if value is None else {"inc": value.inc, "fetchedAt": value.fetched_at}) == case["expect"]


@pytest.mark.parametrize("case", L2["epoch"], ids=[c["name"] for c in L2["epoch"]])
def test_l2_epoch_incarnation(case: Dict[str, Any]) -> None:
    assert l2s.epoch_incarnation(case["raw"]) == case["incarnation"]


@pytest.mark.parametrize("case", L2["ordering"], ids=[c["name"] for c in L2["ordering"]])
def test_l2_write_through_script_on_a_real_redis_server(case: Dict[str, Any], redis_secure: Any) -> None:
    key = l2s.l2_item_key("ordering-py", case["name"].replace(" ", "-"), "CURRENT")
    admin = redis_secure.admin()
    admin.delete(key)
    if case["initial"] is not None:
        admin.set(key, case["initial"])
    for inc, seq, expected in case["writes"]:
        value = json.dumps({"inc": inc, "seq": seq, "writtenAt": 1, "item": None})
        assert admin.eval(l2s.L2_WRITE_THROUGH_SCRIPT, 1, key, inc, seq, value, 60) == expected, (inc, seq)
    assert json.loads(admin.get(key))["seq"] == case["final"]
    assert 0 < admin.ttl(key) <= 60


@pytest.mark.parametrize("case", L2["epochBump"], ids=[c["name"] for c in L2["epochBump"]])
def test_l2_epoch_script_on_a_real_redis_server(case: Dict[str, Any], redis_secure: Any) -> None:
    key = l2s.l2_epoch_key("epoch-py-" + case["name"].replace(" ", "-"))
    admin = redis_secure.admin()
    admin.delete(key)
    if case["initial"] is not None:
        admin.set(key, case["initial"])
    admin.eval(l2s.L2_EPOCH_BUMP_SCRIPT, 1, key, case["inc"], L2["epochBumpLatest"])
    assert admin.get(key).decode() == case["expect"]


HOSTILE = load("l2-hostile.json")


@pytest.fixture
def hostile_table(ddb: Any, table: str) -> str:
    put_items(ddb, table, [c["tableItem"] for c in HOSTILE["cases"] if c["tableItem"]])
    return table


@pytest.mark.parametrize("case", HOSTILE["cases"], ids=[c["name"] for c in HOSTILE["cases"]])
def test_hostile_l2_values(case: Dict[str, Any], ddb: Any, hostile_table: str, redis_secure: Any) -> None:
    import time as _time

    from cdk_prompt_serving_runtime.valkey import ValkeyL2
    from services import READER_PASSWORD, CallCounter

    admin = redis_secure.admin()
    admin.set(l2s.l2_epoch_key(hostile_table), HOSTILE["epoch"])
    now_ms = round(_time.time() * 1000)
    raw = re.sub(r'"NOW([+-]\d+)?"', lambda m: str(now_ms + int(m.group(1) or 0)), case["l2"]["raw"])
    key_of = l2s.l2_item_key if case["l2"]["kind"] == "stream" else l2s.l2_fill_key
    admin.set(key_of(hostile_table, case["id"], "CURRENT"), raw)
    counter = CallCounter(ddb)
    reader = ValkeyL2("127.0.0.1", redis_secure.port, auth="none", user="reader", password=READER_PASSWORD,
                      ssl_ca_certs=redis_secure.ca, timeout_ms=2000)
    client = PromptClient(table_name=hostile_table, dynamodb_client=ddb, l2=reader, max_age_seconds=60)
    try:
        prompt = client.get_prompt(case["id"])
        answer: Any = {"version": prompt.version, "inputVariables": list(prompt.input_variables)}
        if prompt.inference_config is not None:
            answer["inferenceConfig"] = _plain(prompt.inference_config)
    except PromptNotFoundError:
        answer = "notFound"
    assert answer == case["expect"]
    assert (f"{case['id']}/CURRENT" in counter.keys) is case["tableRead"]


# -- the reader surface (surface.json; the Node side is test/conformance/surface.test.ts) ------------------------

SURFACE = load("surface.json")


def py_name(node_name: str) -> str:
    """A Node name the Python way: camelCase becomes snake_case; class, type and constant names stay."""
    return node_name if node_name[:1].isupper() else snake(node_name)


def _surface_client() -> Any:
    import cdk_prompt_serving_runtime as package

    return package.PromptClient(table_name="surface", dynamodb_client=object(), l2=False)


def test_surface_the_client_has_exactly_the_listed_public_methods_and_epoch_polling_is_private() -> None:
    import inspect

    public = sorted(n for n, v in inspect.getmembers(PromptClient) if not n.startswith("_") and callable(v))
    assert public == sorted(py_name(m["name"]) for m in SURFACE["methods"])
    assert [n for n in dir(_surface_client()) if "epoch" in n and not n.startswith("_")] == []


@pytest.mark.parametrize("method", SURFACE["methods"], ids=[m["name"] for m in SURFACE["methods"]])
def test_surface_methods_take_the_listed_parameters_and_keyword_options(method: Dict[str, Any]) -> None:
    import inspect

    params = list(inspect.signature(getattr(PromptClient, py_name(method["name"]))).parameters.values())[1:]
    assert [p.name for p in params] == [py_name(n) for n in method["params"] + method.get("options", [])]
    options = params[len(method["params"]):]
    assert all(p.default is None for p in options)  # every option is optional, None meaning "the default"
    if "fallback" in method.get("options", []):
        assert params[-1].kind is inspect.Parameter.KEYWORD_ONLY


def test_surface_the_constructor_takes_the_listed_options() -> None:
    import inspect

    spec = SURFACE["clientOptions"]
    params = list(inspect.signature(PromptClient.__init__).parameters.values())[1:]
    positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert positional == [py_name(n) for n in spec["pythonPositional"]]
    assert sorted(p.name for p in params) == sorted([py_name(n) for n in spec["options"]] + list(spec["pythonOnly"]))


def test_surface_fallback_and_stats_fields_in_order() -> None:
    import dataclasses

    import cdk_prompt_serving_runtime as package

    fallback_type = getattr(package, SURFACE["fallback"]["type"])
    assert [f.name for f in dataclasses.fields(fallback_type)] == [py_name(n) for n in SURFACE["fallback"]["fields"]]
    expected = [py_name(n) for n in SURFACE["stats"]["fields"]]
    assert list(getattr(package, SURFACE["stats"]["type"]).__annotations__) == expected
    assert list(_surface_client().stats()) == expected


def test_surface_error_classes() -> None:
    import cdk_prompt_serving_runtime as package

    base = getattr(package, SURFACE["errors"]["base"])
    assert issubclass(base, Exception)
    for name in SURFACE["errors"]["subclasses"]:
        assert issubclass(getattr(package, name), base) and getattr(package, name).__name__ == name


def test_surface_an_id_that_can_never_exist_is_not_found_with_the_reason_both_clients_give() -> None:
    with pytest.raises(PromptNotFoundError) as caught:
        _surface_client().get_prompt("#reserved")
    assert str(caught.value) == f"prompt '#reserved' not found: {SURFACE['invalidIdReason']}"


def test_surface_the_package_exports_exactly_the_listed_names() -> None:
    import cdk_prompt_serving_runtime as package

    exports = SURFACE["exports"]
    expected = sorted([e.get("python", py_name(e["node"])) for e in exports["both"]] + list(exports["pythonOnly"]))
    assert sorted(package.__all__) == expected
    for name in package.__all__:
        assert hasattr(package, name), name


@pytest.mark.parametrize("case", SURFACE["fallback"]["cases"], ids=[c["name"] for c in SURFACE["fallback"]["cases"]])
def test_surface_a_fallback_is_served_as_the_same_prompt_by_both_clients(case: Dict[str, Any]) -> None:
    from cdk_prompt_serving_runtime import PromptFallback
    from cdk_prompt_serving_runtime.fallback import fallback_prompt

    prompt = fallback_prompt(case["promptId"], PromptFallback(**{snake(k): v for k, v in case["fallback"].items()}))
    assert {k: getattr(prompt, snake(k)) for k in case["expect"]} == dict(case["expect"], inputVariables=tuple(case["expect"]["inputVariables"]))


def _catalog_item(ids: Any) -> Dict[str, Any]:
    """The catalog item of ``ids`` (boto3 attribute values), sized and built as the sync builds it."""
    bits, hashes = bloom_parameters(len(ids))
    return {"prompt_id": {"S": "#catalog"}, "version": {"S": "CURRENT"}, "bloom": {"B": bloom_build(ids, bits, hashes)},
            "bloom_bits": {"N": str(bits)}, "bloom_hashes": {"N": str(hashes)}, "count": {"N": str(len(ids))},
            "revision": {"N": "1"}}


@pytest.mark.parametrize("case", HOSTILE["catalogCases"], ids=[c["name"] for c in HOSTILE["catalogCases"]])
def test_a_catalog_fill_never_rules_an_id_out_alone(case: Dict[str, Any], ddb: Any, table: str, redis_secure: Any) -> None:
    import time as _time

    from cdk_prompt_serving_runtime.ddb_codec import to_json_item
    from cdk_prompt_serving_runtime.valkey import ValkeyL2
    from services import READER_PASSWORD, CallCounter

    put_items(ddb, table, [_catalog_item(case["tableCatalog"]), *case["tableItems"]])
    admin = redis_secure.admin()
    if case["epoch"] is not None:
        admin.set(l2s.l2_epoch_key(table), case["epoch"])
    delta = re.fullmatch(r"NOW([+-]\d+)?", case["fill"]["fetchedAt"])
    assert delta is not None
    fetched_at = round(_time.time() * 1000) + int(delta.group(1) or 0)
    fill = l2s.encode_fill_value(case["fill"]["inc"], fetched_at, to_json_item(_catalog_item(case["fill"]["ids"])))
    admin.set(l2s.l2_fill_key(table, "#catalog", "CURRENT"), fill)
    counter = CallCounter(ddb)
    reader = ValkeyL2("127.0.0.1", redis_secure.port, auth="none", user="reader", password=READER_PASSWORD,
                      ssl_ca_certs=redis_secure.ca, timeout_ms=2000)
    client = PromptClient(table_name=table, dynamodb_client=ddb, l2=reader, max_age_seconds=60)
    for read in case["reads"]:
        try:
            prompt = client.get_prompt(read["id"])
            answer: Any = {"version": prompt.version, "inputVariables": list(prompt.input_variables)}
        except PromptNotFoundError:
            answer = "notFound"
        assert answer == read["expect"]
    assert counter.keys.count("#catalog/CURRENT") == case["catalogTableReads"]
