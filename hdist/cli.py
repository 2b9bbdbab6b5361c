"""The ``hdist`` command line (``python -m hdist``).

Subcommands:

``cv`` (the default when no subcommand is given)
    Stratified 10-fold cross-validated 1-NN accuracy of every metric preset in
    ``hdist.METRICS`` on bundled datasets, with the time of each cell and in total.
``knn``
    Score a query file (CSV or Parquet) against a training file: neighbor indices and
    distances and/or predicted classes, written as CSV.  The query file is read and
    written in chunks, so memory stays bounded for files of millions of rows.
``info``
    Versions, compiler, OpenMP and thread facts (``hdist.show_config()``).
``datasets``
    The bundled datasets, or the description and citation of one.

Exit status: 0 on success, 2 for a usage error (bad option or value), 1 when a file or
its columns cannot be used.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import sys
import time

import numpy as np

from . import _knn

EXIT_DATA = 1
EXIT_USAGE = 2
DEFAULT_CV_DATASETS = ("iris", "credit-a", "german", "credit_data")


class CLIError(Exception):
    """An error reported as ``hdist: error: <message>`` with an exit status."""

    def __init__(self, message, status=EXIT_DATA):
        super().__init__(message)
        self.status = status


# ----------------------------------------------------------------------------------------
# progress


class Progress:
    """A row counter on stderr: tqdm when installed, a plain line otherwise, nothing
    when stderr is not a terminal (or ``enabled`` is False)."""

    def __init__(self, total=None, enabled=None, stream=None):
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = bool(enabled)
        self.total = total
        self.done = 0
        self.start = time.perf_counter()
        self._last = 0.0
        self._bar = None
        if self.enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, unit="rows", unit_scale=True, file=self.stream)

    def update(self, n):
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if now - self._last < 0.2:
            return
        self._last = now
        self._draw(now)

    def _draw(self, now):
        rate = self.done / max(now - self.start, 1e-9)
        pct = " (%3.0f%%)" % (100.0 * self.done / self.total) if self.total else ""
        self.stream.write("\r%12s rows%s  %s rows/s " % (format(self.done, ","), pct,
                                                        format(int(rate), ",")))
        self.stream.flush()

    def close(self):
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        else:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()


# ----------------------------------------------------------------------------------------
# parsing helpers


def parse_param(text):
    """``key=value`` -> ``(key, value)``; the value is read as JSON when it parses
    (numbers, true/false/null, lists, dicts), ``inf`` as infinity, else kept as text."""
    if "=" not in text:
        raise CLIError("--param takes key=value, got %r" % text, EXIT_USAGE)
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise CLIError("--param takes key=value, got %r" % text, EXIT_USAGE)
    raw = raw.strip()
    if raw.lower() in ("inf", "+inf", "infinity"):
        return key, math.inf
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


def _split_names(values):
    out = []
    for v in values or ():
        out.extend(s.strip() for s in v.split(",") if s.strip())
    return out


def _is_parquet(path):
    return path.lower().endswith((".parquet", ".pq"))


def _have(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# ----------------------------------------------------------------------------------------
# reading tables (pandas for CSV, pyarrow for Parquet and for CSV without pandas)


@contextlib.contextmanager
def _reading(path, what):
    """Turn a reader's failure into a CLIError naming the file."""
    try:
        yield
    except ImportError as e:
        raise CLIError("reading %s needs %s (pip install hdist[arrow] or hdist[pandas])"
                       % (path, e.name or "pandas or pyarrow"))
    except CLIError:
        raise
    except Exception as e:
        raise CLIError("cannot read %s file %r: %s" % (what, path, e))


def _check_file(path, what):
    if not os.path.isfile(path):
        raise CLIError("%s file %r does not exist" % (what, path))


