#!/usr/bin/env bash
# test:unit synthesizes the construct with the bundled Lambda assets but never builds them (the Python layer fetches
# redis-py from PyPI, and the unit lane needs no network): fail at once, naming the fix, when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
for asset in assets/sync/sync.lambda/index.js assets/layer/python assets/layer/nodejs; do
  if [ ! -e "$asset" ]; then
    echo "test:unit synthesizes the bundled assets ($asset is missing): run npx projen bundle once" >&2
    exit 1
  fi
done
