# Shared helpers of the ci/ scripts (sourced, not run).

# copy_sources ROOT DEST: the files of the source tree at ROOT (tracked and new ones,
# nothing git ignores: no build products) into DEST.
copy_sources() {
  local root=$1 dest=$2
  if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$root" && git ls-files -z --cached --others --exclude-standard |
       while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
       tar --null -T - -cf -) | tar -xf - -C "$dest"
  else
    cp -R "$root/." "$dest/"
    rm -rf "$dest/build" "$dest/dist" "$dest"/hdist/_kernels/*.so "$dest"/hdist/_kernels/*.pyd \
      "$dest"/hdist/_kernels/*.c
  fi
}

# data_dir ROOT: export HDIST_DATA (the real datasets the tests read) when it is unset
# and shared/data sits beside the repository.
data_dir() {
  if [ -z "${HDIST_DATA:-}" ] && [ -d "$1/../shared/data" ]; then
    HDIST_DATA=$(cd "$1/../shared/data" && pwd)
    export HDIST_DATA
  fi
}

# require_data: fail unless HDIST_DATA names a folder (a stage that runs the tests marked
# needs_data must have the data: with HDIST_DATA set they fail rather than skip without it).
require_data() {
  if [ -z "${HDIST_DATA:-}" ] || [ ! -d "$HDIST_DATA" ]; then
    echo "no data folder for the needs_data tests: set HDIST_DATA (or put shared/data" \
         "beside the repository)" >&2
    return 1
  fi
}

# test_installed ENV SRC RUN: the suite of the source copy SRC (its tests/, the examples
# they run and pyproject.toml, copied into the empty folder RUN) run from RUN by the virtual
# environment ENV, against the hdist installed there -- refused when it imports hdist from
# anywhere else.  PYTEST_ARGS adds pytest arguments.
test_installed() {
  local env=$1 src=$2 run=$3 where
  cp -R "$src/tests" "$run/tests"
  # tests/test_examples_*.py run the examples beside them; test_bench_ann.py runs
  # benchmarks/bench_ann.py (with the helpers it imports from its folder) on a small table
  # (it skips where benchmarks/ is absent: cibuildwheel's test jobs)
  cp -R "$src/examples" "$run/examples"
  cp -R "$src/benchmarks" "$run/benchmarks"
  # pyproject.toml for pytest's settings alone (deprecation warnings are errors)
  cp "$src/pyproject.toml" "$run/"
  where=$(cd "$run" && "$env/bin/python" -c \
    "import os, hdist._kernels as k; print(os.path.dirname(k.__file__))")
  case "$where" in
    "$env/"*) ;;
    *) echo "hdist imported from $where, not from the installed wheel" >&2; return 1 ;;
  esac
  # shellcheck disable=SC2086  # PYTEST_ARGS is split on purpose
  (cd "$run" && "$env/bin/python" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-} tests)
}

# find_python [newest|3.X]: the path of an interpreter -- "newest": the newest CPython 3 of
# this machine (on PATH as python3.N, or installed by pyenv); "3.X": that version.  Fails
# with a message when there is none.
find_python() {
  local want=${1:-newest} cands=() c v best="" bestv=0
  for c in python3.{9..20} /root/.pyenv/versions/3.*/bin/python "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python; do
    command -v "$c" >/dev/null 2>&1 || continue
    # a pyenv shim of a version that is not selected answers with an error: skip it
    v=$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
    if [ "$want" = newest ]; then
      if [ "${v#3.}" -gt "$bestv" ]; then bestv=${v#3.}; best=$(command -v "$c"); fi
    elif [ "$v" = "$want" ]; then
      command -v "$c"; return 0
    fi
  done
  if [ -n "$best" ]; then echo "$best"; return 0; fi
  echo "no Python $want found on PATH or under pyenv" >&2
  return 1
}

# print_versions PYTHON: the interpreter and the versions of hdist's dependencies it
# imports, for the log of each stage.
print_versions() {
  "$1" - <<'PY'
import platform, sys
from importlib import metadata
names = ["hdist", "numpy", "pandas", "scikit-learn", "scipy", "threadpoolctl", "pyarrow",
         "polars", "dask", "distributed", "matplotlib", "tqdm", "pytest", "hypothesis", "Cython"]
found = []
for n in names:
    try:
        found.append("%s %s" % (n, metadata.version(n)))
    except metadata.PackageNotFoundError:
        pass
print("== Python %s (%s) at %s" % (platform.python_version(), platform.machine(), sys.executable))
print("== " + ", ".join(found))
PY
}
