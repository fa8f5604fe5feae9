#!/usr/bin/env bash
# The construct's Python distribution, built offline: no PyPI, only Debian's build tools
# (python3-build, python3-wheel, python3-setuptools) and Debian's interpreter, /usr/bin/python3.
#   1. jsii-rosetta translates the README and docstring examples (TypeScript → Python) into .jsii.tabl.json;
#   2. jsii-pacmak generates the Python package from .jsii with those translations (--code-only: no pip);
#   3. python3 -m build makes the wheel without an isolated environment (which would need PyPI).
# Needs a compiled .jsii (`npx projen compile`). Output: dist/python-wheel/cdk_prompt_serving-*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
test -f .jsii || { echo "no .jsii: run \`npx projen compile\` first" >&2; exit 1; }
npx jsii-rosetta extract --compile --fail
rm -rf dist/python dist/python-wheel
npx jsii-pacmak --target python --code-only --outdir dist --rosetta-tablet .jsii.tabl.json --rosetta-unknown-snippets=fail
/usr/bin/python3 -m build --no-isolation --skip-dependency-check --wheel --outdir dist/python-wheel dist/python
ls dist/python-wheel/*.whl
