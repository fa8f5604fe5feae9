"""The strict-render vectors (test/conformance/fixtures/render.json), every field, against the Python client; the
Node side is test/runtime/render-conformance.test.ts. Plus what JSON cannot carry (NaN, inf, sets, objects)."""
import json
import math
import os
import re
from typing import Any, Dict

import pytest

from cdk_prompt_serving_runtime import PromptRenderError
from cdk_prompt_serving_runtime.prompt import prompt_from_item
from services import REPO

FIXTURE = os.path.join(REPO, "test", "conformance", "fixtures", "render.json")
with open(FIXTURE, encoding="utf-8") as f:
    CASES = json.load(f)["cases"]
META = {"prompt_id": "render-case", "version": "CURRENT", "version_number": 1, "checksum": "sha256:" + "0" * 64}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def expand(value: Any, repeat: Any) -> Any:
    if repeat is None:
        return value
    long = repeat["unit"] * repeat["times"]
    if isinstance(value, str):
        return value.replace("@REPEAT@", long)
    if isinstance(value, list):
        return [expand(v, repeat) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, repeat) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case: Dict[str, Any]) -> None:
    prompt = prompt_from_item({**case["content"], **META})
    variables = expand(case["variables"], case.get("repeat"))
    options = {snake(k): v for k, v in case.get("options", {}).items()}
    if "error" in case:
        with pytest.raises(PromptRenderError) as caught:
            prompt.render(variables, **options)
        error = caught.value
        assert (error.prompt_id, error.version) == ("render-case", 1)
        assert list(error.missing) == case["error"]["missing"] == list(error.missing_variables)
        assert list(error.extra) == case["error"].get("extra", [])
        assert list(error.invalid) == case["error"].get("invalid", [])
        assert str(error) == case["error"]["message"]
        return
    out = prompt.render(variables, **options)
    assert out == expand(case["expected"], case.get("repeat"))
    if "expectedJson" in case:
        assert json.dumps(out, ensure_ascii=False, separators=(",", ":")) == case["expectedJson"]


TEXT = prompt_from_item({"template_type": "TEXT", "text": "{{a}}", **META})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {1, 2}, object(), b"x", {"k": 1}, [1]])
def test_values_json_cannot_carry_are_invalid(value: Any) -> None:
    with pytest.raises(PromptRenderError) as caught:
        TEXT.render({"a": value})
    assert caught.value.invalid == ("a",)


@pytest.mark.parametrize("value", [math.nan, {"x": math.inf}, {1: "int key"}, {"s": {1, 2}}])
def test_json_variables_refuse_what_is_not_json(value: Any) -> None:
    with pytest.raises(PromptRenderError) as caught:
        TEXT.render({"a": value}, json_variables=["a"])
    assert caught.value.invalid == ("a",)


def test_json_variables_refuse_a_cycle() -> None:
    cycle: Dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(PromptRenderError):
        TEXT.render({"a": cycle}, json_variables=["a"])


def test_big_integers_print_as_javascript_numbers() -> None:
    assert TEXT.render({"a": 2**64}) == "18446744073709552000"


def test_tuples_are_json_arrays() -> None:
    assert TEXT.render({"a": ("x", 1.5)}, json_variables=("a",)) == '["x",1.5]'


CHAT = prompt_from_item({
    "template_type": "CHAT",
    "system": [{"text": "You answer questions about the handbook.", "zeta": "kept", "alpha": 1}, {"cachePoint": {"type": "default"}}],
    "messages": [
        {"role": "user", "content": [{"text": "Handbook (long, fixed) {not a placeholder}"}, {"cachePoint": {"type": "default"}},
                                     {"text": "Customer {{customer}} asks: {{question}}"}]},
        {"role": "assistant", "content": [{"text": "Noted."}]},
    ],
    **META,
})


def _request(rendered: Any) -> str:
    return json.dumps({"system": rendered["system"], "messages": rendered["messages"]}, ensure_ascii=False, separators=(",", ":"))


def test_chat_prefix_up_to_the_last_cache_point_before_the_first_variable_is_byte_identical() -> None:
    template = _request({"system": CHAT.system, "messages": CHAT.messages})
    marker = '{"cachePoint":{"type":"default"}}'
    cut = template.rindex(marker, 0, template.index("{{")) + len(marker)
    a = _request(CHAT.render({"customer": "Ana", "question": "Where is section 4?"}))
    b = _request(CHAT.render({"customer": "Bo {{question}}", "question": "\U0001F600" * 1000}))
    assert a[:cut] == b[:cut] == template[:cut]
    assert a[cut:] != b[cut:]
    assert list(CHAT.render({"customer": "x", "question": "y"})["system"][0]) == ["text", "zeta", "alpha"]
