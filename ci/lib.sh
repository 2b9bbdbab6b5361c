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
    rm -rf "$dest/build" "$dest/dist" "$dest"/hdist/*.so "$dest"/hdist/*.pyd \
      "$dest"/hdist/_kernels.c "$dest"/hdist/_trees.c
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

# test_installed ENV SRC RUN: the suite of the source copy SRC (its tests/, the examples
# they run and pyproject.toml, copied into the empty folder RUN) run from RUN by the virtual
# environment ENV, against the hdist installed there -- refused when it imports hdist from
# anywhere else.  PYTEST_ARGS adds pytest arguments.
test_installed() {
  local env=$1 src=$2 run=$3 where
  cp -R "$src/tests" "$run/tests"
  # tests/test_examples_*.py run the examples beside them
  cp -R "$src/examples" "$run/examples"
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
