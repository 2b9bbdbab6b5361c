"""The command line's failure paths: every one exits with its status and message, leaves
nothing under the output's name (no temporary file either) and a previous file there
byte-identical -- a bad input file, a bad value deep in the query file, a write error, an
interrupt (SIGINT, SIGTERM), an output that is an input; and the usage errors found before
any work."""
import os
import resource
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist import cli

from datadir import ROOT
ENV = dict(os.environ, PYTHONPATH=str(ROOT))

N_TRAIN, N_QUERY, BAD_ROW, CHUNK = 2_000, 60_000, 45_000, 5_000
PREVIOUS = b"row,prediction\n0,previous run\n"
FORMATS = ["o.csv", "o.csv.gz", "o.tsv", "o.parquet"]


def read_csv(path, **kw):
    """pandas' CSV reader, reading every float back to the bits written (pandas 3's
    default; pandas 2 parses with a faster, inexact routine unless told)."""
    if int(pd.__version__.split(".")[0]) < 3:
        kw.setdefault("float_precision", "round_trip")
    return pd.read_csv(path, **kw)


def run(argv, capsys):
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A training file, a query file spanning 12 chunks of ``CHUNK`` rows, and the same
    query file with a word in a continuous column at row ``BAD_ROW``."""
    d = tmp_path_factory.mktemp("failures")
    rng = np.random.default_rng(5)

    def frame(n):
        return pd.DataFrame({"size": rng.normal(10, 3, n).round(3),
                             "colour": rng.choice(["red", "green", "blue"], n),
                             "weight": rng.normal(70, 9, n).round(2),
                             "cls": rng.choice(["p", "q"], n)})
    frame(N_TRAIN).to_csv(d / "train.csv", index=False)
    query = frame(N_QUERY).drop(columns="cls")
    query.to_csv(d / "query.csv", index=False)
    query.to_parquet(d / "query.parquet")
    bad = query.astype({"weight": object})
    bad.iloc[BAD_ROW, 2] = "heavy"
    bad.to_csv(d / "bad.csv", index=False)
    return d


def output_in(tmp_path, name, previous=True):
    """``name`` in a folder of its own, holding ``PREVIOUS`` when ``previous``."""
    folder = tmp_path / "out"
    folder.mkdir()
    path = folder / name
    if previous:
        path.write_bytes(PREVIOUS)
    return path


def assert_untouched(path, previous=True):
    """The output's folder holds exactly what it held before the run."""
    assert os.listdir(path.parent) == ([path.name] if previous else []), \
        os.listdir(path.parent)
    if previous:
        assert path.read_bytes() == PREVIOUS


def knn(d, out, query="query.csv", *extra):
    return ["knn", "--train", str(d / "train.csv"), "--query", str(d / query),
            "--target", "cls", "--k", "3", "--chunk-size", str(CHUNK), "-o", str(out)] + \
        list(extra)


# ----------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("name", ["o.csv", "o.parquet"])
@pytest.mark.parametrize("extra,status,match", [
    (["--train", "missing.csv"], 1, "--train file 'missing.csv' does not exist"),
    (["--query", "missing.csv"], 1, "--query file 'missing.csv' does not exist"),
    (["--drop", "colur"], 2, "--drop column(s) 'colur' not in the training file"),
    (["--k", "5000"], 2, "--k 5000 is larger than the 2000 training rows"),
])
def test_a_bad_input_leaves_the_previous_output(name, extra, status, match, files, capsys,
                                                tmp_path):
    out = output_in(tmp_path, name)
    argv = knn(files, out)
    for i in range(0, len(extra), 2):
        if extra[i] in argv:
            argv[argv.index(extra[i]) + 1] = extra[i + 1]
        else:
            argv += extra[i:i + 2]
    got, _, err = run(argv, capsys)
    assert got == status and match in err, err
    assert "nothing written to %r" % str(out) in err
    assert_untouched(out)


