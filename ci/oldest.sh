#!/usr/bin/env bash
# The oldest supported environment: CPython 3.10 with every dependency at the minimum
# pyproject.toml declares, pinned exactly (with the packages they bring) in
# ci/constraints-oldest.txt.  hdist is built once the way pip builds it (an isolated build
# against numpy >= 2.0, whose headers make modules that run on numpy 1.25), installed with
# the pins into a fresh virtual environment, and the whole suite runs against that
# install -- never against the source tree.
#
#   bash ci/oldest.sh     PYTHON makes the environment (default: python3.10 when it
#                         runs, else pyenv's newest 3.10)
#
# HDIST_DATA points to the real datasets (default: shared/data beside the repository;
# required: the tests marked needs_data run here);
# PYTEST_ARGS adds pytest arguments.  Needs network access to PyPI.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if python3.10 -c "" >/dev/null 2>&1; then     # (a pyenv shim may be there and fail)
    PY=python3.10
  else
    PY=$(printf '%s\n' "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python | sort -V | tail -1)
    [ -x "$PY" ] || { echo "no python3.10 on PATH nor under pyenv; set PYTHON" >&2; exit 1; }
  fi
fi
"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' ||
  { echo "$PY is not Python 3.10 (the pins are for 3.10)" >&2; exit 1; }
PINS=$ROOT/ci/constraints-oldest.txt
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hdist-oldest.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)
step() { echo "== $* ($(($(date +%s) - START)) s)"; }

# shellcheck source=ci/lib.sh
. "$ROOT/ci/lib.sh"
mkdir -p "$WORK/src" "$WORK/dist" "$WORK/run"
copy_sources "$ROOT" "$WORK/src"
data_dir "$ROOT"
require_data

step "fresh environment ($PY)"
"$PY" -m venv "$WORK/env"
ENV_PY=$WORK/env/bin/python
"$ENV_PY" -m pip install -q --upgrade pip

READY=$(date +%s)
step "build the wheel (isolated: the build requirements of pyproject.toml, not the pins)"
# The pins go to pip as -c only: pip applies -c to the requirements it installs, never to
# an isolated build environment (before pip 26.2 PIP_CONSTRAINT did reach it, and
# numpy==1.25.0 there would defeat the build's numpy>=2.0).
"$ENV_PY" -m pip wheel -v --no-deps -w "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 ||
  { tail -50 "$WORK/build.log"; exit 1; }
BUILT=$(date +%s)
WHEEL=$(ls "$WORK"/dist/hdist-*.whl)
BUILD_NUMPY=$(grep -o "Successfully installed .*" "$WORK/build.log" | grep -o "numpy-[0-9][^ ]*" | head -1)
echo "built against ${BUILD_NUMPY:-an unknown numpy} in $((BUILT - READY)) s"
case "$BUILD_NUMPY" in
  numpy-[2-9]*) ;;
  *) echo "the isolated build did not get numpy >= 2.0" >&2; exit 1 ;;
esac

step "install the wheel with the oldest pins"
"$ENV_PY" -m pip install -q -c "$PINS" "${WHEEL}[test]"
"$ENV_PY" -m pip check
# every pin is what got installed (a pin of a package nothing requires would be ignored)
"$ENV_PY" - "$PINS" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version

bad = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, want = line.split("==")
    try:
        got = version(name)
    except PackageNotFoundError:
        got = "not installed"
    if got != want:
        bad.append("%s: pinned %s, %s" % (name, want, got))
if bad:
    sys.exit("installed versions differ from ci/constraints-oldest.txt:\n  " + "\n  ".join(bad))
EOF
INSTALLED=$(date +%s)
print_versions "$ENV_PY"

step "the whole suite against the installed wheel"
test_installed "$WORK/env" "$WORK/src" "$WORK/run"
END=$(date +%s)
step "done: environment $((READY - START)) s, build $((BUILT - READY)) s, install $((INSTALLED - BUILT)) s, tests $((END - INSTALLED)) s"