def read_table(path, nominal=(), what="--train"):
    """Read a whole (training) file; ``nominal`` columns are read as text.  Returns a
    pandas DataFrame or a pyarrow Table."""
    _check_file(path, what)
    with _reading(path, what):
        if _is_parquet(path):
            import pyarrow.parquet as pq
            return pq.read_table(path)
        # Columns the reader does not take for numbers are re-read as text, so that the
        # query file's chunks (read with these kinds) hold the very same values.
        if _have("pandas"):
            import pandas as pd
            table = pd.read_csv(path, dtype={c: str for c in nominal})
            text = [c for c in table.columns if table[c].dtype.kind not in "iuf"]
            if any(pd.api.types.infer_dtype(table[c], skipna=True) not in ("string", "empty")
                   for c in text):
                table = pd.read_csv(path, dtype={c: str for c in list(nominal) + text})
            return table
        import pyarrow.csv as pacsv
        import pyarrow.types as pt
        kinds = {c: "nominal" for c in nominal}
        table = pacsv.read_csv(path, convert_options=_arrow_convert(kinds))
        text = [f.name for f in table.schema
                if not (pt.is_integer(f.type) or pt.is_floating(f.type)
                        or pt.is_string(f.type) or pt.is_large_string(f.type))]
        if text:
            kinds.update({c: "nominal" for c in text})
            table = pacsv.read_csv(path, convert_options=_arrow_convert(kinds))
        return table


def _arrow_convert(kinds):
    import pyarrow as pa
    import pyarrow.csv as pacsv
    types = {c: (pa.string() if k == "nominal" else pa.float64()) for c, k in kinds.items()}
    return pacsv.ConvertOptions(column_types=types, strings_can_be_null=True)


def _columns_of(table):
    return [str(c) for c in (table.columns if hasattr(table, "iloc") else table.column_names)]


def _drop(table, name):
    if hasattr(table, "iloc"):
        return table.drop(columns=[name])
    return table.drop_columns([name]) if hasattr(table, "drop_columns") else table.drop([name])


def _in_order(table, names):
    """A query chunk holding exactly the training columns, in the training file's order
    (a file may list them in any order; the metric matches tables by name and order)."""
    cols = _columns_of(table)
    if cols == names or set(cols) != set(names):
        return table            # the metric names a missing or extra column
    return table[names] if hasattr(table, "iloc") else table.select(names)


def _is_numeric(table, name):
    if hasattr(table, "iloc"):
        return table[name].dtype.kind in "iuf"
    import pyarrow.types as pt
    t = table.schema.field(name).type
    return pt.is_integer(t) or pt.is_floating(t)


def _column_values(table, name):
    if hasattr(table, "iloc"):
        return table[name].to_numpy(dtype=object)
    return np.array(table.column(name).to_pylist(), dtype=object)


def iter_query_chunks(path, kinds, chunk_size):
    """Yield ``(table, n_rows)`` chunks of a query file, each column read with the kind
    the training file gave it (``kinds``: name -> "continuous" / "nominal"), so every
    chunk is encoded alike whatever values it happens to hold."""
    _check_file(path, "--query")
    with _reading(path, "--query"):
        if _is_parquet(path):
            import pyarrow as pa
            import pyarrow.parquet as pq
            pf = pq.ParquetFile(path)
            for batch in pf.iter_batches(batch_size=chunk_size):
                yield pa.Table.from_batches([batch]), batch.num_rows
            return
        if _have("pandas"):
            import pandas as pd
            header = pd.read_csv(path, nrows=0).columns
            dtypes = {c: (str if kinds.get(c) == "nominal" else np.float64)
                      for c in header if c in kinds}
            with pd.read_csv(path, dtype=dtypes, chunksize=chunk_size) as reader:
                for chunk in reader:
                    yield chunk, len(chunk)
            return
        import pyarrow as pa
        import pyarrow.csv as pacsv
        reader = pacsv.open_csv(path, convert_options=_arrow_convert(kinds))
        pending, rows = [], 0
        for batch in reader:
            pending.append(batch)
            rows += batch.num_rows
            if rows >= chunk_size:
                yield pa.Table.from_batches(pending), rows
                pending, rows = [], 0
        if pending:
            yield pa.Table.from_batches(pending), rows


def _agreement(predicted, truth):
    """``(matches, rows with a known truth)``; labels compare by their text, so the
    class ``1`` read as a number in one file and as text in the other still match."""
    from ._schema import _norm_key, is_missing_scalar
    known = [(p, t) for p, t in zip(predicted, truth) if not is_missing_scalar(t)]
    return sum(str(_norm_key(p)) == str(_norm_key(t)) for p, t in known), len(known)


