"""Regenerate the Weka IBk leave-one-out fixtures of tests/test_weka_ties.py.

Source: Weka 3.6.14 (Debian package ``weka``), ``weka.classifiers.lazy.IBk`` with its default
``EuclideanDistance`` (range normalization, Weka's missing-value rule, ties at the k-th
distance included).  For each dataset of the shared data folder and each k, every instance is
classified by an IBk built on all the others (``WekaLoo.java``); the predicted labels are
written to ``loo_<dataset>_k<k>.csv``.  The ARFF given to Weka lists the class values in
sorted order, so that Weka's first-maximum rule picks the smallest label, as hdist does.

    python tests/weka/make_fixtures.py        # needs java, javac and /usr/share/java/weka.jar
"""
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from datadir import DATA_DIR  # noqa: E402

DATASETS = ["weather.nominal", "weather.numeric", "Zoo", "iris", "credit-a", "german"]
KS = [1, 3]
WEKA = "/usr/share/java/weka.jar"


def _quote(v):
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"


def to_arff(name, out):
    schema = json.loads((DATA_DIR / (name + ".schema.json")).read_text())
    with open(DATA_DIR / (name + ".csv"), newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = [r for r in reader if r]
    cols = {c["name"]: c for c in schema["columns"]}
    cls = schema["class"]
    order = [h for h in header if h != cls] + [cls]
    idx = [header.index(h) for h in order]
    with open(out, "w") as fh:
        fh.write("@relation %s\n" % _quote(name))
        for h in order:
            info = cols[h]
            if info["type"] in ("numeric", "integer"):
                fh.write("@attribute %s numeric\n" % _quote(h))
            elif info["type"] == "ordinal":
                fh.write("@attribute %s numeric\n" % _quote(h))   # its rank, as hdist reads it
            else:
                vals = sorted(set(r[header.index(h)] for r in rows) - {""})
                fh.write("@attribute %s {%s}\n" % (_quote(h), ",".join(_quote(v) for v in vals)))
        fh.write("@data\n")
        for r in rows:
            cells = []
            for h, i in zip(order, idx):
                v = r[i]
                if v == "":
                    cells.append("?")
                elif cols[h]["type"] == "ordinal":
                    cells.append(str(cols[h]["levels"].index(v)))
                elif cols[h]["type"] in ("numeric", "integer"):
                    cells.append(v)
                else:
                    cells.append(_quote(v))
            fh.write(",".join(cells) + "\n")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["javac", "-cp", WEKA, "-d", tmp, str(HERE / "WekaLoo.java")], check=True)
        for name in DATASETS:
            arff = Path(tmp) / (name + ".arff")
            to_arff(name, arff)
            for k in KS:
                res = subprocess.run(["java", "-cp", WEKA + ":" + tmp, "WekaLoo", str(arff),
                                      str(k)], check=True, capture_output=True, text=True)
                target = HERE / ("loo_%s_k%d.csv" % (name, k))
                target.write_text("index,prediction\n" + res.stdout)
                print(target.name, len(res.stdout.splitlines()), "instances")


if __name__ == "__main__":
    main()
