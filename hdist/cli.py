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
its columns cannot be used, or the job fails (out of memory, a write error); 130 after
SIGINT (Ctrl-C), 143 after SIGTERM, 129 after SIGHUP, 131 after SIGQUIT.  Outputs are
atomic: each is written to a temporary file beside its final name and renamed into place
only once the whole job succeeded, so a failed or interrupted run leaves no output and a
previous file under that name untouched.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import re
import signal
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

from ._search import votes as _knn
from ._search.index import make_index
from ._search.cuda import CudaUnavailableError

EXIT_DATA = 1
EXIT_USAGE = 2
EXIT_SIGINT = 128 + signal.SIGINT
EXIT_SIGTERM = 128 + signal.SIGTERM
#: the signals that stop a command as Ctrl-C does (outputs removed, a message, exit status
#: 128 + the signal's number): SIGTERM, and where the platform has them SIGHUP (the
#: terminal closed) and SIGQUIT (Ctrl-backslash)
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT")
                     if hasattr(signal, name))
DEFAULT_CV_DATASETS = ("iris", "credit-a", "german", "credit_data")


class CLIError(Exception):
    """An error reported as ``hdist: error: <message>`` with an exit status."""

    def __init__(self, message, status=EXIT_DATA):
        super().__init__(message)
        self.status = status


