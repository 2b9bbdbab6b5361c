#!/usr/bin/env bash
# Build the compiled kernels in a throwaway copy of the source tree and run the kernel and
# tree tests against that build.  The developer's in-place build is never touched.
#
#   bash ci/sanitize.sh asan    AddressSanitizer + UndefinedBehaviorSanitizer
#                               (HDIST_SANITIZE=1, -fsanitize=address,undefined), run with
#                               libasan preloaded into the (uninstrumented) interpreter
#   bash ci/sanitize.sh debug   bounds-checked Cython (HDIST_DEBUG=1: boundscheck,
#                               initializedcheck, -O0 -g); an index error inside a nogil
#                               kernel is reported as an unraisable exception, which
#                               fails the run
#
# Environment: PYTHON (default python3) must have numpy, pytest, hypothesis, pandas and
# scikit-learn; Cython, setuptools and numpy are brought up to the build requirements.  PYTEST_ARGS adds
# pytest arguments, SANITIZE_TESTS replaces the selection (the modules marked sanitize) by
# a list of test files or folders, HDIST_DATA points to
# the real datasets (default: shared/data beside the repository), KEEP=1 keeps the build
# directory.  Linux/macOS with gcc or clang.
set -euo pipefail

MODE=${1:-asan}
case "$MODE" in
  asan|debug) ;;
  *) echo "usage: $0 asan|debug" >&2; exit 2 ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hdist-$MODE.XXXXXX")
if [ "${KEEP:-0}" != 1 ]; then
  trap 'rm -rf "$WORK"' EXIT
fi
START=$(date +%s)

# -- a clean copy of the sources --------------------------------------------------------
# shellcheck source=ci/lib.sh
. "$ROOT/ci/lib.sh"
copy_sources "$ROOT" "$WORK"
data_dir "$ROOT"

# -- build ----------------------------------------------------------------------------
# pyproject.toml's build requirements (an interpreter's bundled setuptools is older than 77,
# which reads the SPDX license string as invalid); pip leaves satisfied ones alone
"$PY" -m pip install -q "Cython>=3.0" "setuptools>=77" "numpy>=2.0"
cd "$WORK"
if [ "$MODE" = asan ]; then
  export HDIST_SANITIZE=1
else
  export HDIST_DEBUG=1
fi
"$PY" setup.py -q build_ext --inplace --build-temp "$WORK/build" >"$WORK/build.log" 2>&1 ||
  { cat "$WORK/build.log"; exit 1; }
BUILT=$(date +%s)

RUN=(env PYTHONPATH="$WORK")
if [ "$MODE" = asan ]; then
  LIBASAN=$(${CC:-gcc} -print-file-name=libasan.so)
  [ -e "$LIBASAN" ] || { echo "libasan.so not found (gcc -print-file-name)" >&2; exit 1; }
  # CPython keeps objects alive until exit by design: leak reports would be noise.
  # allocator_may_return_null: an impossible allocation is a MemoryError, as without ASan
  export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:abort_on_error=1:${ASAN_OPTIONS:-}
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}
  RUN+=(LD_PRELOAD="$LIBASAN")
else
  # the 2^31-element scan of tests/kernels/test_memory.py takes minutes at -O0
  RUN+=(HDIST_SKIP_HUGE_INDEX=1)
fi

# the tests must import this build, not an installed or in-place one
HERE=$("${RUN[@]}" "$PY" -c "import os, hdist._kernels as k; print(os.path.dirname(k.__file__))")
if [ "$HERE" != "$WORK/hdist/_kernels" ]; then
  echo "hdist imported from $HERE instead of the $MODE build in $WORK" >&2
  exit 1
fi

# -- run ------------------------------------------------------------------------------
print_versions "$PY"
# the modules marked sanitize: the kernels (every brute-force path, the matrix-product
# filter and the inverted lists' scan), the trees, and the robustness suites that feed them
# hostile inputs, threads and signals
# (collected from the modules that carry the mark: collecting every module would import
# libraries this stage does not test, and matplotlib's extensions abort at import under
# AddressSanitizer's preloaded runtime)
SELECT=(-m sanitize)
mapfile -t TESTS < <(grep -rl --include='test_*.py' "pytest.mark.sanitize" tests | sort)
[ "${#TESTS[@]}" -gt 0 ] || { echo "no test module is marked sanitize" >&2; exit 1; }
if [ -n "${SANITIZE_TESTS:-}" ]; then
  SELECT=()
  read -ra TESTS <<<"$SANITIZE_TESTS"
fi
for t in "${TESTS[@]}"; do
  [ -e "$t" ] || { echo "missing $t" >&2; exit 1; }
done
# shellcheck disable=SC2086  # PYTEST_ARGS is split on purpose
"${RUN[@]}" "$PY" -m pytest -q -x -p no:cacheprovider \
  -W error::pytest.PytestUnraisableExceptionWarning ${PYTEST_ARGS:-} ${SELECT[@]+"${SELECT[@]}"} \
  "${TESTS[@]}"
END=$(date +%s)
echo "ci/sanitize.sh $MODE: build $((BUILT - START)) s, tests $((END - BUILT)) s"
