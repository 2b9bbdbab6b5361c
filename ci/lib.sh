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