@pytest.mark.parametrize("name", FORMATS)
def test_a_bad_value_deep_in_the_query_file_writes_nothing(name, files, capsys, tmp_path):
    out = output_in(tmp_path, name)
    status, _, err = run(knn(files, out, "bad.csv"), capsys)
    assert status == 1
    assert "column 'weight' of the query file" in err and \
        "'heavy' in row %d" % BAD_ROW in err, err
    assert_untouched(out)
    out.unlink()                                    # and without a previous file
    status, _, err = run(knn(files, out, "bad.csv"), capsys)
    assert status == 1
    assert_untouched(out, previous=False)


def test_standard_output_gets_nothing_from_a_failed_job(files, capsys):
    status, out, err = run(knn(files, "-", "bad.csv"), capsys)
    assert status == 1 and "'heavy'" in err
    assert out == ""


def test_a_finished_job_replaces_the_previous_output(files, capsys, tmp_path):
    out = output_in(tmp_path, "o.csv")
    status, _, err = run(knn(files, out), capsys)
    assert status == 0, err
    assert os.listdir(out.parent) == ["o.csv"]
    got = read_csv(out)
    assert len(got) == N_QUERY and list(got.columns[:2]) == ["row", "prediction"]
    status, stdout, err = run(knn(files, "-"), capsys)
    assert status == 0, err
    assert stdout.encode() == out.read_bytes().replace(b"\n", b"\r\n").replace(
        b"\r\r\n", b"\r\n")


# ----------------------------------------------------------------------------------------
# the output is an input


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("which", ["--query", "--train"])
def test_an_output_that_is_an_input_is_refused(how, which, files, capsys, tmp_path):
    train, query = tmp_path / "train.csv", tmp_path / "query.csv"
    train.write_bytes((files / "train.csv").read_bytes())
    query.write_bytes((files / "query.csv").read_bytes()[:20_000].rsplit(b"\n", 1)[0]
                      + b"\n")
    target = query if which == "--query" else train
    before = target.read_bytes()
    out = target
    if how == "symlink":
        out = tmp_path / "link.csv"
        out.symlink_to(target)
    elif how == "hardlink":
        out = tmp_path / "hard.csv"
        os.link(target, out)
    status, _, err = run(["knn", "--train", str(train), "--query", str(query),
                          "--target", "cls", "-o", str(out)], capsys)
    assert status == 2
    assert "--output %r is the %s file %r" % (str(out), which, str(target)) in err, err
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["train.csv", "query.csv"] + ([out.name] if how != "same" else []))


# ----------------------------------------------------------------------------------------
# checks before any input is read


@pytest.mark.parametrize("name", ["o.parquet", "o.csv", "o.csv.gz"])
def test_an_output_into_a_missing_folder_is_refused_first(name, files, capsys, tmp_path):
    out = tmp_path / "nowhere" / name
    # the training file does not exist either: the output is checked before it
    status, _, err = run(["knn", "--train", str(tmp_path / "none.csv"), "--query",
                          str(files / "query.csv"), "-o", str(out)], capsys)
    assert status == 2
    assert "--output %r: the folder %r does not exist" % (str(out), str(out.parent)) in err
    assert not out.parent.exists()