def _count_rows(path):
    """Rows of a Parquet file from its metadata (None for CSV: unknown without a scan)."""
    if _is_parquet(path):
        try:
            import pyarrow.parquet as pq
            return pq.ParquetFile(path).metadata.num_rows
        except Exception:
            return None
    return None


# ----------------------------------------------------------------------------------------
# knn


def _knn_command(args):
    from .metrics import Metric
    if args.k < 1:
        raise CLIError("--k must be >= 1, got %d" % args.k, EXIT_USAGE)
    if args.chunk_size < 1:
        raise CLIError("--chunk-size must be >= 1, got %d" % args.chunk_size, EXIT_USAGE)
    what = args.what or ("both" if args.target else "neighbors")
    if what in ("predictions", "both") and not args.target:
        raise CLIError("--what %s needs --target (the class column of the training file)"
                       % what, EXIT_USAGE)
    params = dict(parse_param(p) for p in args.param or ())
    nominal = _split_names(args.nominal)
    if "nominal" in params:
        raise CLIError("give nominal columns with --nominal, not --param", EXIT_USAGE)
    try:
        weights = _knn.check_weights(args.weights)
    except ValueError as e:
        raise CLIError(str(e), EXIT_USAGE)

    train = read_table(args.train, nominal, "--train")
    columns = _columns_of(train)
    labels = None
    if args.target:
        if args.target not in columns:
            raise CLIError("--target column %r is not in the training file %r (columns: %s)"
                           % (args.target, args.train, ", ".join(columns)))
        labels = _column_values(train, args.target)
        train = _drop(train, args.target)
        columns = _columns_of(train)
    unknown = [c for c in nominal if c not in columns]
    if unknown:
        raise CLIError("--nominal column(s) %s not in the training file %r (columns: %s)"
                       % (", ".join(map(repr, unknown)), args.train, ", ".join(columns)))
    if nominal:
        # --nominal adds to the columns the file gives as text (a list is the exact set)
        nominal = [c for c in columns if c in nominal or not _is_numeric(train, c)]
    try:
        metric = Metric(args.metric, nominal=nominal or None, **params)
    except (TypeError, ValueError) as e:
        raise CLIError(str(e), EXIT_USAGE)
    codes = classes = None
    if labels is not None:
        from ._schema import encode_labels
        try:
            codes, classes = encode_labels(labels, len(labels))
        except ValueError as e:
            raise CLIError("--target column %r: %s" % (args.target, e))
    elif _knn.needs_labels(metric):
        raise CLIError("metric %r learns from classes: give --target" % metric.name,
                       EXIT_USAGE)
    index = _knn.make_index(metric, args.algorithm)
    try:
        index.fit(train, codes)
    except (TypeError, ValueError) as e:
        raise CLIError("training file %r: %s" % (args.train, e))
    metric = getattr(index, "metric_", metric)
    k = args.k
    if k > metric.n_train_:
        raise CLIError("--k %d is larger than the %d training rows" % (k, metric.n_train_),
                       EXIT_USAGE)
    kinds = dict(zip(metric.schema_.names_, metric.schema_.kinds_))
    del train

    out = sys.stdout if args.output in (None, "-") else None
    try:
        fh = out or open(args.output, "w", newline="")
    except OSError as e:
        raise CLIError("cannot write --output %r: %s" % (args.output, e))
    writer = csv.writer(fh)
    header = ["row"]
    if what in ("predictions", "both"):
        header.append("prediction")
    if what in ("neighbors", "both"):
        header += ["neighbor_%d" % (j + 1) for j in range(k)]
        header += ["distance_%d" % (j + 1) for j in range(k)]
    writer.writerow(header)

    progress = Progress(_count_rows(args.query), None if args.progress else False)
    start = time.perf_counter()
    row0 = 0
    correct = scored = 0
    try:
        for chunk, n in iter_query_chunks(args.query, kinds, args.chunk_size):
            truth = None
            if args.target and args.target in _columns_of(chunk):
                truth = _column_values(chunk, args.target)
                chunk = _drop(chunk, args.target)
            chunk = _in_order(chunk, list(kinds))
            try:
                dist, ind = index.kneighbors(chunk, k, n_jobs=args.n_jobs)
            except (TypeError, ValueError) as e:
                raise CLIError("query file %r, rows %d..%d: %s"
                               % (args.query, row0, row0 + n - 1, e))
            cols = [range(row0, row0 + n)]
            if what in ("predictions", "both"):
                w = _knn.neighbor_weights(dist, weights)
                pred = _knn.vote_winner(_knn.class_votes(codes[ind], w, len(classes)))
                labels_out = np.asarray(classes, dtype=object)[pred]
                cols.append(labels_out.tolist())
                if truth is not None:
                    c, s = _agreement(labels_out, truth)
                    correct += c
                    scored += s
            if what in ("neighbors", "both"):
                cols += [ind[:, j].tolist() for j in range(k)]
                cols += [dist[:, j].tolist() for j in range(k)]
            writer.writerows(zip(*cols))
            row0 += n
            progress.update(n)
    finally:
        progress.close()
        if out is None:
            fh.close()
        else:
            fh.flush()
    elapsed = time.perf_counter() - start
    msg = "hdist knn: %d query rows scored against %d training rows in %.2f s" \
        % (row0, metric.n_train_, elapsed)
    if scored:
        msg += "; accuracy on the query file's %r column: %.4f (%d rows)" \
            % (args.target, correct / scored, scored)
    print(msg, file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------------------
# cv: the main job


def stratified_folds(y, n_folds, seed=0):
    """Fold number of each row: within each class, rows are shuffled (numpy's PCG64 with
    ``seed``) and dealt round-robin, continuing the deal from class to class, so folds
    differ in size by at most one and keep the class proportions."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    fold = np.empty(len(y), dtype=np.int64)
    dealt = 0
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        fold[idx] = (dealt + np.arange(len(idx))) % n_folds
        dealt += len(idx)
    return fold


def _cv_data(name):
    """A bundled dataset as float64 ``[n, m]`` (nominal columns as category codes,
    ``NaN`` missing), class codes, and the nominal positions.  Coding nominal values as
    numbers changes no distance (a code stands for exactly one value) and lets every
    fold be encoded with vectorised numpy."""
    from .datasets import load_dataset
    X, y, nominal = load_dataset(name, as_frame=False)
    out = np.empty(X.shape, dtype=np.float64)
    for j in range(X.shape[1]):
        col = X[:, j]
        if j in nominal:
            present = [v for v in col if v is not None]
            levels = {v: float(i) for i, v in enumerate(sorted(set(present)))}
            out[:, j] = [levels[v] if v is not None else math.nan for v in col]
        else:
            out[:, j] = col.astype(np.float64)
    _, ycodes = np.unique(y.astype(str), return_inverse=True)
    return out, ycodes.astype(np.int64), list(nominal)


def registry_presets():
    """Preset names of ``hdist.METRICS`` in registration order, aliases left out."""
    from .metrics import METRICS
    names = []
    for info in METRICS.values():
        if info.name not in names:
            names.append(info.name)
    return names


def cross_validate(metric_name, X, y, nominal, folds, k=1, n_jobs=None, weights="uniform"):
    """Accuracy of k-NN under ``folds`` (fold number per row) with preset
    ``metric_name``; returns ``(accuracy, note)``.  A preset that compares nominal
    attributes only is run on the nominal columns (note ``"nominal columns only"``)."""
    from .metrics import METRICS, Metric
    info = METRICS[metric_name]
    note = None
    if info.continuous is None and len(nominal) < X.shape[1]:
        if not nominal:
            raise ValueError("compares nominal attributes only and the data has none")
        X = X[:, nominal]
        nominal = list(range(len(nominal)))
        note = "nominal columns only"
    C = int(y.max()) + 1
    correct = 0
    for f in range(int(folds.max()) + 1):
        test = folds == f
        metric = Metric(metric_name, nominal=nominal)
        index = _knn.make_index(metric)
        index.fit(X[~test], y[~test])
        dist, ind = index.kneighbors(X[test], k, n_jobs=n_jobs)
        ytr = y[~test]
        pred = _knn.vote_winner(_knn.class_votes(ytr[ind], _knn.neighbor_weights(dist, weights),
                                                 C))
        correct += int((pred == y[test]).sum())
    return correct / len(y), note


def _cv_command(args):
    from .datasets import list_datasets, _resolve
    names = _split_names(args.datasets) or list(DEFAULT_CV_DATASETS)
    for n in names:
        try:
            _resolve(n)
        except ValueError as e:
            raise CLIError(str(e) + " (bundled: %s)" % ", ".join(list_datasets()), EXIT_USAGE)
    presets = registry_presets()
    metrics = _split_names(args.metrics) or presets
    bad = [m for m in metrics if m not in presets]
    if bad:
        raise CLIError("unknown metric(s) %s; registered: %s" % (", ".join(bad),
                                                                 ", ".join(presets)),
                       EXIT_USAGE)
    if args.folds < 2:
        raise CLIError("--folds must be >= 2, got %d" % args.folds, EXIT_USAGE)
    if args.k < 1:
        raise CLIError("--k must be >= 1, got %d" % args.k, EXIT_USAGE)
    out = sys.stdout
    start = time.perf_counter()
    data = {}
    for n in names:
        X, y, nominal = _cv_data(n)
        data[n] = (X, y, nominal, stratified_folds(y, args.folds, args.seed))
    print("hdist %d-fold stratified cross-validated %d-NN accuracy (%%), seed %d; "
          "time per cell in seconds" % (args.folds, args.k, args.seed), file=out)
    print("datasets: " + "; ".join(
        "%s %d rows, %d nominal + %d continuous" % (n, len(d[1]), len(d[2]),
                                                   d[0].shape[1] - len(d[2]))
        for n, d in data.items()), file=out)
    width = max(14, max(len(n) for n in names) + 2)
    mw = max(len(m) for m in metrics) + 3
    print("%-*s" % (mw, "metric") + "".join("%*s" % (width, n) for n in names), file=out)
    notes = []
    results = []
    for m in metrics:
        cells = []
        for n in names:
            X, y, nominal, folds = data[n]
            t0 = time.perf_counter()
            try:
                acc, note = cross_validate(m, X, y, nominal, folds, args.k, args.n_jobs)
            except (TypeError, ValueError) as e:
                acc, note = None, "skipped: %s" % e
            dt = time.perf_counter() - t0
            mark = ""
            if note:
                if note not in notes:
                    notes.append(note)
                mark = "*" * (notes.index(note) + 1)
            cells.append("%s%s" % ("%6.2f %5.2fs" % (100 * acc, dt) if acc is not None
                                   else "  --", mark))
            results.append({"metric": m, "dataset": n, "accuracy": acc, "seconds": dt,
                            "note": note or ""})
        print("%-*s" % (mw, m) + "".join("%*s" % (width, c) for c in cells), file=out)
        out.flush()
    for i, note in enumerate(notes):
        print("%s %s" % ("*" * (i + 1), note), file=out)
    total = time.perf_counter() - start
    print("total %.1f s (%d metrics x %d datasets x %d folds)"
          % (total, len(metrics), len(names), args.folds), file=out)
    if args.csv:
        try:
            with open(args.csv, "w", newline="") as fh:
                w = csv.DictWriter(fh, ["metric", "dataset", "accuracy", "seconds", "note"])
                w.writeheader()
                w.writerows(results)
        except OSError as e:
            raise CLIError("cannot write --csv %r: %s" % (args.csv, e))
    return 0


# ----------------------------------------------------------------------------------------
# info, datasets


def _info_command(args):
    from ._config import show_config
    show_config()
    return 0


def _datasets_command(args):
    from .datasets import describe, list_datasets, summary, _DATASETS
    if args.name:
        try:
            print(describe(args.name))
        except ValueError as e:
            raise CLIError(str(e), EXIT_USAGE)
        return 0
    print("%-14s %-22s %6s %8s %10s %8s  %s" % ("name", "file", "rows", "nominal",
                                                 "continuous", "missing", "classes"))
    for name in list_datasets():
        for split in _DATASETS[name].files:
            s = summary(name, split)
            print("%-14s %-22s %6d %8d %10d %8d  %s"
                  % (name if split is None else "%s:%s" % (name, split), s["name"],
                     s["rows"], s["nominal"], s["continuous"] + s["ordinal"], s["missing"],
                     " / ".join(s["classes"])))
    print("\nhdist datasets NAME prints a description and citation; load with "
          "hdist.datasets.load_dataset(NAME).")
    return 0


# ----------------------------------------------------------------------------------------
# entry point


def build_parser():
    from ._version import __version__
    p = argparse.ArgumentParser(
        prog="hdist", description="Heterogeneous distances and nearest neighbors for "
        "mixed tabular data.  Without a subcommand, runs the cross-validation table (cv).")
    p.add_argument("--version", action="version", version="hdist " + __version__)
    sub = p.add_subparsers(dest="command")

    cv = sub.add_parser("cv", help="cross-validated k-NN accuracy of every metric preset "
                        "on bundled datasets (the default)")
    _add_cv_options(cv)

    kn = sub.add_parser("knn", help="score a query file against a training file")
    kn.add_argument("--train", required=True, help="training file (.csv or .parquet)")
    kn.add_argument("--query", required=True, help="query file (.csv or .parquet), read "
                    "in chunks")
    kn.add_argument("--target", help="class column of the training file (needed for "
                    "predictions and for metrics that learn from classes); dropped from "
                    "the query file if present there, and then used to report accuracy")
    kn.add_argument("--k", type=int, default=5, help="number of neighbors (default 5)")
    kn.add_argument("--metric", default="heom", help="metric preset (default heom)")
    kn.add_argument("--param", action="append", metavar="KEY=VALUE",
                    help="metric parameter, repeatable (values read as JSON: p=1.5, "
                    "missing='{\"continuous\": \"max\"}')")
    kn.add_argument("--nominal", action="append", metavar="COLS",
                    help="comma-separated nominal columns (read as text); others follow "
                    "the file's types")
    kn.add_argument("--weights", default="uniform", help="vote weights: uniform, distance "
                    "or dudani (default uniform)")
    kn.add_argument("--algorithm", default="auto",
                    choices=["auto", "brute", "kd_tree", "ball_tree"])
    kn.add_argument("--what", choices=["neighbors", "predictions", "both"],
                    help="what to write (default: both with --target, else neighbors)")
    kn.add_argument("--output", "-o", help="output CSV (default: standard output)")
    kn.add_argument("--n-jobs", type=int, default=None, help="threads (default: all "
                    "usable cores)")
    kn.add_argument("--chunk-size", type=int, default=100_000,
                    help="query rows per chunk (default 100000)")
    kn.add_argument("--no-progress", dest="progress", action="store_false",
                    help="no progress bar (it is shown only when stderr is a terminal)")

    sub.add_parser("info", help="versions, compiler, OpenMP and threads")
    ds = sub.add_parser("datasets", help="list the bundled datasets, or describe one")
    ds.add_argument("name", nargs="?", help="dataset to describe")
    return p


def _add_cv_options(p):
    p.add_argument("--datasets", action="append", metavar="NAMES",
                   help="comma-separated bundled datasets (default: %s)"
                   % ",".join(DEFAULT_CV_DATASETS))
    p.add_argument("--metrics", action="append", metavar="NAMES",
                   help="comma-separated presets (default: every preset registered)")
    p.add_argument("--folds", type=int, default=10, help="folds (default 10)")
    p.add_argument("--k", type=int, default=1, help="neighbors (default 1)")
    p.add_argument("--seed", type=int, default=0, help="fold shuffling seed (default 0)")
    p.add_argument("--n-jobs", type=int, default=None, help="threads")
    p.add_argument("--csv", help="also write the results to this CSV file")


_COMMANDS = {"cv": _cv_command, "knn": _knn_command, "info": _info_command,
             "datasets": _datasets_command}


def main(argv=None):
    """Run the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or (argv[0] not in _COMMANDS and argv[0] not in ("-h", "--help",
                                                                 "--version")):
        argv = ["cv"] + argv
    args = build_parser().parse_args(argv)
    command = args.command
    try:
        return _COMMANDS[command](args)
    except CLIError as e:
        print("hdist %s: error: %s" % (command, e), file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        print("hdist: interrupted", file=sys.stderr)
        return 130
