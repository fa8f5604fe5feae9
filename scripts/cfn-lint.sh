#!/usr/bin/env bash
# cfn-lint from PyPI over every template the tests synthesized into $PROMPT_SERVING_TEMPLATE_DIR
# (.tmp/templates: ts-* from jest via test/support/template-dump.ts, python-* and java-* from the app tests) and
# the integ app (test/prompt-serving.integ.ts), synthesized here. Rules left out, each with its reason:
# .cfnlintrc.yaml. Any error or warning fails; each kind of template must be present (no vacuous pass).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python-venv.sh

dir=$(realpath -m "${PROMPT_SERVING_TEMPLATE_DIR:-.tmp/templates}")
mkdir -p "$dir"
echo "== the integ app (test/prompt-serving.integ.ts)"
rm -rf .tmp/integ.out "$dir"/integ-*.template.json
CDK_OUTDIR=.tmp/integ.out npx tsx test/prompt-serving.integ.ts
for template in .tmp/integ.out/*.template.json; do cp "$template" "$dir/integ-$(basename "$template")"; done

for kind in ts python java integ; do
  count=$(find "$dir" -name "$kind-*.template.json" | wc -l)
  [ "$count" -gt 0 ] || { echo "no $kind-* template in $dir: did its test run with PROMPT_SERVING_TEMPLATE_DIR set?" >&2; exit 1; }
  echo "$kind: $count template(s)"
done

ensure_venv cfn-lint "cfn-lint==1.58.0"
echo "== cfn-lint $("$VENVS/cfn-lint/bin/cfn-lint" --version | awk '{print $2}') over $(find "$dir" -name '*.template.json' | wc -l) templates"
# Two processes (the machine's cores); any finding above informational exits non-zero.
find "$dir" -name '*.template.json' -print0 | sort -z \
  | xargs -0 -n 40 -P 2 "$VENVS/cfn-lint/bin/cfn-lint" --config-file .cfnlintrc.yaml --format parseable --non-zero-exit-code warning --
echo "cfn-lint: no error or warning"
echo "cfn-lint: done in ${SECONDS} s"