def test_cv_csv_output_is_atomic_and_checked_first(files, capsys, tmp_path):
    out = output_in(tmp_path, "cv.csv")
    status, _, err = run(["cv", "--train", str(files / "train.csv"), "--target", "cls",
                          "--metrics", "heom", "--folds", "3", "--k", "100000",
                          "--csv", str(out)], capsys)
    assert status == 2 and "--k 100000 is larger than" in err
    assert_untouched(out)
    status, _, err = run(["cv", "--train", str(files / "train.csv"), "--target", "cls",
                          "--csv", str(files / "train.csv")], capsys)
    assert status == 2 and "--csv %r is the --train file" % str(files / "train.csv") in err
    status, _, err = run(["cv", "--train", str(files / "train.csv"), "--target", "cls",
                          "--metrics", "heom", "--folds", "3", "--csv", str(out)], capsys)
    assert status == 0, err
    assert list(read_csv(out)["metric"]) == ["heom"]
    assert os.listdir(out.parent) == ["cv.csv"]
    status, _, err = run(["cv", "--train", str(files / "train.csv"), "--target", "cls",
                          "--metrics", "heom", "--folds", "3", "--csv",
                          str(tmp_path / "cv.parquet")], capsys)
    assert status == 0, err
    as_csv, as_parquet = read_csv(out), pd.read_parquet(tmp_path / "cv.parquet")
    assert list(as_parquet.columns) == list(as_csv.columns)
    for c in ("metric", "dataset", "accuracy", "kappa", "confusion"):
        assert as_parquet[c].tolist() == as_csv[c].tolist()
    status, _, err = run(["cv", "--datasets", "iris", "--csv", str(tmp_path / "cv.txt")],
                         capsys)
    assert status == 2 and "--csv %r: cannot write '.txt' files" % str(tmp_path / "cv.txt") \
        in err, err


@pytest.mark.parametrize("command", ["knn", "cv"])
def test_n_jobs_zero_is_a_usage_error_before_any_work(command, capsys, tmp_path):
    argv = [command, "--train", str(tmp_path / "none.csv"), "--target", "cls",
            "--n-jobs", "0"]
    if command == "knn":
        argv += ["--query", str(tmp_path / "none.csv")]
    status, _, err = run(argv, capsys)
    assert status == 2 and "--n-jobs must be a positive count" in err, err


def test_cv_k_beyond_the_training_folds_is_a_usage_error(files, capsys):
    status, out, err = run(["cv", "--train", str(files / "train.csv"), "--target", "cls",
                            "--k", "1000000000", "--metrics", "heom"], capsys)
    assert status == 2
    assert "--k 1000000000 is larger than the 1800 training rows" in err, err
    assert out == ""                # no table of "--" cells
    status, _, err = run(["cv", "--datasets", "iris", "--k", "136"], capsys)
    assert status == 2 and "iris" in err and "135 training rows" in err


def test_deeply_nested_param_is_a_usage_error(files, capsys, tmp_path):
    status, _, err = run(knn(files, tmp_path / "o.csv", "query.csv", "--param",
                             "weights=" + "[" * 50_000), capsys)
    assert status == 2
    assert "--param weights: the value nests 50000 levels" in err, err
    assert "[" * 33 not in err
    # strings may hold brackets; 32 levels are read
    assert cli.parse_param('w="[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["')[1].startswith("[[")
    deep = cli.parse_param("w=" + "[" * 32 + "]" * 32)[1]
    for _ in range(31):
        deep = deep[0]
    assert deep == []


def test_out_of_memory_is_a_message(files, capsys, tmp_path, monkeypatch):
    def no_memory(*a, **k):
        raise MemoryError("Unable to allocate 9.31 GiB for an array")
    monkeypatch.setattr(cli, "read_table", no_memory)
    out = output_in(tmp_path, "o.csv")
    status, _, err = run(knn(files, out), capsys)
    assert status == 1
    assert err.startswith("hdist knn: error: out of memory: Unable to allocate 9.31 GiB")
    assert "Traceback" not in err
    assert_untouched(out)


# ----------------------------------------------------------------------------------------
# write errors and signals (subprocesses)


def limit_file_size(limit):
    def preexec():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # write() fails with EFBIG
    return preexec


@pytest.mark.parametrize("name", ["o.csv", "o.parquet"])
def test_a_write_error_is_a_message_and_leaves_no_partial_file(name, files, tmp_path):
    out = output_in(tmp_path, name)
    r = subprocess.run([sys.executable, "-m", "hdist"] + knn(files, out),
                       capture_output=True, text=True, env=ENV, timeout=120,
                       preexec_fn=limit_file_size(200_000))
    assert r.returncode == 1, r.stderr
    assert "hdist knn: error: cannot write --output %r: File too large" % str(out) \
        in r.stderr
    assert "Traceback" not in r.stderr
    assert_untouched(out)


