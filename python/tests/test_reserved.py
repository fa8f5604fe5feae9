"""Reserved attributes in the Python client: the list mirrors the Node schema (conformance fixture
test/conformance/fixtures/reserved-attributes.json, run by the Node tests too), a prompt file setting one is refused
by the real sync, and the reader serves a pointer the same with or without control fields in its content (it reads
``rollout`` and ``source_deleted_at`` only from the label items that own them)."""
import json
import os
import subprocess
import tempfile
from typing import Any, Dict, Tuple

import pytest

from cdk_prompt_serving_runtime import PromptClient
from cdk_prompt_serving_runtime.schema import checksum
from cdk_prompt_serving_runtime.schema.reserved import (
    RESERVED_ATTRIBUTE_PREFIXES, RESERVED_ATTRIBUTES, content_attributes, is_reserved_attribute, reserved_attribute_for,
    reserved_attribute_in,
)
from services import NODE_MODULES, REPO, create_serving_table

with open(os.path.join(REPO, "test", "conformance", "fixtures", "reserved-attributes.json"), encoding="utf-8") as f:
    FIXTURE: Dict[str, Any] = json.load(f)


def test_the_list_and_the_prefixes_are_exactly_the_fixtures() -> None:
    assert sorted(RESERVED_ATTRIBUTES) == FIXTURE["attributes"]
    assert list(RESERVED_ATTRIBUTE_PREFIXES) == FIXTURE["prefixes"]


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=lambda c: c["key"])
def test_each_case_names_the_reserved_attribute_a_key_is_or_spells(case: Dict[str, Any]) -> None:
    assert reserved_attribute_for(case["key"]) == case["reserved"]
    assert is_reserved_attribute(case["key"]) is (case["reserved"] is not None)


def test_content_attributes_keep_content_and_drop_every_reserved_name() -> None:
    item = {"text": "Hi", "template_type": "TEXT", "rollout": {}, "expiresAt": 1, "_future": 1, "note": "kept"}
    assert content_attributes(item) == {"text": "Hi", "template_type": "TEXT", "note": "kept"}
    assert reserved_attribute_in(item) == "rollout"


def sync(endpoint: str, table: str, directory: str) -> Tuple[int, Dict[str, Any]]:
    """The REAL sync engine (src/sync, directory source); its exit code (1: a prompt failed) and report."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local", AWS_REGION="us-east-1")
    done = subprocess.run([os.path.join(NODE_MODULES, ".bin", "tsx"), os.path.join(REPO, "test", "conformance", "sync-directory.ts"),
                           endpoint, table, directory], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def attr(value: Any) -> Dict[str, Any]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, list):
        return {"L": [attr(v) for v in value]}
    return {"M": {k: attr(v) for k, v in value.items()}}


def test_a_prompt_file_setting_a_rollout_is_refused_by_the_sync_and_the_reader_keeps_serving_what_it_served(ddb_local: Any) -> None:
    # GIVEN v1 and v2 synced by the real sync
    ddb = ddb_local.client()
    table = create_serving_table(ddb, "py-reserved")
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "greeting.md")
        for text in ["Hello v1 {{name}}", "Hello v2 {{name}}"]:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            assert sync(ddb_local.endpoint, table, directory)[0] == 0
        v1 = ddb.get_item(TableName=table, Key={"prompt_id": {"S": "greeting"}, "version": {"S": "v000001"}})["Item"]
        # WHEN v3's front matter carries a rollout to v1 at 100 %
        with open(path, "w", encoding="utf-8") as f:
            f.write("---\nrollout:\n  rollout_id: sneaky\n  candidate_version: 1\n"
                    f"  candidate_checksum: \"{v1['checksum']['S']}\"\n  percent_bp: 10000\n---\nHello v3 {{{{name}}}}")
        code, report = sync(ddb_local.endpoint, table, directory)
    # THEN the sync refuses it naming the file and the key, and the reader serves v2
    assert code == 1
    refused = [(f["id"], f["reason"].split(":")[0], "`rollout` is reserved" in f["reason"]) for f in report["failures"]]
    assert refused == [("greeting", "greeting.md", True)]
    client = PromptClient(table_name=table, dynamodb_client=ddb_local.client(), l2=False)
    served = client.get_prompt("greeting")
    assert (served.version, served.source_deleted, served.rollout) == (2, False, None)
    ddb.delete_table(TableName=table)


def test_a_pointer_with_control_fields_in_its_content_is_served_like_one_without(ddb_local: Any) -> None:
    # GIVEN two prompts alike but for control fields written by hand into one's CURRENT, and a label on each
    ddb = ddb_local.client()
    table = create_serving_table(ddb, "py-reserved")
    content = {"template_type": "TEXT", "text": "Hello {{name}}", "input_variables": ["name"]}
    hostile = {"rollout": {"rollout_id": "r", "candidate_version": 1, "candidate_checksum": checksum(content), "percent_bp": 10000},
               "source_deleted_at": "2026-01-01T00:00:00Z"}
    for prompt_id, extra in [("clean", {}), ("dirty", hostile)]:
        meta = {"prompt_id": prompt_id, "version_number": 2, "checksum": checksum(content), "source": "test", "schema_version": 2}
        for key, more in [("v000002", {}), ("CURRENT", {"status": "ACTIVE", "latest_version_number": 2, **extra}),
                          ("LABEL#production", {"status": "ACTIVE", "label": "production", "moved_at": "2026-12-01T18:00:00.000Z", "moved_by": "x"})]:
            ddb.put_item(TableName=table, Item={k: attr(v) for k, v in {**content, **meta, "version": key, **more}.items()})
    client = PromptClient(table_name=table, dynamodb_client=ddb_local.client(), l2=False)
    # WHEN / THEN
    for read in [lambda i: client.get_prompt(i), lambda i: client.get_prompt(i, label="production", stickiness_key="alice")]:
        clean, dirty = read("clean"), read("dirty")
        assert (dirty.version, dirty.source_deleted, dirty.rollout, dirty.label) == (clean.version, clean.source_deleted, clean.rollout, clean.label)
        assert (dirty.version, dirty.source_deleted, dirty.rollout) == (2, False, None)
    ddb.delete_table(TableName=table)
