#!/usr/bin/env bash
# The Python CDK app test (test/apps/python), as a Python team would consume the construct:
#   1. the construct's wheel from projen's standard Python packaging (`projen package:python` = jsii-pacmak);
#   2. a virtual environment with aws-cdk-lib and constructs at the lowest versions the peer ranges allow,
#      cdk-nag and pytest, and that wheel (`pip check` must agree with its declared dependencies);
#   3. pytest over the README's examples in their Python form (test/apps/python/readme_examples.py, generated from
#      jsii-rosetta's translations and checked up to date here), writing each template for cfn-lint.
# Needs a compiled .jsii and .jsii.tabl.json (`npx projen compile && npx projen post-compile`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python-venv.sh

test -f .jsii -a -f .jsii.tabl.json || { echo "no .jsii/.jsii.tabl.json: run \`npx projen compile && npx projen post-compile\`" >&2; exit 1; }
npx tsx scripts/readme-examples.ts --check

cdk_version=$(range_floor "peerDependencies['aws-cdk-lib']")
constructs_version=$(range_floor "peerDependencies.constructs")
nag_version=$(range_floor "devDependencies['cdk-nag']")

echo "== the construct's wheel (projen package:python)"
rm -rf dist/python
npx projen package:python >.tmp/package-python.log 2>&1 || { tail -30 .tmp/package-python.log; exit 1; }
wheel=$(ls dist/python/cdk_prompt_serving-*-py3-none-any.whl)

cdk_wheel=$(cdk_lib_wheel "$cdk_version")
ensure_venv cdk-app "$cdk_wheel" "constructs==$constructs_version" "cdk-nag==$nag_version" "pytest==9.2.0"
"$VENVS/cdk-app/bin/pip" install "${PIP_FLAGS[@]}" --no-deps --force-reinstall "$wheel"
"$VENVS/cdk-app/bin/pip" check
"$VENVS/cdk-app/bin/python" -c 'import importlib.metadata as m; print("python app:", *(f"{p} {m.version(p)}" for p in ["aws-cdk-lib", "constructs", "cdk-nag", "jsii", "cdk-prompt-serving"]))'

echo "== pytest test/apps/python"
export PROMPT_SERVING_TEMPLATE_DIR=$(realpath -m "${PROMPT_SERVING_TEMPLATE_DIR:-.tmp/templates}")
rm -f "$PROMPT_SERVING_TEMPLATE_DIR"/python-*.template.json
# NodejsFunction bundles the examples' reader with the project's esbuild (no Docker).
cd test/apps
PATH="$OLDPWD/node_modules/.bin:$PATH" "$OLDPWD/$VENVS/cdk-app/bin/python" -m pytest python -q -p no:cacheprovider
echo "test-python-app: done in ${SECONDS} s"
