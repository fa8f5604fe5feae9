# Sourced by the scripts that need PyPI packages (test-python-app.sh, test-python-matrix.sh, cfn-lint.sh).
# Virtual environments live under .tmp/venvs (ignored), are made with Debian's interpreter (/usr/bin/python3,
# needs python3-venv) and are re-created only when their requirement list changes, so a second run installs nothing.

PYTHON=${PROMPT_SERVING_PYTHON:-/usr/bin/python3}
VENVS=.tmp/venvs
PIP_FLAGS=(--disable-pip-version-check --no-input -q)

# ensure_venv NAME REQUIREMENT...: .tmp/venvs/NAME holding exactly REQUIREMENT... (pip's syntax, or wheel paths).
ensure_venv() {
  local name=$1; shift
  local dir=$VENVS/$name
  local wanted="$*"
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.requirements" 2>/dev/null)" = "$wanted" ]; then
    return 0
  fi
  echo "== venv $name: $wanted" >&2
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir"
  if [ $# -gt 0 ]; then
    "$dir/bin/pip" install "${PIP_FLAGS[@]}" "$@" >&2
  fi
  printf '%s' "$wanted" > "$dir/.requirements"
}

# The version a package.json range starts at: `^2.276.0` → 2.276.0 (the lowest version the range allows).
range_floor() {
  node -p "require('./package.json').$1.replace(/^[^0-9]*/, '')"
}

# cdk_lib_wheel VERSION: prints the path of an aws-cdk-lib wheel at exactly VERSION. PyPI's when it serves that
# version; otherwise built by jsii-pacmak (the generator the published wheels come from) from the npm release in
# node_modules, which must be that version. Cached under .tmp/bindings.
cdk_lib_wheel() {
  local version=$1
  local dir=.tmp/bindings/aws-cdk-lib-$version
  local wheel
  wheel=$(ls "$dir"/python/aws_cdk_lib-"$version"-py3-none-any.whl 2>/dev/null || true)
  if [ -n "$wheel" ]; then echo "$wheel"; return 0; fi
  mkdir -p "$dir/python"
  ensure_venv tools
  if "$VENVS/tools/bin/pip" download "${PIP_FLAGS[@]}" --no-deps -d "$dir/python" "aws-cdk-lib==$version" >"$dir/pip-download.log" 2>&1; then
    echo "aws-cdk-lib $version: from PyPI" >&2
  else
    local installed
    installed=$(node -p "require('aws-cdk-lib/package.json').version")
    if [ "$installed" != "$version" ]; then
      echo "aws-cdk-lib $version: PyPI does not serve it and node_modules holds $installed" >&2
      return 1
    fi
    echo "aws-cdk-lib $version: PyPI does not serve it; building its wheel from the npm release with jsii-pacmak" >&2
    npx jsii-pacmak --target python --outdir "$dir" node_modules/aws-cdk-lib >"$dir/pacmak.log" 2>&1 \
      || { tail -20 "$dir/pacmak.log" >&2; return 1; }
  fi
  ls "$dir"/python/aws_cdk_lib-"$version"-py3-none-any.whl
}
