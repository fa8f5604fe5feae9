#!/usr/bin/env bash
# Ruff over the Python code, with the settings in python/pyproject.toml ([tool.ruff]), from a venv (.tmp/venvs/ruff).
# The tests and benches for now; the package (python/cdk_prompt_serving_runtime) passes the same rules and joins the
# list once its restructuring has landed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python-venv.sh

ensure_venv ruff "ruff==0.17.6"
"$VENVS/ruff/bin/ruff" check --config python/pyproject.toml python/tests bench/python
