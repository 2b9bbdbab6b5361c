"""What ``import hdist`` loads: a metric fitted and searched on plain lists imports none
of the optional libraries."""
import os
import subprocess
import sys

import hdist


def test_import_does_not_pull_optional_dependencies():
    code = ("import sys, hdist\n"
            "m = hdist.Metric('heom').fit([[1.0, 2.0], [3.0, 5.0]])\n"
            "m.kneighbors(None, 1)\n"
            "bad = [k for k in ('pandas', 'pyarrow', 'sklearn', 'polars') "
            "if k in sys.modules]\n"
            "assert not bad, bad\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(hdist.__file__)))
    res = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
