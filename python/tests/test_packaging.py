"""The wheel builds offline with Debian's tools (python3-build, python3-setuptools, python3-wheel) and works."""
import os
import re
import subprocess
import sys
import zipfile
from typing import Any

import pytest

PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def _have_build_tools() -> bool:
    try:
        import build  # noqa: F401
        import setuptools  # noqa: F401
        import wheel  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _have_build_tools() and not os.environ.get("CI"), reason="python3-build/-setuptools/-wheel not installed")
def test_the_wheel_builds_offline_and_imports(tmp_path: Any) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(tmp_path), PYTHON_DIR],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    wheels = [f for f in os.listdir(tmp_path) if f.endswith(".whl")]
    assert len(wheels) == 1 and wheels[0].startswith("cdk_prompt_serving_runtime-0.1.0-py3-none-any")
    path = os.path.join(tmp_path, wheels[0])
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
        metadata = whl.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for module in ["__init__", "client", "errors", "prompt", "options", "lru", "store", "catalog", "stats", "l2", "valkey",
                   "iam_token", "ddb_codec", "schema/__init__", "schema/keys", "schema/checksum", "schema/catalog",
                   "schema/env", "schema/l2"]:
        assert f"cdk_prompt_serving_runtime/{module}.py" in names
    assert "cdk_prompt_serving_runtime/py.typed" in names
    assert not any("tests/" in n for n in names)
    assert "Requires-Python: >=3.9" in metadata
    assert re.search(r"^Requires-Dist: boto3 ?\(?>=1\.26\)?$", metadata, re.M), metadata
    assert re.search(r"^Requires-Dist: redis ?\(?>=4\.3\)? ?; extra == ['\"]valkey['\"]$", metadata, re.M), metadata
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import cdk_prompt_serving_runtime as m; "
             "assert m.__file__.startswith(sys.argv[1]), m.__file__; print(m.PromptClient.__name__)")
    ran = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True, cwd=str(tmp_path))
    assert ran.returncode == 0 and ran.stdout.strip() == "PromptClient", ran.stderr
