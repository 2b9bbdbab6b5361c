#!/usr/bin/env bash
# Build the documentation as CI checks it, in the active virtual environment where hdist
# is already installed (the quick start's: installing the "docs" extra with pip install -e
# would compile the extension again, so only the extra's requirements are installed):
#
#   1. the HTML site with warnings as errors, hdist's own cross-references checked
#      (nitpicky) and the gallery run (docs/examples/plot_*.py, bundled datasets only);
#   2. the code examples of the pages and of every docstring the API pages show
#      (sphinx.ext.doctest);
#   3. the links between the built pages, anchors included (ci/check_html_links.py;
#      links to other sites are left out: CI has no network);
#   4. the README's Python examples, run in order in one namespace.
#
#   bash ci/docs.sh               OUT (default: docs/_build) receives html/ and doctest/
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/docs/_build}
START=$(date +%s)
step() { echo "== $* ($(($(date +%s) - START)) s)"; }
cd "$ROOT"

step "the docs extra's requirements (hdist itself is not reinstalled)"
REQS=$(mktemp)
python - <<'PY' > "$REQS"
import re
text = open("pyproject.toml").read()
block = re.search(r"^docs = \[(.*?)\]", text, re.M | re.S).group(1)
print("\n".join(re.findall(r'"([^"]+)"', block)))
PY
python -m pip install -q -r "$REQS"
rm -f "$REQS"
python -c "import hdist; print('hdist', hdist.__version__, 'from', hdist.__file__)"

# a fresh build every time: the gallery and the API pages are generated again
rm -rf "$OUT" docs/auto_examples docs/api/generated docs/sg_execution_times.rst
export MPLBACKEND=Agg
step "HTML, warnings as errors, the gallery run"
python -m sphinx -W --keep-going -b html docs "$OUT/html"
step "code examples (doctest)"
# (the gallery ran in the HTML build: not again here)
python -m sphinx -W --keep-going -D plot_gallery=0 -b doctest docs "$OUT/doctest"
step "links between the pages"
python ci/check_html_links.py "$OUT/html"
step "the README's links to files and its Python examples"
python - <<'PY'
import os, re
readme = open("README.md").read()
broken = [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
          if "://" not in t and not os.path.exists(t)]
if broken:
    raise SystemExit("README.md links to missing files: %s" % ", ".join(broken))
blocks = re.findall(r"^```python\n(.*?)^```", readme, re.M | re.S)
namespace = {}
for code in blocks:
    exec(compile(code, "README.md", "exec"), namespace)
print("%d block(s) run" % len(blocks))
PY
step "done: $OUT/html/index.html"