class Terminated(KeyboardInterrupt):
    """SIGTERM, SIGHUP or SIGQUIT received (``signum``): raised in the main thread like
    Ctrl-C's ``KeyboardInterrupt`` (the compiled searches check for signals between blocks
    of rows), so the job stops the same way and its outputs are removed."""

    def __init__(self, signum=signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


# ----------------------------------------------------------------------------------------
# progress


class Progress:
    """Rows done / total on stderr, with the rate and the time left.

    The line is redrawn by a timer every ``interval`` seconds (0.5 s on a terminal, where
    it is rewritten in place; 2 s elsewhere, one line each) whatever the chunk size, and
    the count moves with every block of query rows that a chunk's search completes.
    Shown when stderr is a terminal, or when ``enabled`` is True; never when False."""

    def __init__(self, total=None, enabled=None, stream=None, interval=None):
        self.stream = stream or sys.stderr
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = bool(tty if enabled is None else enabled)
        self.tty = tty
        self.total = total
        self.done = 0
        self.start = time.perf_counter()
        self.interval = interval or (0.5 if tty else 2.0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _tick(self):
        while not self._stop.wait(self.interval):
            self.draw()

    def update(self, n):
        """``n`` more rows are done."""
        self.done += n

    def line(self):
        elapsed = time.perf_counter() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        text = "%s" % format(self.done, ",")
        if self.total:
            text += " / %s rows (%3.0f%%)" % (format(self.total, ","),
                                              100.0 * self.done / self.total)
        else:
            text += " rows"
        text += ", %s rows/s" % format(int(rate), ",")
        if self.total and rate > 0:
            left = max(self.total - self.done, 0) / rate
            text += ", ETA %d:%02d:%02d" % (left // 3600, left % 3600 // 60, left % 60)
        return text + ", %s elapsed" % _clock(elapsed)

    def draw(self):
        if not self.enabled:
            return
        with self._lock:
            if self.tty:
                self.stream.write("\r" + self.line() + " ")
            else:
                self.stream.write(self.line() + "\n")
            self.stream.flush()

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.enabled:
            self.draw()
            if self.tty:
                with self._lock:
                    self.stream.write("\n")
                    self.stream.flush()


def _clock(seconds):
    seconds = int(seconds)
    return "%d:%02d:%02d" % (seconds // 3600, seconds % 3600 // 60, seconds % 60)


# ----------------------------------------------------------------------------------------
# parsing helpers


#: the deepest nesting of lists and objects a ``--param`` value may have
PARAM_DEPTH = 32


def _json_depth(text):
    """The deepest nesting of ``[`` / ``{`` in JSON text, brackets inside strings not
    counted (a count over the characters: no recursion, whatever the depth)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_param(text):
    """``key=value`` -> ``(key, value)``; the value is read as JSON when it parses
    (numbers, true/false/null, lists, dicts), ``inf`` as infinity, else kept as text.
    A value nested deeper than ``PARAM_DEPTH`` lists or objects is a usage error."""
    if "=" not in text:
        raise CLIError("--param takes key=value, got %r" % text, EXIT_USAGE)
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise CLIError("--param takes key=value, got %r" % text, EXIT_USAGE)
    raw = raw.strip()
    if raw.lower() in ("inf", "+inf", "infinity"):
        return key, math.inf
    depth = _json_depth(raw)
    if depth > PARAM_DEPTH:
        raise CLIError("--param %s: the value nests %d levels of lists or objects; at most "
                       "%d are read" % (key, depth, PARAM_DEPTH), EXIT_USAGE)
    try:
        return key, json.loads(raw)
    except RecursionError:
        raise CLIError("--param %s: the value nests too deeply to be read" % key,
                       EXIT_USAGE)
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


def reader_name():
    """The CSV reader the command line uses: pyarrow's when installed, else pandas'."""
    return "pyarrow" if _have("pyarrow") else "pandas"


class Reading:
    """How the command line reads CSV files: the field separator (``--sep``) and the text
    that marks a missing value (``--na-values``).  The readers take an empty field for
    missing; the marks are applied to the feature columns as the metric applies them
    (docs/metrics.md, section 1) -- the training file's by the metric, the query file's
    continuous columns as they are read -- never to the target column, whose every text
    is a class."""

    def __init__(self, sep=None, na_values=None):
        from ._core.schema import NA_VALUES
        self.sep = sep
        self.na_values = tuple(NA_VALUES if na_values is None else na_values)

    def separator(self, path):
        """``--sep``, else a tab for ``.tsv`` / ``.tab`` files and a comma otherwise."""
        if self.sep is not None:
            return self.sep
        name = path.lower()
        for ext in (".gz", ".bz2", ".xz", ".zst", ".zip"):
            if name.endswith(ext):
                name = name[:-len(ext)]
        return "\t" if name.endswith((".tsv", ".tab")) else ","


def _csv_header(path, reading=None):
    """The column names of a CSV file (plain, ``.gz``, ``.bz2`` or ``.xz``), or None for
    another compression (read by pyarrow or pandas only)."""
    sep = (reading or Reading()).separator(path)
    name = path.lower()
    if name.endswith(".gz"):
        import gzip
        opener = gzip.open
    elif name.endswith(".bz2"):
        import bz2
        opener = bz2.open
    elif name.endswith(".xz"):
        import lzma
        opener = lzma.open
    elif name.endswith((".zst", ".zip")):
        return None
    else:
        opener = open
    with opener(path, "rt", newline="", encoding="utf-8-sig") as fh:
        return next(csv.reader(fh, delimiter=sep), [])


def _file_columns(path, what, reading=None):
    """The column names of a CSV or Parquet file (None where only the reader can tell),
    a CLIError when the file is missing or names a column twice."""
    _check_file(path, what)
    with _reading(path, what):
        if _is_parquet(path):
            import pyarrow.parquet as pq
            names = pq.read_schema(path).names
        else:
            names = _csv_header(path, reading)
    seen = set()
    for i, c in enumerate(names or ()):
        if c in seen:
            raise CLIError("the %s file %r names the column %r twice (columns %d and %d of "
                           "its header); give each column its own name"
                           % (what, path, c, names.index(c) + 1, i + 1))
        seen.add(c)
    return names


#: pyarrow's CSV block size (bytes) to begin with; a row longer than a block is read again
#: with blocks 8 times larger, up to ``MAX_BLOCK_SIZE``
BLOCK_SIZE = 1 << 20
MAX_BLOCK_SIZE = 1 << 30


def _larger_block(error, block):
    """The next block size after pyarrow's "straddling object straddles two block
    boundaries" (a row longer than the block), or None for another error."""
    if "straddl" in str(error) and block < MAX_BLOCK_SIZE:
        return min(block * 8, MAX_BLOCK_SIZE)
    return None


def _arrow_read_csv(path, convert, sep):
    """pyarrow's ``read_csv`` of a whole file, blocks enlarged for long rows."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    block = BLOCK_SIZE
    while True:
        try:
            return pacsv.read_csv(path, convert_options=convert,
                                  read_options=pacsv.ReadOptions(block_size=block),
                                  parse_options=pacsv.ParseOptions(delimiter=sep))
        except pa.ArrowInvalid as e:
            block = _larger_block(e, block)
            if block is None:
                raise


def _arrow_batches(path, convert, sep):
    """pyarrow's streaming CSV reader (``open_csv``): the file's record batches, blocks
    enlarged for long rows (the reader reopened after the rows already read)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    block, seen = BLOCK_SIZE, 0
    while True:
        try:
            reader = pacsv.open_csv(
                path, convert_options=convert, parse_options=pacsv.ParseOptions(
                    delimiter=sep), read_options=pacsv.ReadOptions(
                    block_size=block, skip_rows_after_names=seen))
            for batch in reader:
                seen += batch.num_rows
                yield batch
            return
        except pa.ArrowInvalid as e:
            block = _larger_block(e, block)
            if block is None:
                raise


def _pandas_exact():
    """``read_csv``'s option for correctly rounded floats, as pyarrow and Python parse
    them (pandas 3 parses so by default and deprecates the option)."""
    try:
        import pandas as pd
    except ImportError:
        return {}
    return {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}



def read_table(path, nominal=(), what="--train", text=(), reading=None):
    """Read a whole (training) file; ``nominal`` columns and ``text`` columns (IDs) are
    read as text, the missing-value text of ``reading`` (a :class:`Reading`) as missing.
    Returns a pyarrow Table (pyarrow installed) or a pandas DataFrame."""
    reading = reading or Reading()
    _file_columns(path, what, reading)
    with _reading(path, what):
        if _is_parquet(path):
            import pyarrow.parquet as pq
            return pq.read_table(path)
        # Columns the reader does not take for numbers are re-read as text, so that the
        # query file's chunks (read with these kinds) hold the very same values.
        as_text = list(nominal) + [c for c in text if c not in nominal]
        sep = reading.separator(path)
        if reader_name() == "pandas":
            import pandas as pd
            opts = dict(sep=sep, na_values=[""], keep_default_na=False, **_pandas_exact())
            table = pd.read_csv(path, dtype={c: str for c in as_text}, **opts)
            # (a float column holding an infinity read it from text such as "inf")
            other = [c for c in table.columns if table[c].dtype.kind not in "iuf"
                     or table[c].dtype.kind == "f" and bool(np.isinf(table[c]).any())]
            if any(pd.api.types.infer_dtype(table[c], skipna=True) not in ("string", "empty")
                   for c in other):
                table = pd.read_csv(path, dtype={c: str for c in as_text + other}, **opts)
            return table
        import pyarrow.types as pt
        kinds = {c: "nominal" for c in as_text}
        table = _arrow_read_csv(path, _arrow_convert(kinds, reading), sep)
        other = [f.name for f in table.schema
                 if not (pt.is_integer(f.type) or pt.is_floating(f.type)
                         or pt.is_string(f.type) or pt.is_large_string(f.type))
                 or pt.is_floating(f.type) and _special_floats(table.column(f.name))]
        if other:
            kinds.update({c: "nominal" for c in other})
            table = _arrow_read_csv(path, _arrow_convert(kinds, reading), sep)
        return table


def _arrow_convert(kinds, reading=None):
    """pyarrow's options: the columns of ``kinds`` as text, an empty field missing."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    return pacsv.ConvertOptions(column_types={c: pa.string() for c in kinds},
                                strings_can_be_null=True, null_values=[""])


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


def iter_query_chunks(path, kinds, chunk_size, text=(), reading=None):
    """Yield ``(table, n_rows)`` chunks of a query file, each column read with the kind
    the training file gave it (``kinds``: name -> "continuous" / "nominal"), so every
    chunk is encoded alike whatever values it happens to hold: every column is read as
    text, and the continuous ones are converted to numbers here, the missing-value marks
    of ``reading`` made missing; a value that is no number is a CLIError naming the
    column, the row and the value."""
    reading = reading or Reading()
    header = _file_columns(path, "--query", reading)
    with _reading(path, "--query"):
        if _is_parquet(path):
            import pyarrow as pa
            import pyarrow.parquet as pq
            pf = pq.ParquetFile(path)
            empty = True
            for batch in pf.iter_batches(batch_size=chunk_size):
                empty = False
                yield pa.Table.from_batches([batch]), batch.num_rows
            if empty:           # a file without rows: its columns, for the output's header
                yield pf.schema_arrow.empty_table(), 0
            return
        if header is None:
            raise CLIError("cannot read the --query file %r: a query file is plain CSV or "
                           "compressed with gzip, bzip2 or xz" % path)
        cont = [c for c in header if c not in text and kinds.get(c) == "continuous"]
        sep = reading.separator(path)
        row0 = 0
        if reader_name() == "pandas":
            import pandas as pd
            marks = _spaced(reading.na_values)
            opts = dict(sep=sep, keep_default_na=False, **_pandas_exact())
            with pd.read_csv(path, dtype={c: (np.float64 if c in cont else str)
                                          for c in header},
                             na_values={c: (marks if c in cont else [""]) for c in header},
                             chunksize=chunk_size, **opts) as reader:
                chunks = iter(reader)
                while True:
                    try:
                        chunk = next(chunks)
                    except StopIteration:
                        break
                    except ValueError:
                        # pandas names no column: find the value in the chunk's text
                        raw = pd.read_csv(path, dtype=str, skiprows=range(1, row0 + 1),
                                          nrows=chunk_size, na_values=[""], **opts)
                        for c in cont:
                            hit = _first_non_number(raw[c].tolist(), reading.na_values)
                            if hit:
                                raise CLIError(_NOT_A_NUMBER % (c, path, hit[1],
                                                                row0 + hit[0]))
                        raise
                    yield chunk, len(chunk)
                    row0 += len(chunk)
            if row0 == 0:       # a header without rows: its columns, for the output's
                yield pd.DataFrame({c: pd.Series([], dtype=np.float64 if c in cont  # header
                                                 else object) for c in header}), 0
            return
        import pyarrow as pa
        reader = _arrow_batches(path, _arrow_convert(header, reading), sep)
        pending, rows = [], 0

        def table(batches):
            t = pa.Table.from_batches(batches)
            for c in cont:
                i = t.schema.get_field_index(c)
                t = t.set_column(i, c, _arrow_numbers(t.column(i), c, path, row0,
                                                      reading.na_values))
            return t
        for batch in reader:
            while batch.num_rows:
                take = min(batch.num_rows, chunk_size - rows)
                pending.append(batch.slice(0, take))
                rows += take
                batch = batch.slice(take)
                if rows == chunk_size:
                    yield table(pending), rows
                    row0 += rows
                    pending, rows = [], 0
        if pending:
            yield table(pending), rows
        elif row0 == 0:         # a header without rows
            yield table([pa.RecordBatch.from_pydict(
                {c: pa.array([], pa.string()) for c in header})]), 0


_NOT_A_NUMBER = ("column %r of the query file %r holds %r in row %d, which is not a "
                 "number, but the column is continuous in the training file; correct the "
                 "value, or add it to --na-values if it marks a missing value")


def _first_non_number(values, marks):
    """Position and value of the first text in ``values`` that is neither missing, a
    missing-value mark nor a number."""
    from ._core.schema import text_number
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and v != v):
            continue
        t = str(v).strip()
        if t not in marks and text_number(t) is None:
            return i, v
    return None


def _spaced(marks):
    """The missing-value marks as pandas' reader matches them (exactly): each also with
    a space before or after it (``a, ?, b``)."""
    out = []
    for t in marks:
        for v in (t, " " + t, t + " ", " " + t + " "):
            if v not in out:
                out.append(v)
    return out


def _arrow_numbers(col, name, path, row0, marks):
    """A query chunk's text column of a continuous attribute as float64 (pyarrow)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    text = pc.utf8_trim_whitespace(col)
    text = pc.if_else(pc.is_in(text, value_set=pa.array(list(marks), pa.string())),
                      pa.scalar(None, pa.string()), text)
    try:
        out = pc.cast(text, pa.float64())
        if not _special_floats(out):
            return out
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    i, v = _first_non_number(col.to_pylist(), marks)
    raise CLIError(_NOT_A_NUMBER % (name, path, v, row0 + i))


def _special_floats(col):
    """Whether an Arrow float column holds NaN or an infinity, which pyarrow reads from
    text such as "nan", "NAN" or "inf": such text spells no number (docs/metrics.md,
    section 1), so a training column holding it is read as text, where ``--na-values``
    decides, and a query column holding it is refused."""
    import pyarrow.compute as pc
    return bool(pc.any(pc.invert(pc.is_finite(col))).as_py())


def _agreement(predicted, truth):
    """``(matches, rows with a known truth)``; labels compare by their text, so the
    class ``1`` read as a number in one file and as text in the other still match."""
    from ._core.schema import is_missing_scalar, norm_key
    known = [(p, t) for p, t in zip(predicted, truth) if not is_missing_scalar(t)]
    return sum(str(norm_key(p)) == str(norm_key(t)) for p, t in known), len(known)


def _count_rows(path):
    """Rows of a query file: Parquet's metadata, or a count of a CSV file's line ends
    (a fast pass over the bytes; a quoted field holding a line end counts twice)."""
    try:
        if _is_parquet(path):
            import pyarrow.parquet as pq
            return pq.ParquetFile(path).metadata.num_rows
        lines, last = 0, b"\n"
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 24), b""):
                lines += block.count(b"\n")
                last = block[-1:]
        return max(lines + (last != b"\n") - 1, 0)
    except Exception:
        return None


def _check_columns(names, available, option, path, which="training"):
    """A usage CLIError (the option's fault) naming the columns of ``names`` that the
    ``which`` file (``available``: its columns) lacks; ``All`` / ``REST`` (another case) are
    taken for the words ``all`` / ``rest`` misspelt."""
    unknown = [c for c in names if c not in available]
    if unknown:
        words = [c for c in unknown if c.lower() in ("all", "rest")]
        hint = ("; the words are lower case: %s %s" % (option, words[0].lower())
                if words and option in ("--nominal", "--continuous") else "")
        raise CLIError("%s column(s) %s not in the %s file %r (columns: %s)%s"
                       % (option, ", ".join(map(repr, unknown)), which, path,
                          ", ".join(available), hint), EXIT_USAGE)


def _check_target(target, columns, path):
    if target not in columns:
        raise CLIError("--target column %r is not in the training file %r (columns: %s)"
                       % (target, path, ", ".join(columns)), EXIT_USAGE)


def _check_named_columns(header, path, target=None, options=(), which="training"):
    """The columns the options name (``options``: ``(option, names)``) and ``target``
    checked against the ``header`` of the ``which`` file before the file is read (nothing
    when only the reader can tell its columns)."""
    if header is None:
        return
    if target is not None:
        _check_target(target, header, path)
    for option, names in options:
        _check_columns(names, header, option, path, which)


def _select(table, names):
    return table[names] if hasattr(table, "iloc") else table.select(names)


#: the output files ``-o`` writes, by the end of their name
OUTPUT_FORMATS = {".csv": "csv", ".tsv": "tsv", ".csv.gz": "csv", ".tsv.gz": "tsv",
                  ".parquet": "parquet", ".pq": "parquet"}


def output_format(path, option="--output"):
    """The format ``-o path`` is written in (``"csv"``, ``"tsv"``, ``"parquet"``), or a
    usage CLIError listing the names it can write."""
    if path in (None, "-"):
        return "csv"
    name = path.lower()
    for ext in sorted(OUTPUT_FORMATS, key=len, reverse=True):
        if name.endswith(ext):
            return OUTPUT_FORMATS[ext]
    ext = os.path.splitext(name)[1]
    raise CLIError("%s %r: cannot write %s; the output is written as %s (by the end "
                   "of its name), or as CSV on standard output with -"
                   % (option, path, "'%s' files" % ext if ext else "a name without an "
                      "extension", ", ".join(OUTPUT_FORMATS)), EXIT_USAGE)


#: the compression level of ``.gz`` outputs: gzip's own default, nearly the size of level 9
#: in about half its time
GZIP_LEVEL = 6

#: the most bytes of an output's name kept in its temporary file's name
#: (``.NAME.XXXXXXXX.part``: 15 bytes more, within the 255 bytes a file name may have)
PART_NAME_BYTES = 240

#: the outputs of the running command not yet renamed into place (removed by ``main``
#: when the command fails or is interrupted)
_PENDING = []


class _Output:
    """An output of the command line, written atomically: CSV (standard output by
    default), tab-separated (``.tsv``), either gzip-compressed (``.csv.gz``), or Parquet
    (``.parquet`` / ``.pq``), by the end of its name (another name is refused), written
    chunk by chunk from columns ``{name: values}``.

    The constructor checks the path before any input is read -- a known format, an
    existing folder where a file may be created, not the same file as any of ``inputs``
    (``{option: path}``; hard and symbolic links included) -- and opens a temporary file
    in the target's folder.  :meth:`commit` flushes, syncs and closes it and renames it to
    the final name (``os.replace``); until then a previous file under that name is left
    as it was, and :meth:`abort` (also run by ``main`` on any error, SIGINT or SIGTERM)
    removes the temporary file.  Standard output (``-``) receives the whole output at
    :meth:`commit`, nothing before.  A write error is a CLIError naming the output."""

    def __init__(self, path, inputs=None, option="--output"):
        self.path, self.option = path, option
        fmt = output_format(path, option)
        self.parquet = fmt == "parquet"
        self.delimiter = "\t" if fmt == "tsv" else ","
        self.text = self.gz = self.raw = self.writer = None
        self.tmp = self.final = None
        self.stdout = path in (None, "-")
        if self.parquet and not _have("pyarrow"):
            raise CLIError("writing Parquet %s needs pyarrow (pip install hdist[arrow])"
                           % option, EXIT_USAGE)
        if not self.stdout:
            self.final = self._check_path(inputs or {})
        try:
            if self.stdout:
                self.raw = tempfile.TemporaryFile()
            else:
                fd, self.tmp = tempfile.mkstemp(
                    dir=os.path.dirname(self.final),
                    prefix="." + _part_name(os.path.basename(self.final)) + ".",
                    suffix=".part")
                self.raw = os.fdopen(fd, "wb")
        except OSError as e:
            raise CLIError("cannot write %s %r: %s" % (option, path, e.strerror or e),
                           EXIT_USAGE)
        _PENDING.append(self)
        if self.parquet:
            return
        if path is not None and path.lower().endswith(".gz"):
            import gzip
            self.gz = gzip.GzipFile(filename=self.final, mode="wb", fileobj=self.raw,
                                    compresslevel=GZIP_LEVEL)
        self.text = io.TextIOWrapper(self.gz or self.raw, encoding="utf-8", newline="")

    def _check_path(self, inputs):
        """The real path written (through a symbolic link, to the file it names), or a
        usage CLIError: a missing folder, a folder, an existing file that is not a regular
        one (a FIFO, a device), an input file."""
        final = os.path.realpath(self.path)
        folder = os.path.dirname(final)
        if os.path.isdir(final):
            raise CLIError("%s %r is a folder; give a file name" % (self.option, self.path),
                           EXIT_USAGE)
        if not os.path.isdir(folder):
            raise CLIError("%s %r: the folder %r does not exist"
                           % (self.option, self.path, os.path.dirname(self.path) or folder),
                           EXIT_USAGE)
        if os.path.exists(final):
            import stat
            if not stat.S_ISREG(os.stat(final).st_mode):
                raise CLIError("%s %r is not a regular file (a FIFO, a device, a socket); "
                               "give a file name, or - for standard output"
                               % (self.option, self.path), EXIT_USAGE)
            for what, other in inputs.items():
                with contextlib.suppress(OSError):
                    if other and os.path.samefile(final, other):
                        raise CLIError("%s %r is the %s file %r; write the output to "
                                       "another file" % (self.option, self.path, what,
                                                         other), EXIT_USAGE)
        return final

    def _failed(self, e):
        return CLIError("cannot write %s %r: %s" % (self.option, self.path or "-",
                                                   getattr(e, "strerror", None) or e))

    def write(self, cols):
        try:
            self._write(cols)
        except OSError as e:
            raise self._failed(e)

    def _write(self, cols):
        if self.parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq
            table = pa.table({k: (v if isinstance(v, (pa.Array, pa.ChunkedArray))
                                  else np.asarray(v) if not isinstance(v, list) else v)
                              for k, v in cols.items()})
            if self.writer is None:
                self.schema = table.schema
                self.writer = pq.ParquetWriter(self.raw, table.schema)
            self.writer.write_table(table.cast(self.schema))
            return
        if self.writer is None:
            self.writer = csv.writer(self.text, delimiter=self.delimiter)
            self.writer.writerow(list(cols))
        self.writer.writerows(zip(*[v.tolist() if hasattr(v, "tolist") else v
                                    for v in cols.values()]))

    def commit(self):
        """Complete the output: flushed, synced to disk, closed and renamed to its final
        name (or copied to standard output)."""
        try:
            if self.parquet:
                if self.writer is not None:
                    self.writer.close()
            elif self.gz is not None:
                self.text.close()           # the gzip trailer; the file stays open
            else:
                self.text.flush()
            self.raw.flush()
            if self.stdout:
                self.raw.seek(0)
                target = getattr(sys.stdout, "buffer", None)
                if target is None:
                    sys.stdout.write(self.raw.read().decode("utf-8"))
                else:
                    sys.stdout.flush()
                    for block in iter(lambda: self.raw.read(1 << 20), b""):
                        target.write(block)
                sys.stdout.flush()
                self.raw.close()
            else:
                os.fsync(self.raw.fileno())
                self.raw.close()
                os.chmod(self.tmp, _new_file_mode(self.final))
                os.replace(self.tmp, self.final)
                self.tmp = None
                _sync_folder(os.path.dirname(self.final))
        except OSError as e:
            raise self._failed(e)
        if self in _PENDING:
            _PENDING.remove(self)

    def abort(self):
        """Drop the output: the temporary file closed and removed; nothing else changes
        (nothing at all after :meth:`commit`)."""
        if self not in _PENDING:
            return
        _PENDING.remove(self)
        for f in (self.writer if self.parquet else None, self.text, self.gz, self.raw):
            with contextlib.suppress(Exception):
                if f is not None:
                    f.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)


def _part_name(name):
    """``name`` cut to its first ``PART_NAME_BYTES`` bytes (whole characters) for the
    temporary file's name."""
    raw = os.fsencode(name)
    if len(raw) <= PART_NAME_BYTES:
        return name
    return os.fsdecode(raw[:PART_NAME_BYTES].decode("utf-8", "ignore").encode("utf-8"))


def _new_file_mode(path):
    """The permissions of a file replacing ``path``: those of the file there, else what
    ``open`` would give a new file (0o666 less the umask)."""
    import stat
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _sync_folder(folder):
    """Sync a folder after a rename in it (where the platform allows)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _id_values(chunk, name):
    """An ID column of a query chunk, unchanged (read as text; missing stays missing)."""
    if hasattr(chunk, "iloc"):
        col = chunk[name]
        return col.astype(object).where(col.notna(), None).tolist()
    return chunk.column(name).combine_chunks()


# ----------------------------------------------------------------------------------------
# knn


def _check_kind_options(params, nominal, continuous):
    for key, option in (("nominal", "--nominal"), ("continuous", "--continuous"),
                        ("na_values", "--na-values")):
        if key in params:
            raise CLIError("give %s with %s, not --param" % (key, option), EXIT_USAGE)
    both = sorted(set(nominal) & set(continuous))
    if both:
        raise CLIError("column(s) %s given both to --nominal and to --continuous"
                       % ", ".join(map(repr, both)), EXIT_USAGE)


def _reading_options(args):
    """The :class:`Reading` of ``--sep`` and ``--na-values``."""
    sep = args.sep
    if sep is not None:
        sep = {"tab": "\t", "\\t": "\t"}.get(sep.lower(), sep)
        if len(sep) != 1:
            raise CLIError("--sep must be one character (or tab), got %r" % args.sep,
                           EXIT_USAGE)
    na = None
    if args.na_values is not None:
        na = [""] + [t.strip() for v in args.na_values for t in v.split(",")
                     if t.strip()]
    return Reading(sep, na)


def _warn(command, message):
    print("hdist %s: warning: %s" % (command, message), file=sys.stderr)


#: the counts in the warning about unseen values, which differ from chunk to chunk
_UNSEEN_COUNTS = re.compile(r"\d+ of the \d+ observed values")


def _once_key(text):
    """What makes two warnings the same for printing them once per run: their text, the
    counts of unseen values left out."""
    return _UNSEEN_COUNTS.sub("# of the # observed values", text)


def _query_words(text, query="the query file"):
    """A message of the API about its queries ``Q`` in the command line's words."""
    return re.sub(r"(?<![\w'\"\[])Q(?![\w'\"\[])", query, text)


def _kind_warning(columns):
    """The text of a ColumnKindWarning about ``columns`` (``[(name, reason)]``) with the
    command line's remedies (``--nominal``, ``--continuous``, ``--na-values``, ``--id``,
    ``--drop``) in place of the API's arguments."""
    from ._core.schema import THOUSANDS_REMEDY
    separated = [str(n) for n, why in columns if THOUSANDS_REMEDY in why]
    columns = [(str(n), why.replace(THOUSANDS_REMEDY, "the command line reads them as "
                                    "text: remove the separators from the file to read "
                                    "the column as numbers"))
               for n, why in columns]
    advice = ("add a mark of missing values to --na-values, or give an identifier to --id "
              "or --drop")
    if len(columns) == 1:
        name, why = columns[0]
        give = ("give --nominal %s to keep it nominal (which also silences this warning)"
                % name if separated else "give --nominal %s or --continuous %s (either "
                "also silences this warning), %s" % (name, name, advice))
        return ("column %r (%s): its kind was inferred from values that may mean otherwise; "
                "%s" % (name, why, give))
    return ("the kinds of %d columns were inferred from values that may mean otherwise; "
            "give each to --nominal or --continuous (which also silences this warning; "
            "numbers with thousands separators only to --nominal), %s:\n%s"
            % (len(columns), advice, "\n".join("  %r (%s)" % nw for nw in columns)))


@contextlib.contextmanager
def _warnings_to_stderr(command, reported=(), seen=None, where=""):
    """The user warnings of fitting (columns taken as continuous that look like codes, a
    column without an observed value, ...) and of scoring the query file as
    ``hdist <command>: warning:`` lines in the command line's words, each once per run
    (``seen``: the set shared by the calls of one run; ``where`` begins each line, e.g.
    the query rows it came from); columns ``reported`` already (as identifiers) are left
    out of them."""
    from ._core.schema import ColumnKindWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen = set() if seen is None else seen
    for w in caught:
        if issubclass(w.category, UserWarning):
            text = _query_words(str(w.message))
            if isinstance(w.message, ColumnKindWarning):
                cols = [nw for nw in w.message.columns if nw[0] not in reported]
                text = _kind_warning(cols) if cols else ""
            if text and _once_key(text) not in seen:
                seen.add(_once_key(text))
                _warn(command, where + text)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _looks_like_ids(table, name, n):
    """Whether a column holds text or whole numbers, none missing, a different one in
    each of its ``n`` rows -- not numbers written with thousands separators (amounts,
    named by the warning about the column's kind)."""
    from ._core.schema import thousands_text
    if hasattr(table, "iloc"):
        col = table[name]
        if not (col.dtype.kind in "iuO" or str(col.dtype) in ("string", "str")):
            return False
        if col.isna().any() or col.nunique(dropna=True) != n:
            return False
        return col.dtype.kind in "iu" or thousands_text(col.tolist()) is None
    import pyarrow.compute as pc
    import pyarrow.types as pt
    col = table.column(name)
    if pt.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    t = col.type
    if not (pt.is_integer(t) or pt.is_string(t) or pt.is_large_string(t)):
        return False
    if col.null_count or pc.count_distinct(col).as_py() != n:
        return False
    return pt.is_integer(t) or thousands_text(col.to_pylist()) is None


def _warn_identifiers(command, table, features):
    """Warn about feature columns that look like identifiers: text or whole numbers with a
    different value in every training row (at least ``ID_MIN_ROWS`` rows)."""
    from ._core.schema import ID_MIN_ROWS
    n = len(table) if hasattr(table, "iloc") else table.num_rows
    if n < ID_MIN_ROWS:
        return []
    ids = [c for c in features if _looks_like_ids(table, c, n)]
    if ids:
        _warn(command, "column(s) %s hold a different value in every training row, like an "
              "identifier, and are used as features; give --id %s (an ID copied to the "
              "output, not a feature) or --drop it" % (", ".join(map(repr, ids)), ids[0]))
    return ids


def _knn_command(args):
    """``hdist knn``: the options checked before any file is read, the training file read
    and fitted, the query file scored chunk by chunk into the output, and one line of
    figures on stderr."""
    job = _KnnJob(args)
    job.fit(*job.read_training())       # the training table is dropped once fitted
    job.score()
    print(job.summary(), file=sys.stderr)
    return 0


def _knn_what(args):
    """What ``hdist knn`` writes (``--what``, ``--predict``, ``--proba``, ``--target``):
    ``"neighbors"``, ``"predictions"`` or ``"both"``."""
    if args.k < 1:
        raise CLIError("--k must be >= 1, got %d" % args.k, EXIT_USAGE)
    if args.chunk_size < 1:
        raise CLIError("--chunk-size must be >= 1, got %d" % args.chunk_size, EXIT_USAGE)
    if args.predict or args.proba:
        if args.what not in (None, "predictions", "both"):
            raise CLIError("--predict/--proba write predictions; --what %s does not"
                           % args.what, EXIT_USAGE)
        what = args.what or "predictions"
    else:
        what = args.what or ("both" if args.target else "neighbors")
    if what in ("predictions", "both") and not args.target:
        raise CLIError("%s needs --target (the class column of the training file)"
                       % ("--proba" if args.proba else "--predict" if args.predict
                          else "--what " + what), EXIT_USAGE)
    return what


def _knn_metric(args, params, nominal, continuous, reading):
    """The unfitted metric of ``--metric`` and ``--param``, its parameters checked."""
    from ._search.resolve import resolve_metric
    try:
        metric = resolve_metric(args.metric, {"nominal": nominal or None,
                                              "continuous": continuous or None,
                                              "na_values": list(reading.na_values),
                                              **params}, what=None)
        metric.check_params()
    except (TypeError, ValueError) as e:
        raise CLIError("--metric %s / --param: %s" % (args.metric, e), EXIT_USAGE)
    return metric


class _KnnJob:
    """One run of ``hdist knn``: its options, checked by the constructor before any file
    is read (the output's path included), the index fitted on the training file, and the
    query rows scored."""

    def __init__(self, args):
        self.args = args
        self.what = _knn_what(args)
        _check_n_jobs(args.n_jobs)
        params = dict(parse_param(p) for p in args.param or ())
        self.nominal, self.continuous = _kind_options(args)
        self.ids, self.dropped, self.keep = (_split_names(args.id), _split_names(args.drop),
                                             _split_names(args.columns))
        _check_kind_options(params, _listed(self.nominal), _listed(self.continuous))
        self.reading = _reading_options(args)
        both = set(self.ids) & (set(self.dropped) | set(self.keep)
                                | set(_listed(self.nominal)) | set(_listed(self.continuous))
                                | {args.target})
        if both:
            raise CLIError("--id column(s) %s also given as a feature, --drop or --target "
                           "column" % ", ".join(map(repr, sorted(both, key=str))),
                           EXIT_USAGE)
        try:
            self.weights = _knn.check_weights(args.weights)
        except ValueError as e:
            raise CLIError(str(e), EXIT_USAGE)
        self.metric = _knn_metric(args, params, self.nominal, self.continuous, self.reading)
        self.out = _Output(args.output, {"--train": args.train, "--query": args.query})
        self.row0 = self.correct = self.scored = 0

    def read_training(self):
        """The training file's feature columns (the columns the options name checked
        against its header first) and their class codes (None without ``--target``)."""
        args = self.args
        nominal, continuous = _listed(self.nominal), _listed(self.continuous)
        _check_named_columns(_file_columns(args.query, "--query", self.reading), args.query,
                             options=[("--id", self.ids)], which="query")
        header = _file_columns(args.train, "--train", self.reading)
        _check_named_columns(header, args.train, args.target, [
            ("--drop", self.dropped), ("--columns", self.keep), ("--nominal", nominal),
            ("--continuous", continuous)])
        header = header or []
        train = read_table(args.train, _text_columns(self.nominal, self.continuous, header,
                                                     {args.target} | set(self.ids)),
                           "--train", reading=self.reading)
        columns = _columns_of(train)
        n_rows = len(train) if hasattr(train, "iloc") else train.num_rows
        if args.k > n_rows:
            raise CLIError("--k %d is larger than the %d training rows" % (args.k, n_rows),
                           EXIT_USAGE)
        labels = None
        if args.target:
            _check_target(args.target, columns, args.train)
            labels = _column_values(train, args.target)
        _check_columns(self.dropped, columns, "--drop", args.train)
        _check_columns(self.keep, columns, "--columns", args.train)
        features = [c for c in (self.keep or columns)
                    if c != args.target and c not in self.dropped and c not in self.ids]
        if not features:
            raise CLIError("no feature columns left in the training file %r after --target, "
                           "--id, --drop and --columns" % args.train, EXIT_USAGE)
        train = _select(train, features)
        _check_columns(nominal, features, "--nominal", args.train)
        _check_columns(continuous, features, "--continuous", args.train)
        self.reported = _warn_identifiers("knn", train, features)
        return train, self._class_codes(labels)

    def _class_codes(self, labels):
        """The codes of the ``--target`` column's ``labels`` (its classes kept), or None
        without one (a usage error for a metric that learns from classes)."""
        self.classes = None
        if labels is not None:
            from ._core.schema import encode_labels
            try:
                codes, self.classes = encode_labels(labels, len(labels))
            except ValueError as e:
                raise CLIError("--target column %r: %s" % (self.args.target, e))
            return codes
        if _knn.needs_labels(self.metric):
            raise CLIError("metric %r learns from classes: give --target" % self.metric.name,
                           EXIT_USAGE)
        return None

    def fit(self, train, codes):
        """The index of ``--algorithm`` fitted on the training features and classes."""
        args = self.args
        ivf = {k: v for k, v in (("n_lists", args.n_lists), ("n_probe", args.n_probe))
               if v is not None}
        if ivf and args.algorithm != "ivf":
            raise CLIError("--n-lists and --n-probe need --algorithm ivf", EXIT_USAGE)
        try:
            index = make_index(self.metric, args.algorithm, algorithm_params=ivf,
                               device=args.device)
        except (TypeError, ValueError) as e:
            raise CLIError(str(e).replace("n_lists", "--n-lists")
                           .replace("n_probe", "--n-probe"), EXIT_USAGE)
        t_fit = time.perf_counter()
        from ._core.plan import WeightRangeError
        try:
            with _warnings_to_stderr("knn", self.reported):
                index.fit(train, codes)
        except WeightRangeError as e:       # a --param refused once the columns are known
            raise CLIError("--metric %s / --param: %s" % (args.metric, e), EXIT_USAGE)
        except CudaUnavailableError as e:   # --device cuda without CuPy or a GPU
            raise CLIError("--device cuda: %s" % (e,))
        except (TypeError, ValueError) as e:
            raise CLIError("training file %r: %s" % (args.train, e))
        self.t_fit = time.perf_counter() - t_fit
        self.index, self.codes = index, codes
        self.metric = metric = getattr(index, "metric_", self.metric)
        if args.k > metric.n_train_:
            raise CLIError("--k %d is larger than the %d training rows"
                           % (args.k, metric.n_train_), EXIT_USAGE)
        self.kinds = dict(zip(metric.schema_.names_, metric.schema_.kinds_))

    def score(self):
        """Every chunk of the query file searched and written; the output renamed into
        place once all are (on any failure ``main`` removes the unfinished output)."""
        args = self.args
        show = args.progress if args.progress is not None else sys.stderr.isatty()
        progress = Progress(_count_rows(args.query) if show else None, show)
        self.start = time.perf_counter()
        warned = set()      # the query's warnings, each printed once per run
        try:
            for chunk, n in iter_query_chunks(args.query, self.kinds, args.chunk_size,
                                              self.ids, self.reading):
                base = progress.done
                self.out.write(self._chunk_columns(chunk, n, progress, warned))
                self.row0 += n
                progress.done = base + n
            self.out.commit()
        finally:
            progress.close()
        self.elapsed = time.perf_counter() - self.start

    def _chunk_columns(self, chunk, n, progress, warned):
        """The output's columns for one chunk of ``n`` query rows: the row numbers, the
        IDs, and the predictions and / or the neighbors."""
        args, row0, ids = self.args, self.row0, self.ids
        present = _columns_of(chunk)
        if row0 == 0:
            _check_columns(ids, present, "--id", args.query, "query")
        truth = None
        if args.target and args.target in present:
            truth = _column_values(chunk, args.target)
        cols = {"row": np.arange(row0, row0 + n)}
        for c in ids:
            cols[c] = _id_values(chunk, c)
        skip = set(self.dropped) | set(ids) | ({args.target} if args.target else set())
        rest = [c for c in present if c not in skip and (not self.keep or c in self.keep)]
        chunk = _in_order(_select(chunk, rest), list(self.kinds))
        predict = self.what in ("predictions", "both")
        dist, ind, votes = self._search(chunk, n, predict, progress, warned)
        if predict:
            classes = self.classes
            labels_out = np.asarray(classes, dtype=object)[_knn.vote_winner(votes)]
            cols["prediction"] = labels_out.tolist() if n else _no_values(classes)
            if args.proba:
                proba = _knn.vote_probabilities(votes)
                for j, c in enumerate(classes):
                    cols["proba_%s" % c] = proba[:, j]
            if truth is not None:
                c, s_ = _agreement(labels_out, truth)
                self.correct += c
                self.scored += s_
        if self.what in ("neighbors", "both"):
            for j in range(args.k):
                cols["neighbor_%d" % (j + 1)] = ind[:, j]
            for j in range(args.k):
                cols["distance_%d" % (j + 1)] = dist[:, j]
        return cols

    def _search(self, chunk, n, predict, progress, warned):
        """``(dist, ind, votes)`` of one chunk's rows (``votes`` None unless ``predict``):
        the estimators' vote, where with ties="include" every row tied with the k-th
        votes, tallied per class by the search (memory independent of the ties)."""
        args, k = self.args, self.args.k
        n_classes = len(self.classes) if predict else 0
        base = progress.done
        rows = "query file %r, rows %d..%d: " % (args.query, self.row0, self.row0 + n - 1)
        try:
            if n == 0:      # a query file without rows: the output's header only
                return _no_rows(chunk, self.kinds, args.query, k, n_classes)
            with _warnings_to_stderr("knn", self.reported, warned, rows):
                return _knn.search_votes(
                    self.index, chunk, k, self.weights, args.ties,
                    codes=self.codes if predict else None, n_classes=n_classes,
                    n_jobs=args.n_jobs,
                    progress=lambda done, _t, b=base: setattr(progress, "done", b + done))
        except (TypeError, ValueError) as e:
            raise CLIError(rows + _query_words(str(e)))

    def summary(self):
        """The run's figures: rows, time, rate, metric, algorithm, reader, threads, and
        the accuracy on the query file's classes when it has them."""
        args, metric, row0, elapsed = self.args, self.metric, self.row0, self.elapsed
        msg = ("hdist knn: %d query rows scored against %d training rows in %.2f s "
               "(%s rows/s; fit %.2f s); metric %s, algorithm %s, reader %s, %s threads"
               % (row0, metric.n_train_, elapsed,
                  format(int(row0 / max(elapsed, 1e-9)), ","), self.t_fit, metric.name,
                  getattr(self.index, "algorithm_", args.algorithm),
                  "parquet" if _is_parquet(args.query) else reader_name(),
                  effective_threads(args.n_jobs)))
        if self.scored:
            msg += "; accuracy on the query file's %r column: %.4f (%d rows)" \
                % (args.target, self.correct / self.scored, self.scored)
        return msg


def effective_threads(n_jobs):
    from ._core.threads import effective_n_jobs
    return effective_n_jobs(n_jobs)


def _check_n_jobs(n_jobs):
    """``--n-jobs``: a usage CLIError for 0, before any work."""
    try:
        effective_threads(n_jobs)
    except (TypeError, ValueError):
        raise CLIError("--n-jobs must be a positive count of threads, or negative (-1: "
                       "every core, -2: all but one, ...), got %r" % (n_jobs,), EXIT_USAGE)


def _no_rows(chunk, kinds, path, k, n_classes):
    """The (empty) neighbors and votes of a query file without rows, once its columns
    are checked against the training columns ``kinds``."""
    lacking = [c for c in kinds if c not in _columns_of(chunk)]
    if lacking:
        raise CLIError("the query file %r lacks the training column(s) %s"
                       % (path, ", ".join(map(repr, lacking))))
    return (np.empty((0, k)), np.empty((0, k), dtype=np.int64),
            np.zeros((0, n_classes)) if n_classes else None)


def _no_values(like):
    """An empty column of the type of the values ``like`` (the output of a query file
    without rows keeps the types of a Parquet output)."""
    try:
        import pyarrow as pa
        return pa.array(list(like)).slice(0, 0)
    except (ImportError, ValueError, TypeError):
        return []


def _kind_options(args):
    """``--nominal`` and ``--continuous``: each a list of column names, or one of the
    words ``all`` (every feature column) and ``rest`` (every feature column the other
    option does not name), as the API's ``nominal=`` / ``continuous=`` take them."""
    specs = []
    for option, values in (("--nominal", args.nominal), ("--continuous", args.continuous)):
        names = _split_names(values)
        words = [c for c in names if c in ("all", "rest")]
        if words and len(names) > 1:
            raise CLIError("%s %s names columns by itself; give it alone, not with other "
                           "column names" % (option, words[0]), EXIT_USAGE)
        specs.append(words[0] if words else names)
    return specs


def _listed(spec):
    """The column names of a ``--nominal`` / ``--continuous`` value (none for a word)."""
    return spec if isinstance(spec, list) else []


def _text_columns(nominal, continuous, header, skip):
    """The columns of a file with the columns ``header`` to read as text for
    ``--nominal`` (``skip``: the target and ID columns, not features)."""
    if nominal == "all":
        return [c for c in header if c not in skip]
    if nominal == "rest":
        return [c for c in header if c not in skip and c not in _listed(continuous)]
    return nominal


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


def _cv_names(name):
    """The attribute names of a bundled dataset, in the order of :func:`_cv_data`'s
    columns."""
    from .datasets import summary
    return summary(name)["features"]


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
    from ._search.metric import METRICS
    names = []
    for info in METRICS.values():
        if info.name not in names:
            names.append(info.name)
    return names


def cross_validate(metric_name, X, y, nominal, folds, k=1, n_jobs=None, weights="uniform",
                   ties="index"):
    """Accuracy of k-NN under ``folds`` (fold number per row) with preset
    ``metric_name``; returns ``(accuracy, note)``.  A preset that compares nominal
    attributes only is run on the nominal columns (note ``"nominal columns only"``).
    ``ties`` as in the estimators: ``"include"`` lets every training row tied with the
    k-th neighbour vote, ``"index"`` the first k by row order."""
    pred, note = cross_val_predict(metric_name, X, y, nominal, folds, k, n_jobs, weights,
                                   ties)
    return float(np.mean(pred == y)), note


def cross_val_predict(metric_name, X, y, nominal, folds, k=1, n_jobs=None, weights="uniform",
                      ties="index", task="classification"):
    """The k-NN prediction of every row from the other folds (``folds``: fold number per
    row) with preset ``metric_name``: a class code (majority vote, ties to the smallest
    code) or, with ``task="regression"``, the mean target of the neighbours.  Returns
    ``(predictions, note)``; ``X`` is float64 with the nominal columns ``nominal`` coded,
    every other column continuous."""
    from ._search.metric import METRICS
    from ._search.resolve import resolve_metric
    info = METRICS[metric_name]
    note = None
    if task == "regression" and info.needs_y:
        raise ValueError("learns from classes, which a regression target does not have")
    if info.continuous is None and len(nominal) < X.shape[1]:
        if not nominal:
            raise ValueError("compares nominal attributes only and the data has none")
        X = X[:, nominal]
        nominal = list(range(len(nominal)))
        note = "nominal columns only"
    C = int(y.max()) + 1 if task != "regression" else 0
    pred = np.empty(len(y), dtype=np.float64 if task == "regression" else np.int64)
    for f in range(int(folds.max()) + 1):
        test = folds == f
        if not test.any():
            continue
        metric = resolve_metric(metric_name, {"nominal": nominal, "continuous": "rest"},
                                what=None)
        index = make_index(metric)
        index.fit(X[~test], None if task == "regression" else y[~test])
        Xq = X[test]
        # with ties="include" the search tallies the rows tied with the k-th
        ytr = y[~test]
        if task == "regression":
            pred[test] = _knn.search_votes(index, Xq, k, weights, ties, n_jobs=n_jobs,
                                           values=ytr.astype(np.float64))[2]
        else:
            pred[test] = _knn.vote_winner(_knn.search_votes(
                index, Xq, k, weights, ties, n_jobs=n_jobs, codes=ytr, n_classes=C)[2])
    return pred, note


def classification_scores(y, pred, n_classes):
    """Accuracy, balanced accuracy (the mean recall of the classes present), Cohen's kappa
    (Cohen 1960: ``(p_o - p_e) / (1 - p_e)``, NaN when ``p_e = 1``) and the confusion
    matrix (rows: true class, columns: predicted, both in class-code order) of class
    codes ``pred`` against ``y``."""
    from ._search.scoring import balanced_accuracy
    conf = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(conf, (y, pred), 1)
    n = conf.sum()
    po = np.trace(conf) / n
    pe = float(np.dot(conf.sum(axis=1), conf.sum(axis=0))) / (n * n)
    kappa = (po - pe) / (1.0 - pe) if pe < 1.0 else math.nan
    return {"accuracy": float(po), "balanced_accuracy": balanced_accuracy(y, pred),
            "kappa": float(kappa), "confusion": conf}


def regression_scores(y, pred):
    """Root mean squared error and mean absolute error of ``pred`` against ``y``."""
    err = np.asarray(pred, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    return {"rmse": float(np.sqrt(np.mean(err * err))), "mae": float(np.mean(np.abs(err)))}


def kfolds(n, n_folds, seed=0):
    """Fold number of each of ``n`` rows for regression: the rows shuffled (numpy's PCG64
    with ``seed``) and dealt round-robin, so folds differ in size by at most one."""
    fold = np.empty(n, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % n_folds
    return fold


#: a numeric --target with a fractional value or more distinct values than this is taken
#: for a continuous one (refused unless --task says what to do with it)
CLASS_LIMIT = 20


def _target_looks_continuous(values):
    """``(bool, why)``: whether a numeric target column looks continuous."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    distinct = len(np.unique(v))
    if not np.array_equal(v, np.floor(v)):
        return True, "numbers with fractional parts, %d distinct values" % distinct
    if distinct > CLASS_LIMIT:
        return True, "%d distinct whole numbers" % distinct
    return False, ""


def _cv_file_data(args):
    """``--train FILE --target COL`` as :func:`_cv_data` returns a bundled dataset:
    float64 columns (nominal ones as codes of their values, ``NaN`` missing), target
    codes (the class of each row; float targets with ``--task regression``), the nominal
    positions, and the class labels (None for regression).  Each column's kind comes from
    the one rule the metrics apply (docs/metrics.md, section 1), fitted once on the whole
    file; codes stand for exactly one value each, so no distance changes."""
    if not args.target:
        raise CLIError("--train needs --target (the class column)", EXIT_USAGE)
    if args.datasets:
        raise CLIError("give --train or --datasets, not both", EXIT_USAGE)
    nominal, continuous = _kind_options(args)
    _check_kind_options({}, _listed(nominal), _listed(continuous))
    reading = _reading_options(args)
    ids, dropped = _split_names(args.id), _split_names(args.drop)
    named = [("--nominal", _listed(nominal)), ("--continuous", _listed(continuous)),
             ("--drop", dropped), ("--id", ids)]
    header = _file_columns(args.train, "--train", reading)
    _check_named_columns(header, args.train, args.target, named)
    table = read_table(args.train, _text_columns(nominal, continuous, header or [],
                                                 {args.target} | set(ids)),
                       "--train", reading=reading)
    columns = _columns_of(table)
    _check_target(args.target, columns, args.train)
    _check_columns(_listed(nominal), columns, "--nominal", args.train)
    _check_columns(_listed(continuous), columns, "--continuous", args.train)
    _check_columns(dropped, columns, "--drop", args.train)
    _check_columns(ids, columns, "--id", args.train)
    y, classes = _cv_target(args, table)
    features = [c for c in columns if c != args.target and c not in ids and c not in dropped]
    if not features:
        raise CLIError("no feature columns left in %r" % args.train, EXIT_USAGE)
    table = _select(table, features)
    reported = _warn_identifiers("cv", table, features)
    from ._core.schema import Schema
    schema = Schema(_spec_within(nominal, features), _spec_within(continuous, features),
                    list(reading.na_values))
    try:
        with _warnings_to_stderr("cv", reported):
            cont, nom = schema.fit_encode(table, allow_empty=True)
    except (TypeError, ValueError) as e:
        raise CLIError("training file %r: %s" % (args.train, e))
    X = np.empty((len(y), len(features)))
    ic = inom = 0
    positions = []
    for j, kind in enumerate(schema.kinds_):
        if kind == "continuous":
            X[:, j] = cont[:, ic]
            ic += 1
        else:
            X[:, j] = np.where(nom[:, inom] >= 0, nom[:, inom], np.nan)
            positions.append(j)
            inom += 1
    return X, y, positions, classes, features


def _spec_within(spec, features):
    """A ``--nominal`` / ``--continuous`` value for the Schema of the feature columns."""
    if not isinstance(spec, list):
        return spec
    return [c for c in spec if c in features] or None


def _cv_target(args, table):
    """The ``--target`` column: ``(class codes, class labels)`` for classification,
    ``(float64 targets, None)`` for ``--task regression``."""
    from ._core.schema import encode_labels
    labels = _column_values(table, args.target)
    numeric = _is_numeric(table, args.target)
    if args.task == "regression":
        if not numeric:
            raise CLIError("--task regression needs numbers in the --target column %r"
                           % args.target)
        y = np.asarray(labels, dtype=np.float64)
        if np.isnan(y).any():
            raise CLIError("--target column %r has missing values (row %d); every row "
                           "needs a target" % (args.target, int(np.flatnonzero(np.isnan(y))[0])))
        return y, None
    if numeric and args.task is None:
        cont, why = _target_looks_continuous(labels)
        if cont:
            raise CLIError(
                "--target column %r looks continuous (%s); hdist cv classifies by default: "
                "give --task regression for the RMSE and MAE of k-NN regression, or --task "
                "classification to take each value for a class" % (args.target, why),
                EXIT_USAGE)
    try:
        y, classes = encode_labels(labels, len(labels))
    except ValueError as e:
        raise CLIError("--target column %r: %s" % (args.target, e))
    return np.asarray(y, dtype=np.int64), [str(c) for c in classes]


def _cv_classes(name):
    """The class labels of a bundled dataset, in the order of :func:`_cv_data`'s codes."""
    from .datasets import load_dataset
    return np.unique(load_dataset(name, as_frame=False)[1].astype(str)).tolist()


def _format_cells(values, fmt, width):
    return "".join("%*s" % (width, fmt(v) if v is not None and v == v else "--")
                   for v in values)


def _confusion_text(conf, classes):
    """A confusion matrix as Weka prints it: a letter per class heading the columns
    (predicted), one row per true class ending in ``| a = label``."""
    letters = [_letter(i) for i in range(len(classes))]
    width = max(5, len(str(int(conf.max()))) + 1, max(len(x) for x in letters) + 1)
    lines = ["".join("%*s" % (width, x) for x in letters) + "   <-- classified as"]
    for i, row in enumerate(conf):
        lines.append("".join("%*d" % (width, v) for v in row)
                     + " | %*s = %s" % (max(len(x) for x in letters), letters[i], classes[i]))
    return lines


def _letter(i):
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(ord("a") + r) + out
    return out


def _cv_command(args):
    from .datasets import list_datasets, summary
    names = _split_names(args.datasets) or list(DEFAULT_CV_DATASETS)
    if args.train:
        names = []
    elif args.target or args.id or args.drop or args.nominal or args.continuous:
        raise CLIError("--target, --id, --drop, --nominal and --continuous go with "
                       "--train FILE", EXIT_USAGE)
    elif args.task == "regression":
        raise CLIError("--task regression goes with --train FILE (the bundled datasets are "
                       "classification tasks)", EXIT_USAGE)
    for n in names:
        try:
            summary(n)          # a known name (or alias)
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
    _check_n_jobs(args.n_jobs)
    csv_out = _Output(args.csv, {"--train": args.train}, "--csv") if args.csv else None
    regression = args.task == "regression"
    out = sys.stdout
    start = time.perf_counter()
    data, columns = {}, {}
    for n in names:
        X, y, nominal = _cv_data(n)
        data[n] = (X, y, nominal, stratified_folds(y, args.folds, args.seed), _cv_classes(n))
        columns[n] = _cv_names(n)
    if args.train:
        X, y, nominal, classes, features = _cv_file_data(args)
        names = [os.path.basename(args.train)]
        folds = kfolds(len(y), args.folds, args.seed) if regression else \
            stratified_folds(y, args.folds, args.seed)
        data[names[0]] = (X, y, nominal, folds, classes)
        columns[names[0]] = features
    for n, d in data.items():
        fewest = len(d[1]) - int(np.bincount(d[3]).max())
        if args.k > fewest:
            raise CLIError("--k %d is larger than the %d training rows of %s's smallest "
                           "training folds (%d folds of %d rows)"
                           % (args.k, fewest, n, args.folds, len(d[1])), EXIT_USAGE)
    if regression:
        print("hdist %d-fold cross-validated %d-NN regression: root mean squared error, seed "
              "%d, ties %s; time per cell in seconds" % (args.folds, args.k, args.seed,
                                                          args.ties), file=out)
    else:
        print("hdist %d-fold stratified cross-validated %d-NN accuracy (%%), seed %d, ties "
              "%s; time per cell in seconds" % (args.folds, args.k, args.seed, args.ties),
              file=out)
    print("datasets: " + "; ".join(
        "%s %d rows, %d nominal + %d continuous" % (n, len(d[1]), len(d[2]),
                                                   d[0].shape[1] - len(d[2]))
        for n, d in data.items()), file=out)
    width = max(14, max(len(n) for n in names) + 2)
    mw = max(len(m) for m in metrics) + 3
    print("%-*s" % (mw, "metric") + "".join("%*s" % (width, n) for n in names), file=out)
    notes = []
    results = []
    warned = {}
    for m in metrics:
        cells = []
        for n in names:
            X, y, nominal, folds, classes = data[n]
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    pred, note = cross_val_predict(m, X, y, nominal, folds, args.k,
                                                   args.n_jobs, ties=args.ties,
                                                   task=args.task or "classification")
                    scores = regression_scores(y, pred) if regression else \
                        classification_scores(y, pred, len(classes))
                except (TypeError, ValueError) as e:
                    scores, note = None, "skipped: %s" % e
            used = columns[n] if note != "nominal columns only" else \
                [columns[n][j] for j in nominal]
            _note_warnings(caught, n, used, warned, m)
            dt = time.perf_counter() - t0
            mark = ""
            if note:
                if note not in notes:
                    notes.append(note)
                mark = "*" * (notes.index(note) + 1)
            if scores is None:
                cells.append("  --" + mark)
            elif regression:
                cells.append("%10.4g %5.2fs%s" % (scores["rmse"], dt, mark))
            else:
                cells.append("%6.2f %5.2fs%s" % (100 * scores["accuracy"], dt, mark))
            results.append({"metric": m, "dataset": n, "seconds": dt, "note": note or "",
                            "scores": scores})
        print("%-*s" % (mw, m) + "".join("%*s" % (width, c) for c in cells), file=out)
        out.flush()
    for i, note in enumerate(notes):
        print("%s %s" % ("*" * (i + 1), note), file=out)
    _print_more_scores(results, metrics, names, data, regression, mw, width, out)
    total = time.perf_counter() - start
    print("total %.1f s (%d metrics x %d datasets x %d folds)"
          % (total, len(metrics), len(names), args.folds), file=out)
    for text, cells in warned.values():
        _warn("cv", "%s (in the folds of %s)" % (text, ", ".join(cells)))
    if csv_out is not None:
        _write_cv_csv(csv_out, results, regression)
    return 0


def _note_warnings(caught, dataset, names, warned, metric):
    """The user warnings of one cell of ``hdist cv`` (``metric``'s folds on ``dataset``),
    the columns named by their ``names`` where the fits saw positions, gathered in
    ``warned`` (the message's :func:`_once_key` -> ``[message, metrics whose folds
    raised it]``) to be printed once per run; other warnings go on."""
    from ._core.schema import ColumnKindWarning

    def name(text):
        return names[int(text)] if text.isdigit() and int(text) < len(names) else text
    for w in caught:
        if not issubclass(w.category, UserWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        if isinstance(w.message, ColumnKindWarning):
            text = _kind_warning([(name(str(c)), why) for c, why in w.message.columns])
        else:
            text = re.sub(r"column '(\d+)'", lambda g: "column %r" % name(g.group(1)),
                          _query_words(str(w.message), "a test fold"))
        text = "%s: %s" % (dataset, text)
        cells = warned.setdefault(_once_key(text), [text, []])[1]
        if metric not in cells:
            cells.append(metric)


def _score(results, m, n, key):
    for r in results:
        if r["metric"] == m and r["dataset"] == n:
            return None if r["scores"] is None else r["scores"][key]
    return None


def _print_more_scores(results, metrics, names, data, regression, mw, width, out):
    """The tables after the first: balanced accuracy, Cohen's kappa and the confusion
    matrix of the metric with the highest balanced accuracy on each dataset (MAE for
    regression)."""
    tables = [("mean absolute error", "mae", lambda v: "%.4g" % v)] if regression else \
        [("balanced accuracy (%)", "balanced_accuracy", lambda v: "%.2f" % (100 * v)),
         ("Cohen's kappa", "kappa", lambda v: "%.3f" % v)]
    for title, key, fmt in tables:
        print("\n" + title, file=out)
        print("%-*s" % (mw, "metric") + "".join("%*s" % (width, n) for n in names), file=out)
        for m in metrics:
            print("%-*s" % (mw, m) + _format_cells([_score(results, m, n, key)
                                                    for n in names], fmt, width), file=out)
    if regression:
        print("", file=out)
        return
    print("\nconfusion matrix (rows: true class, columns: predicted) of the metric with "
          "the highest balanced accuracy", file=out)
    for n in names:
        scored = [(r["scores"]["balanced_accuracy"], -metrics.index(r["metric"]), r)
                  for r in results if r["dataset"] == n and r["scores"] is not None]
        if not scored:
            continue
        best = max(scored, key=lambda t: t[:2])[2]
        print("%s, %s (balanced accuracy %.2f %%, kappa %.3f):"
              % (n, best["metric"], 100 * best["scores"]["balanced_accuracy"],
                 best["scores"]["kappa"]), file=out)
        for line in _confusion_text(best["scores"]["confusion"], data[n][4]):
            print("  " + line, file=out)
    print("", file=out)


def _write_cv_csv(out, results, regression):
    """The results of ``hdist cv`` into ``out`` (an :class:`_Output`), one row per cell;
    the scores of a skipped cell are empty."""
    keys = ["rmse", "mae"] if regression else ["accuracy", "balanced_accuracy", "kappa"]
    fields = ["metric", "dataset"] + keys + ["seconds", "note"] + \
        ([] if regression else ["confusion"])
    cols = {f: [] for f in fields}
    for r in results:
        sc = r["scores"]
        row = {"metric": r["metric"], "dataset": r["dataset"], "seconds": r["seconds"],
               "note": r["note"]}
        if sc is not None:
            row.update({k: sc[k] for k in keys})
            if not regression:
                row["confusion"] = json.dumps(sc["confusion"].tolist())
        for f in fields:
            cols[f].append(row.get(f, None if f in keys else ""))
    out.write(cols)
    out.commit()


# ----------------------------------------------------------------------------------------
# info, datasets


def _info_command(args):
    from ._core.config import show_config
    show_config()
    return 0


def _datasets_command(args):
    from .datasets import describe, list_datasets, splits, summary
    if args.name:
        try:
            print(describe(args.name))
        except ValueError as e:
            raise CLIError(str(e), EXIT_USAGE)
        return 0
    print("%-14s %-22s %6s %8s %10s %8s  %s" % ("name", "file", "rows", "nominal",
                                                 "continuous", "missing", "classes"))
    for name in list_datasets():
        for split in splits(name):
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

    kn = sub.add_parser(
        "knn", help="score a query file against a training file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Find the k nearest training rows of every row of a query file, and/or "
        "predict its class by their vote.  Both files are CSV or Parquet with a header; "
        "the query file is read and written in chunks, so it may be far larger than "
        "memory.  Output: one line per query row, in order (see docs/cli.md).",
        epilog="""examples:
  # predictions and class probabilities, an ID column carried through, Parquet out
  hdist knn --train train.csv --query test.csv --target income --id person_id \\
            --predict --proba --k 5 --metric hvdm -o predictions.parquet

  # the 3 nearest training rows of each query row, two columns left out
  hdist knn --train train.csv --query test.csv --drop notes --drop batch --k 3

exit status: 0 done, 2 usage error (bad option or value), 1 a file or its columns
cannot be used.""")
    kn.add_argument("--train", required=True, help="training file (.csv or .parquet)")
    kn.add_argument("--query", required=True, help="query file (.csv or .parquet), read "
                    "in chunks")
    kn.add_argument("--target", help="class column of the training file (needed for "
                    "predictions and for metrics that learn from classes); dropped from "
                    "the query file if present there, and then used to report accuracy")
    kn.add_argument("--id", action="append", metavar="COL",
                    help="ID column of the query file, copied to the output unchanged "
                    "and not used as a feature (also dropped from the training file if "
                    "there); repeatable, or comma-separated")
    kn.add_argument("--drop", action="append", metavar="COL",
                    help="column(s) not to use as features; repeatable, or comma-separated")
    kn.add_argument("--columns", action="append", metavar="COLS",
                    help="comma-separated feature columns to use (default: all but "
                    "--target, --id and --drop)")
    kn.add_argument("--k", type=int, default=5, help="number of neighbors (default 5)")
    kn.add_argument("--metric", default="heom", help="metric preset (default heom)")
    kn.add_argument("--param", action="append", metavar="KEY=VALUE",
                    help="metric parameter, repeatable (values read as JSON: p=1.5, "
                    "missing='{\"continuous\": \"max\"}')")
    kn.add_argument("--nominal", action="append", metavar="COLS",
                    help="comma-separated columns to take as nominal (read as text); the "
                    "kinds of the others are inferred (numbers continuous, text nominal)")
    _add_reading_options(kn)
    kn.add_argument("--weights", default="uniform", help="vote weights: uniform, distance "
                    "or dudani (default uniform)")
    kn.add_argument("--ties", default="include", choices=["include", "index"],
                    help="which rows vote when several sit at the k-th distance: every one "
                    "(include, default; Weka's IBk, R's class::knn, the estimators' default) "
                    "or exactly k by training position (index)")
    kn.add_argument("--algorithm", default="auto",
                    choices=["auto", "brute", "kd_tree", "ball_tree", "ivf"],
                    help="search structure (default auto); ivf is approximate: inverted "
                    "lists around training rows, exact distances, some true neighbors "
                    "may be missed (docs/ivf.md)")
    kn.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where the neighbors are searched (default cpu); cuda: on a CUDA "
                    "GPU by brute force (needs CuPy: pip install 'hdist[cuda]'; --algorithm "
                    "auto or brute), the same neighbors as on the CPU (docs/guide/gpu.md)")
    kn.add_argument("--n-lists", type=int, default=None,
                    help="--algorithm ivf: number of lists (default round(4 sqrt(n)))")
    kn.add_argument("--n-probe", type=int, default=None,
                    help="--algorithm ivf: lists scanned per query (default: chosen at fit "
                    "for recall@10 0.95 on training rows)")
    kn.add_argument("--predict", action="store_true",
                    help="write the predicted class of each query row (needs --target)")
    kn.add_argument("--proba", action="store_true",
                    help="also write the vote share of each class, proba_<class> "
                    "(implies --predict)")
    kn.add_argument("--what", choices=["neighbors", "predictions", "both"],
                    help="what to write (default: predictions with --predict, both with "
                    "--target, else neighbors)")
    kn.add_argument("--output", "-o", help="output file: .csv, .tsv, .csv.gz, .tsv.gz, "
                    ".parquet or .pq (default: CSV on standard output); other names are "
                    "refused")
    kn.add_argument("--n-jobs", type=int, default=None, help="threads (default: all "
                    "usable cores)")
    kn.add_argument("--chunk-size", type=int, default=100_000,
                    help="query rows per chunk (default 100000)")
    kn.add_argument("--progress", dest="progress", action="store_true", default=None,
                    help="show the progress line even when stderr is not a terminal")
    kn.add_argument("--no-progress", dest="progress", action="store_false",
                    help="no progress line (shown by default when stderr is a terminal)")

    sub.add_parser("info", help="versions, compiler, OpenMP and threads")
    ds = sub.add_parser("datasets", help="list the bundled datasets, or describe one")
    ds.add_argument("name", nargs="?", help="dataset to describe")
    return p


def _add_reading_options(p):
    from ._core.schema import NA_VALUES
    p.add_argument("--continuous", action="append", metavar="COLS",
                   help="comma-separated columns to take as continuous (their values must "
                   "be numbers; no warning about code-like numbers)")
    p.add_argument("--na-values", action="append", metavar="TEXTS",
                   help="comma-separated text read as a missing value in every column of "
                   "both files, replacing the default list (%s); an empty field is always "
                   "missing" % " ".join(repr(v) for v in NA_VALUES if v))
    p.add_argument("--sep", metavar="CHAR", help="field separator of CSV files (default: "
                   "a comma, a tab for .tsv files; 'tab' for a tab)")


def _add_cv_options(p):
    p.add_argument("--datasets", action="append", metavar="NAMES",
                   help="comma-separated bundled datasets (default: %s)"
                   % ",".join(DEFAULT_CV_DATASETS))
    p.add_argument("--train", metavar="FILE", help="your own labelled file (.csv or "
                   ".parquet) instead of bundled datasets; needs --target")
    p.add_argument("--target", metavar="COL", help="class column of --train")
    p.add_argument("--nominal", action="append", metavar="COLS",
                   help="comma-separated columns of --train to take as nominal (the kinds "
                   "of the others are inferred: numbers continuous, text nominal)")
    _add_reading_options(p)
    p.add_argument("--task", choices=["classification", "regression"],
                   help="with --train: classification (accuracy, balanced accuracy, "
                   "Cohen's kappa, confusion matrix; a --target that looks continuous is "
                   "refused unless this is given) or regression (RMSE and MAE of the "
                   "neighbours' mean target)")
    p.add_argument("--id", action="append", metavar="COL",
                   help="column(s) of --train that are not features (IDs)")
    p.add_argument("--drop", action="append", metavar="COL",
                   help="column(s) of --train not to use as features")
    p.add_argument("--metrics", action="append", metavar="NAMES",
                   help="comma-separated presets (default: every preset registered)")
    p.add_argument("--folds", type=int, default=10, help="folds (default 10)")
    p.add_argument("--k", type=int, default=1, help="neighbors (default 1)")
    p.add_argument("--seed", type=int, default=0, help="fold shuffling seed (default 0)")
    p.add_argument("--n-jobs", type=int, default=None, help="threads")
    p.add_argument("--ties", default="index", choices=["index", "include"],
                   help="rows tied with the k-th neighbour: the first k by row order vote "
                   "(index, the default: the published tables' rule) or all of them "
                   "(include, as the estimators do by default)")
    p.add_argument("--csv", help="also write the results to this file, atomically (.csv, "
                   ".tsv, .csv.gz, .tsv.gz, .parquet or .pq; other names are refused)")


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
    with _terminate_as_interrupt():
        try:
            return _COMMANDS[command](args)
        except CLIError as e:
            print("hdist %s: error: %s%s" % (command, e, _not_written()), file=sys.stderr)
            return e.status
        except Terminated as e:
            print("hdist %s: terminated (%s)%s" % (command, signal.Signals(e.signum).name,
                                                   _not_written()), file=sys.stderr)
            return 128 + e.signum
        except KeyboardInterrupt:
            print("hdist %s: interrupted%s" % (command, _not_written()), file=sys.stderr)
            return EXIT_SIGINT
        except MemoryError as e:
            print("hdist %s: error: out of memory%s; a smaller --chunk-size, --k or query "
                  "file needs less%s" % (command, ": %s" % e if str(e) else "",
                                         _not_written()), file=sys.stderr)
            return EXIT_DATA
        finally:
            for out in list(_PENDING):
                out.abort()


def _not_written():
    """The end of a failure's message: the outputs left unwritten (a file already under
    their name unchanged), whose temporary files are removed by ``main``."""
    names = [o.path for o in _PENDING if o.path not in (None, "-")]
    if not names:
        return ""
    return "; nothing written to %s (a file already there is left as it was)" \
        % ", ".join(map(repr, names))


@contextlib.contextmanager
def _terminate_as_interrupt():
    """Each of ``STOP_SIGNALS`` (SIGTERM, SIGHUP, SIGQUIT) raises :class:`Terminated` in
    the main thread while the command runs, so that it stops as for Ctrl-C (outputs
    removed, exit status 128 + the signal's number: 143, 129, 131); the previous handlers
    are restored after.  Elsewhere than in the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated(signum)
    previous = {}
    try:
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, handler)
    except (ValueError, OSError):
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