def started_writing(folder, name):
    """The temporary file of output ``name`` once it holds data, else None."""
    for f in os.listdir(folder):
        if f.startswith("." + name + ".") and f.endswith(".part") and \
                os.path.getsize(folder / f) > 0:
            return f
    return None


@pytest.mark.parametrize("name", ["o.csv", "o.parquet"])
@pytest.mark.parametrize("sig,status,word", [(signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                             (signal.SIGHUP, 129, "terminated (SIGHUP)"),
                                             (signal.SIGQUIT, 131, "terminated (SIGQUIT)")])
def test_a_signal_mid_job_leaves_the_previous_output(sig, status, word, name, files,
                                                     tmp_path):
    out = output_in(tmp_path, name)
    p = subprocess.Popen([sys.executable, "-m", "hdist"] +
                         knn(files, out, "query.csv", "--n-jobs", "1", "--chunk-size",
                             "2000"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        deadline = time.monotonic() + 60
        while not started_writing(out.parent, name):
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == status, err
    assert "hdist knn: %s; nothing written to %r" % (word, str(out)) in err, err
    assert "Traceback" not in err
    assert_untouched(out)


# ----------------------------------------------------------------------------------------
# messages


@pytest.mark.parametrize("which", ["--train", "--query"])
@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_duplicate_column_names_are_named(which, ext, capsys, tmp_path):
    frame = pd.DataFrame([[1.5, "x", 2.0, "p"], [2.5, "y", 1.0, "q"]] * 5,
                         columns=["a", "b", "c", "cls"])
    good, dup = tmp_path / ("good." + ext), tmp_path / ("dup." + ext)
    twice = frame.set_axis(["a", "b", "a", "cls"], axis=1)
    if ext == "csv":
        frame.to_csv(good, index=False)
        twice.to_csv(dup, index=False)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), good)
        pq.write_table(pa.table([pa.array(twice.iloc[:, j]) for j in range(4)],
                                names=list(twice.columns)), dup)
    files = {"--train": good, "--query": good, which: dup}
    status, _, err = run(["knn", "--train", str(files["--train"]), "--query",
                          str(files["--query"]), "--target", "cls", "--k", "1",
                          "-o", str(tmp_path / "o.csv")], capsys)
    assert status == 1
    assert "the %s file %r names the column 'a' twice (columns 1 and 3" % (which, str(dup)) \
        in err, err
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("reader,ext", [("pyarrow", "csv"), ("pyarrow", "parquet"),
                                        ("pandas", "csv")])
def test_a_header_only_query_file_writes_the_header(reader, ext, files, capsys, tmp_path,
                                                    monkeypatch):
    if reader == "pandas":      # no pyarrow: CSV in and out
        real = cli._have
        monkeypatch.setattr(cli, "_have", lambda m: False if m == "pyarrow" else real(m))
    query = tmp_path / ("empty." + ext)
    read_csv(files / "query.csv", nrows=0).to_csv(query, index=False) if ext == "csv" \
        else pd.read_parquet(files / "query.parquet").iloc[:0].to_parquet(query)
    some = tmp_path / ("some." + ext)
    read_csv(files / "query.csv", nrows=3).to_csv(some, index=False) if ext == "csv" \
        else pd.read_parquet(files / "query.parquet").iloc[:3].to_parquet(some)
    for out_name in ("o.csv", "o.parquet") if reader == "pyarrow" else ("o.csv",):
        outs = {}
        for q in (query, some):
            out = tmp_path / (q.stem + out_name)
            status, _, err = run(["knn", "--train", str(files / "train.csv"), "--query",
                                  str(q), "--target", "cls", "--k", "2", "--predict",
                                  "--proba", "--what", "both", "-o", str(out)], capsys)
            assert status == 0, err
            outs[q] = out
        if out_name == "o.csv":
            header = outs[some].read_text().splitlines()[0]
            assert outs[query].read_text().splitlines() == [header]
            assert header.startswith("row,prediction,proba_p,proba_q,neighbor_1")
        else:
            import pyarrow.parquet as pq
            empty, full = pq.read_table(outs[query]), pq.read_table(outs[some])
            assert empty.num_rows == 0 and full.num_rows == 3
            assert empty.schema.names == full.schema.names


@pytest.mark.parametrize("options,spec", [
    (["--nominal", "all"], {"nominal": "all"}),
    (["--nominal", "colour", "--continuous", "rest"],
     {"nominal": ["colour"], "continuous": "rest"}),
    (["--nominal", "rest", "--continuous", "size"],
     {"nominal": "rest", "continuous": ["size"]}),
])
def test_nominal_and_continuous_take_all_and_rest_as_the_api(options, spec, files, capsys,
                                                             tmp_path):
    train = read_csv(files / "train.csv")
    y = train.pop("cls")
    q = read_csv(files / "query.csv", nrows=500)
    q.to_csv(tmp_path / "q.csv", index=False)
    status, _, err = run(["knn", "--train", str(files / "train.csv"), "--query",
                          str(tmp_path / "q.csv"), "--target", "cls", "--k", "2", "--what",
                          "neighbors", "-o", str(tmp_path / "o.csv")] + options, capsys)
    assert status == 0, err
    m = hdist.Metric("heom", **spec).fit(train, y)
    assert m.kinds_.count("nominal") == (3 if spec["nominal"] == "all" else
                                         1 if spec["nominal"] == ["colour"] else 2)
    dist, ind = m.kneighbors(q, 2)
    got = read_csv(tmp_path / "o.csv")
    np.testing.assert_array_equal(got[["neighbor_1", "neighbor_2"]].to_numpy(), ind)
    np.testing.assert_array_equal(got[["distance_1", "distance_2"]].to_numpy(), dist)


def test_all_goes_alone(files, capsys):
    status, _, err = run(["knn", "--train", str(files / "train.csv"), "--query",
                          str(files / "query.csv"), "--target", "cls", "--nominal",
                          "all,size"], capsys)
    assert status == 2 and "--nominal all names columns by itself" in err


def test_a_field_longer_than_a_read_block(capsys, tmp_path):
    long = "x" * (3 << 20)
    rows = ["a,b,cls"] + ["%d,%s,%s" % (i, long if i == 7 else "t%d" % (i % 3), "pq"[i % 2])
                          for i in range(40)]
    (tmp_path / "tr.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "q.csv").write_text("\n".join(r.rsplit(",", 1)[0] for r in rows) + "\n")
    status, _, err = run(["knn", "--train", str(tmp_path / "tr.csv"), "--query",
                          str(tmp_path / "q.csv"), "--target", "cls", "--k", "1",
                          "--chunk-size", "5", "--continuous", "a",
                          "-o", str(tmp_path / "o.csv")], capsys)
    assert status == 0, err
    got = read_csv(tmp_path / "o.csv")
    assert list(got["neighbor_1"]) == list(range(40))


def test_cv_names_the_columns_of_its_warnings_once(capsys, tmp_path):
    rng = np.random.default_rng(3)
    n = 90
    pd.DataFrame({"size": rng.normal(size=n), "empty": [np.nan] * n,
                  "colour": rng.choice(["r", "g"], n), "cls": rng.choice(["p", "q"], n)}
                 ).to_csv(tmp_path / "t.csv", index=False)
    status, _, err = run(["cv", "--train", str(tmp_path / "t.csv"), "--target", "cls",
                          "--metrics", "heom,hvdm", "--folds", "5", "--continuous",
                          "size,empty"], capsys)
    assert status == 0, err
    lines = [ln for ln in err.splitlines() if "warning" in ln.lower()]
    assert lines == ["hdist cv: warning: t.csv: column 'empty' has no observed value in the "
                     "training data: every training row is missing there (missing='one') "
                     "(in the folds of heom, hvdm)"], err


# ----------------------------------------------------------------------------------------
# output names: long ones, ones that are no regular file; gzip's level


def test_an_output_name_of_255_bytes_is_written(files, capsys, tmp_path):
    for name in ("o" * 251 + ".csv", "x" + "é" * 123 + "x.csv.gz"):   # 255 bytes each
        assert len(os.fsencode(name)) == 255
        out = tmp_path / name
        status, _, err = run(knn(files, out, "query.csv", "--what", "predictions"), capsys)
        assert status == 0, err
        assert os.listdir(tmp_path) == [name]
        got = read_csv(out)
        assert len(got) == N_QUERY and list(got.columns) == ["row", "prediction"]
        out.unlink()


@pytest.mark.parametrize("name", ["o.csv", "o.parquet"])
def test_an_output_that_is_a_fifo_is_refused_first(name, files, capsys, tmp_path):
    out = tmp_path / name
    os.mkfifo(out)
    for train in ("train.csv", "missing.csv"):        # refused before any input is read
        argv = knn(files, out)
        argv[argv.index("--train") + 1] = str(files / train)
        status, _, err = run(argv, capsys)
        assert status == 2, err
        assert "--output %r is not a regular file" % str(out) in err, err
        assert os.listdir(tmp_path) == [name]
        assert stat.S_ISFIFO(os.stat(out).st_mode)


def test_gzip_output_is_written_at_level_6(files, capsys, tmp_path):
    import gzip
    status, _, err = run(knn(files, tmp_path / "o.csv.gz"), capsys)
    assert status == 0, err
    raw = (tmp_path / "o.csv.gz").read_bytes()
    # the header's XFL byte: 2 at level 9, 4 at level 1, 0 between
    assert raw[8] == 0
    status, _, err = run(knn(files, tmp_path / "o.csv"), capsys)
    assert status == 0, err
    assert gzip.decompress(raw) == (tmp_path / "o.csv").read_bytes()


# ----------------------------------------------------------------------------------------
# warnings in the command line's words, once per run


def test_query_warnings_are_printed_once_in_the_command_lines_words(files, tmp_path):
    """Most colours of the query file are unseen: every chunk warns, with other counts."""
    query = read_csv(files / "query.csv", nrows=4 * CHUNK)
    query["colour"] = ["c%d" % (i % 9) for i in range(len(query))]
    query.iloc[CHUNK:, 1] = ["c%d" % (i % 5) for i in range(len(query) - CHUNK)]
    query.to_csv(tmp_path / "q.csv", index=False)
    r = subprocess.run([sys.executable, "-m", "hdist"] + knn(files, tmp_path / "o.csv") +
                       ["--query", str(tmp_path / "q.csv")], capture_output=True, text=True,
                       env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == ("hdist knn: warning: query file %r, rows 0..%d: column 'colour': "
                        "%d of the %d observed values of the query file were not seen in "
                        "fit (each unseen value is at the maximal distance); check that the "
                        "column holds the same kind of labels as in training"
                        % (str(tmp_path / "q.csv"), CHUNK - 1, CHUNK, CHUNK))
    assert len(lines) == 2 and lines[1].startswith("hdist knn: 20000 query rows"), lines
    # an error of the query file in the same words
    query.drop(columns="weight").to_csv(tmp_path / "q.csv", index=False)
    r = subprocess.run([sys.executable, "-m", "hdist"] + knn(files, tmp_path / "o.csv") +
                       ["--query", str(tmp_path / "q.csv")], capture_output=True, text=True,
                       env=ENV, timeout=120)
    assert r.returncode == 1
    assert "rows 0..%d: the query file is missing the column(s) ['weight'] seen in fit" \
        % (CHUNK - 1) in r.stderr, r.stderr


def amounts(tmp_path, n=200):
    """A training file whose 'amt' holds ``n`` distinct amounts written with thousands
    separators."""
    rng = np.random.default_rng(8)
    amt = rng.choice(np.arange(1000, 99999), n, replace=False) / 10
    frame = pd.DataFrame({"amt": ["{:,.1f}".format(v) for v in amt],
                          "colour": rng.choice(["red", "blue"], n),
                          "cls": rng.choice(["p", "q"], n)})
    frame.to_csv(tmp_path / "amt.csv", index=False)
    return tmp_path / "amt.csv"


def test_distinct_amounts_with_separators_get_the_separator_warning(capsys, tmp_path):
    train = amounts(tmp_path)
    want = ("warning: column 'amt' (nominal: numbers written with thousands separators "
            "('%s'); the command line reads them as text: remove the separators from the "
            "file to read the column as numbers): its kind was inferred from values that "
            "may mean otherwise; give --nominal amt to keep it nominal (which also silences "
            "this warning)" % read_csv(train)["amt"][0])
    for command, argv in [
            ("knn", ["knn", "--train", str(train), "--query", str(train), "--target", "cls",
                     "--k", "1", "-o", str(tmp_path / "o.csv")]),
            ("cv", ["cv", "--train", str(train), "--target", "cls", "--metrics", "heom",
                    "--folds", "2"])]:
        status, _, err = run(argv, capsys)
        assert status == 0, err
        warned = [ln for ln in err.splitlines() if "warning" in ln]
        # (cv's test folds hold amounts unseen in their training folds: warned too)
        assert warned[0] == "hdist %s: %s" % (command, want), err
        assert len(warned) == (1 if command == "knn" else 2), err
        assert "identifier" not in err
        status, _, err = run(argv + ["--nominal", "amt"], capsys)
        assert status == 0 and "separators" not in err, err


# ----------------------------------------------------------------------------------------
# usage errors found in the files: exit status 2, before the training file is read


@pytest.mark.parametrize("extra,match", [
    (["--drop", "colur"], "--drop column(s) 'colur' not in the training file"),
    (["--columns", "size,colur"], "--columns column(s) 'colur' not in the training file"),
    (["--nominal", "colur"], "--nominal column(s) 'colur' not in the training file"),
    (["--continuous", "All"], "--continuous column(s) 'All' not in the training file %r "
     "(columns: size, colour, weight, cls); the words are lower case: --continuous all"),
    (["--nominal", "REST"], "the words are lower case: --nominal rest"),
    (["--target", "class"], "--target column 'class' is not in the training file"),
    (["--id", "key"], "--id column(s) 'key' not in the query file"),
])
@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_a_column_an_option_names_is_checked_in_the_header(extra, match, ext, files,
                                                          capsys, tmp_path, monkeypatch):
    train = tmp_path / ("train." + ext)
    frame = read_csv(files / "train.csv")
    frame.to_csv(train, index=False) if ext == "csv" else frame.to_parquet(train)

    def no_reading(*a, **k):
        raise AssertionError("the training file was read")
    monkeypatch.setattr(cli, "read_table", no_reading)
    argv = knn(files, tmp_path / "o.csv")
    argv[argv.index("--train") + 1] = str(train)
    if extra[0] in argv:
        argv[argv.index(extra[0]) + 1] = extra[1]
    else:
        argv += extra
    status, _, err = run(argv, capsys)
    assert status == 2, err
    assert match.replace("%r", repr(str(train))) in err, err
    if extra[0] in ("--drop", "--nominal", "--id"):
        cv = ["cv", "--train", str(train), "--target", "cls"] + extra
        status, _, err = run(cv, capsys)
        assert status == 2 and match.replace("query", "training") in err, err


def test_a_param_refused_at_fit_is_a_usage_error(files, capsys, tmp_path):
    status, _, err = run(knn(files, tmp_path / "o.csv", "query.csv", "--param", "p=1e-320"),
                         capsys)
    assert status == 2, err
    assert err.startswith("hdist knn: error: --metric heom / --param: weights [1.0, 1.0, "
                          "1.0] are out of float64's range for p = 1e-320"), err
