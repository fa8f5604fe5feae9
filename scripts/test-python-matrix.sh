#!/usr/bin/env bash
# The Python runtime client (python/) on PyPI's libraries. Its pytest suite runs:
#   - under Debian's interpreter with apt's boto3 1.26 / botocore 1.29 / redis-py 4.3 (`test:python`, not here);
#   - in a venv at the floors python/pyproject.toml declares (boto3, botocore, redis-py);
#   - in a venv at the newest releases PyPI serves (resolved when the venv is made);
# then `mypy --strict` over the package (it ships py.typed), and `pip install` of its wheel into an empty venv.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python-venv.sh

# The floors, read from pyproject.toml so the two cannot drift: "boto3>=1.26" → boto3==1.26.0.
floors=$("$PYTHON" - <<'PY'
import re, tomllib
project = tomllib.load(open("python/pyproject.toml", "rb"))["project"]
specs = project["dependencies"] + project["optional-dependencies"]["valkey"]
pins = []
for spec in specs:
    name, floor = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", spec).groups()
    pins.append(f"{name}=={floor}" + ".0" * (2 - floor.count(".")))
print(" ".join(pins))
PY
)
test_tools=("pytest==9.2.0" "build==1.3.0" "setuptools" "wheel")

run_suite() {
  local name=$1
  "$VENVS/$name/bin/python" -c 'import importlib.metadata as m, sys; print("'"$name"': python", sys.version.split()[0], *(f"{p} {m.version(p)}" for p in ["boto3", "botocore", "redis"]))'
  "$VENVS/$name/bin/python" -m pytest python/tests -q -p no:cacheprovider
}

# shellcheck disable=SC2086
ensure_venv client-floor $floors "${test_tools[@]}"
run_suite client-floor

ensure_venv client-newest boto3 botocore redis "${test_tools[@]}" "mypy==1.19.1"
run_suite client-newest

echo "== ruff (python/pyproject.toml)"
scripts/lint-python.sh

echo "== mypy --strict python/cdk_prompt_serving_runtime"
(cd python && "../$VENVS/client-newest/bin/python" -m mypy --strict --config-file pyproject.toml -p cdk_prompt_serving_runtime)

echo "== mypy --strict on the typed-prompt stubs (cdk-prompt-serving types --python)"
# npm test's jest run comes before this venv exists on a fresh machine, so it skips these; here they must run
# (default reporter only: junit.xml keeps the whole suite's report, which CI's closing line reads).
PROMPT_SERVING_REQUIRE_MYPY=1 npx jest test/runtime/render-types.test.ts --ci --coverage=false --reporters=default -t 'mypy'

echo "== the client's wheel into an empty venv"
rm -rf .tmp/client-wheel "$VENVS/client-install"
"$VENVS/client-newest/bin/python" -m build --no-isolation --wheel --outdir .tmp/client-wheel python >.tmp/client-wheel.log 2>&1 || { tail -20 .tmp/client-wheel.log; exit 1; }
"$PYTHON" -m venv "$VENVS/client-install"
wheel=$(ls .tmp/client-wheel/cdk_prompt_serving_runtime-*.whl)
"$VENVS/client-install/bin/pip" install "${PIP_FLAGS[@]}" "$wheel[valkey]"
"$VENVS/client-install/bin/pip" check
(cd /tmp && "$OLDPWD/$VENVS/client-install/bin/python" - <<'PY'
import importlib.resources, cdk_prompt_serving_runtime as runtime
assert "site-packages" in runtime.__file__, runtime.__file__
assert importlib.resources.files(runtime).joinpath("py.typed").is_file(), "py.typed missing from the wheel"
from cdk_prompt_serving_runtime import PromptClient  # noqa: F401
import redis  # the [valkey] extra
print("installed wheel:", runtime.__file__)
PY
)
echo "test-python-matrix: done in ${SECONDS} s"
