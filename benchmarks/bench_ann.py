"""Approximate 10-NN on census-like tables: recall@10 against queries per second, hdist and
its peers in one process.

Data: the table of benchmarks/make_census_like.py (30 nominal columns with 2 to 50 values,
10 continuous, a two-class target) drawn as numbers: ``--rows`` reference rows (default
10**6) and ``--queries`` query rows (default 10**4) drawn separately, never training rows.

Cases: HEOM without missing values, HEOM with 5 % of the cells missing, Gower (5 %
missing), HVDM (5 % missing, the table's class).  For each case:

- hdist exact brute force (``NeighborsIndex(metric, algorithm="brute")``): queries/s on a
  fixed sample of the queries (``--exact-queries``), whose results are the ground truth;
- hdist's inverted-file index (``algorithm="ivf"``), where this hdist has it: build time,
  peak memory during the build (tracemalloc's peak and the process' resident-set growth,
  sampled every 5 ms) against the encoded reference rows, then recall@10 and queries/s
  over an ``n_probe`` sweep;
- peers: faiss ``IndexIVFFlat`` on the exact HEOM embedding (HEOM, no missing values:
  continuous columns range-scaled by the training minimum and maximum, each nominal column
  one-hot with entries 1/sqrt(2), so that squared L2 is HEOM squared), with hdist's number of
  lists and the same ``nprobe`` sweep, its embedding checked first by an exact
  ``IndexFlatL2`` search; faiss ``METRIC_GOWER`` (Gower: categories coded as negative
  numbers, continuous columns range-scaled into [0, 1], a query value outside the training
  range clipped, as faiss requires; missing values as NaN, which it skips as hdist's Gower
  does) with ``IndexFlat`` (exact, on ``--faiss-gower-queries`` queries), ``IndexHNSWFlat``
  and ``IndexIVFFlat`` (its k-means refuses NaN: trained on the complete rows); pynndescent
  with a numba implementation of hdist's Gower.  The graph and IVF Gower peers build
  slowly, so they index the first ``--gower-peer-rows`` reference rows; hdist exact and
  hdist ivf are then run on the same rows for a matched comparison.

Recall@10 of a query: the fraction of its 10 returned rows whose true distance is at most the
exact 10th distance (a row tied with the 10th counts as found); the mean over the queries of
the exact sample.  The peers' returned rows get their true distances from plain
numpy/numba implementations of HEOM and Gower here.

Then the ratios the targets speak of: hdist ivf's queries/s at recall >= 0.95 and >= 0.99
over exact brute force's, and at recall >= 0.95 over faiss IVFFlat (HEOM) and faiss
METRIC_GOWER (Gower); and a recall-speed plot (``--plot``).

Run alone on the machine (``flock /work/bench.lock`` where several people share it)::

    python benchmarks/bench_ann.py [--rows 1000000] [--queries 10000] [--quick]
                                   [--plot docs/ann_recall.png]

``--quick``: 10**5 rows, 2 000 queries.  ``--profiles P``: the rows drawn around P
profiles (records of a kind resembling each other, as census records do; see
``make_census_like.codes``) instead of every column on its own -- data with neighbour
structure, which the default table lacks.  Peers that are not installed are skipped with a
message (``pip install -e ".[bench]"`` installs them).
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import threading
import time
import tracemalloc

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hdist  # noqa: E402
from bench_scaling import cpu_name  # noqa: E402
from make_census_like import LEVELS, N_CONTINUOUS, N_NOMINAL, codes  # noqa: E402

K = 10
NOMINAL = list(range(N_NOMINAL))
#: recall levels the ratios are taken at
LEVELS_OF_RECALL = (0.95, 0.99)
#: a sweep stops once recall reaches this
ENOUGH = 0.999
PEERS = ("faiss", "pynndescent")
CASES = {
    "heom": ("heom", 0.0, "HEOM, no missing values"),
    "heom-missing": ("heom", 0.05, "HEOM, 5 % missing"),
    "gower": ("gower", 0.05, "Gower, 5 % missing"),
    "hvdm": ("hvdm", 0.05, "HVDM, 5 % missing"),
}


# -- the machine -----------------------------------------------------------------------
def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def versions():
    out = ["python %s" % sys.version.split()[0], "numpy %s" % np.__version__,
           "hdist %s" % hdist.__version__]
    for name in ("faiss", "pynndescent", "numba", "psutil", "matplotlib"):
        try:
            mod = __import__(name)
            out.append("%s %s" % (name, getattr(mod, "__version__", "?")))
        except ImportError:
            out.append("%s not installed" % name)
    return ", ".join(out)


# -- measuring -------------------------------------------------------------------------
def rss():
    """Resident set size of this process in bytes (psutil, else /proc/self/statm)."""
    try:
        import psutil
        return psutil.Process().memory_info().rss
    except ImportError:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measured(fn, trace=True):
    """``fn()`` timed, with its peak memory: returns (result, seconds, tracemalloc peak
    bytes or None, peak resident-set growth in bytes sampled every 5 ms)."""
    base = rss()
    peak = [base]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.005):
            peak[0] = max(peak[0], rss())

    th = threading.Thread(target=sample, daemon=True)
    if trace:
        tracemalloc.start()
    th.start()
    t = time.perf_counter()
    try:
        out = fn()
    finally:
        dt = time.perf_counter() - t
        stop.set()
        th.join()
        traced = tracemalloc.get_traced_memory()[1] if trace else None
        if trace:
            tracemalloc.stop()
    peak[0] = max(peak[0], rss())
    return out, dt, traced, peak[0] - base


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def recall(ind, dist_of, d_exact):
    """Recall@k of returned rows ``ind`` [q, k] (-1: none) against the exact k-NN
    distances ``d_exact`` [q, k]: a returned row counts when its true distance
    (``dist_of(ind)``, [q, k]) is at most the exact k-th distance, within 1e-9 relative
    (the peers' own distances are float32 or computed otherwise)."""
    k = d_exact.shape[1]
    kth = d_exact[:, k - 1:k]
    d = np.where(ind[:, :k] >= 0, dist_of(ind[:, :k]), np.inf)
    return float(np.mean(np.sum(d <= kth * (1 + 1e-9) + 1e-12, axis=1) / k))


# -- distances of returned rows (references for the peers) ------------------------------
class Scaled:
    """The training minimum and range of each continuous column (NaN skipped)."""

    def __init__(self, X):
        C = X[:, N_NOMINAL:]
        self.lo = np.nanmin(C, axis=0)
        self.span = np.nanmax(C, axis=0) - self.lo

    def __call__(self, X, clip=False):
        out = (X[:, N_NOMINAL:] - self.lo) / self.span
        return np.clip(out, 0.0, 1.0) if clip else out


def heom_pairs(X, Q, ind, scaled):
    """HEOM between each query and its returned rows (no missing values): the plain
    formula, sqrt(sum ((x - y) / range)^2 + number of nominal mismatches)."""
    R = X[ind]                                               # [q, k, m]
    nom = (R[:, :, :N_NOMINAL] != Q[:, None, :N_NOMINAL]).sum(axis=2)
    c = (R[:, :, N_NOMINAL:] - Q[:, None, N_NOMINAL:]) / scaled.span
    return np.sqrt(nom + (c * c).sum(axis=2))


def gower_function(n_nominal):
    """Gower's coefficient as hdist defines it (docs/metrics.md: range-normalized absolute
    differences, overlap for nominal values, a term with a missing value skipped and the
    rest averaged, 1 when nothing is known), compiled by numba for pynndescent, on rows of
    :func:`gower_rows` whose first ``n_nominal`` entries are codes."""
    import numba
    absent = ABSENT / 2

    @numba.njit(nogil=True)
    def gower(x, y):
        s = 0.0
        n = 0
        for a in range(x.shape[0]):
            u = x[a]
            v = y[a]
            if u <= absent or v <= absent:
                continue
            if a < n_nominal:
                if u != v:
                    s += 1.0
            else:
                s += abs(u - v)
            n += 1
        return s / n if n > 0 else 1.0

    return gower


def gower_pairs(G, Gq, ind):
    """The same coefficient in numpy between each query row of ``Gq`` and its returned
    rows ``G[ind]``."""
    R = G[ind]                                               # [q, k, m]
    q = Gq[:len(ind), None, :]
    known = (R > ABSENT / 2) & (q > ABSENT / 2)
    term = np.where(np.arange(R.shape[2]) < N_NOMINAL, R != q, np.abs(R - q))
    n = known.sum(axis=2)
    s = np.where(known, term, 0.0).sum(axis=2)
    return np.where(n > 0, s / np.maximum(n, 1), 1.0)


#: a missing value in the numba Gower's rows (pynndescent refuses NaN)
ABSENT = -1e30


def gower_rows(X, scaled):
    """Rows for the numba Gower: codes, then continuous values divided by the range;
    ``ABSENT`` for a missing value."""
    G = np.hstack([X[:, :N_NOMINAL], scaled(X)])
    G[np.isnan(G)] = ABSENT
    return G


def heom_embedding(X, scaled):
    """float32 rows whose squared L2 distance is HEOM squared (no missing values):
    range-scaled continuous columns, then each nominal column one-hot with entries
    1/sqrt(2) (two different values are 1 apart)."""
    width = N_CONTINUOUS + sum(LEVELS)
    E = np.zeros((X.shape[0], width), dtype=np.float32)
    E[:, :N_CONTINUOUS] = scaled(X)
    off = N_CONTINUOUS
    rows = np.arange(X.shape[0])
    for j in range(N_NOMINAL):
        E[rows, off + X[:, j].astype(np.intp)] = 1.0 / math.sqrt(2.0)
        off += LEVELS[j]
    return E


def faiss_gower_rows(X, scaled, clip):
    """faiss METRIC_GOWER's coding: category c as -(c + 1), continuous values scaled into
    [0, 1] (``clip``: values outside the training range moved to its ends), NaN missing."""
    return np.ascontiguousarray(np.hstack([-(X[:, :N_NOMINAL] + 1.0), scaled(X, clip)]),
                                dtype=np.float32)


# -- reporting -------------------------------------------------------------------------
class Table:
    """Rows of one case: method, setting, build seconds, queries/s, recall@10, note."""

    def __init__(self, title, exact_qps):
        self.title = title
        self.exact_qps = exact_qps
        self.rows = []
        self.build = ""

    def add(self, method, setting, build, qps, rec, note=""):
        self.rows.append(dict(method=method, setting=setting, build=build, qps=qps,
                              recall=rec, note=note))

    def print(self):
        print("\n  %-34s %-14s %9s %12s %9s %9s  %s" % (
            "method", "setting", "build s", "queries/s", "recall@10", "x exact", "note"))
        for r in self.rows:
            build = "" if r["build"] is None else "%.2f" % r["build"]
            print("  %-34s %-14s %9s %12.4g %9.4f %9.2f  %s" % (
                r["method"], r["setting"], build, r["qps"], r["recall"],
                r["qps"] / self.exact_qps, r["note"]))

    def best(self, method, level):
        """Highest queries/s of ``method`` at recall >= ``level`` (None if never)."""
        ok = [r["qps"] for r in self.rows if r["method"] == method and r["recall"] >= level]
        return max(ok) if ok else None


def run_sweep(table, method, label, search, settings, dist_of, d_exact, n_total, build,
              note, args, describe=None):
    """Add a row to ``table`` for each setting of ``settings``: ``search(setting, n)``
    returns the rows found [n, k] for the first ``n`` queries, timed; recall on the first
    ``min(n, len(d_exact))``.  ``n`` is every query while the previous setting's rate says
    they take at most ``--setting-seconds``, else as many as fit, ``--min-queries`` at
    least.  Stops once recall reaches ``ENOUGH``, or the highest of ``LEVELS_OF_RECALL`` at
    a rate below exact brute force's, or when ``--min-queries`` took longer than
    ``--sweep-seconds``.  ``describe()``: more of the note, after each search."""
    n_ex = d_exact.shape[0]
    least = min(n_total, n_ex, args.min_queries)
    n = n_total
    for s in settings:
        ind, dt = timed(lambda: search(s, n))
        qps = n / dt
        m = min(n, n_ex)
        rec = recall(ind[:m], dist_of, d_exact[:m])
        fewer = "" if n == n_total else "%d queries%s" % (
            n, " (the recall's too)" if n < n_ex else "")
        more = describe() if describe is not None else ""
        table.add(method, label % s, build, qps, rec,
                  "; ".join(x for x in (more, note, fewer) if x))
        note = ""
        if (rec >= ENOUGH or (rec >= LEVELS_OF_RECALL[-1] and qps < table.exact_qps)
                or (n == least and dt > args.sweep_seconds)):
            return
        n = int(min(n_total, max(least, qps * args.setting_seconds)))


def powers_of_two(top):
    out, v = [], 1
    while v <= top:
        out.append(v)
        v *= 2
    if out[-1] != top:
        out.append(top)
    return out


# -- peers -----------------------------------------------------------------------------
def available(name, wanted):
    if name not in wanted:
        return None
    try:
        return __import__(name)
    except ImportError:
        print("  (%s not installed: its rows are skipped; pip install -e \".[bench]\")"
              % name)
        return None


def faiss_ivfflat(faiss, table, X, Q, d_exact, n_lists, args):
    """faiss IndexIVFFlat on the HEOM embedding (HEOM without missing values)."""
    width = N_CONTINUOUS + sum(LEVELS)
    gb = 2 * 4 * width * len(X) / 1e9              # the embedding and faiss' copy
    if gb > args.faiss_max_gb:
        print("  (faiss IndexIVFFlat skipped: the embedding and its copy in the index would "
              "take %.3g GB, over --faiss-max-gb %g)" % (gb, args.faiss_max_gb))
        return
    scaled = Scaled(X)
    n_ex = d_exact.shape[0]
    (E, Eq), t_embed = timed(lambda: (heom_embedding(X, scaled), heom_embedding(Q, scaled)))
    print("  faiss: HEOM embedding %d x %d float32 (%.2f GB) in %.1f s"
          % (E.shape[0], E.shape[1], E.nbytes / 1e9, t_embed))

    def dist_of(ind):
        return heom_pairs(X, Q[:len(ind)], ind, scaled)

    # the embedding is exact: its flat search finds hdist's neighbours
    n_check = min(n_ex, args.check_queries)
    flat = faiss.IndexFlatL2(E.shape[1])
    flat.add(E)
    (_, I), dt = timed(lambda: flat.search(Eq[:n_check], K))
    flat.reset()
    rec = recall(I, lambda ind: heom_pairs(X, Q[:n_check], ind, scaled), d_exact[:n_check])
    table.add("faiss IndexFlatL2 (embedding)", "exact", None, n_check / dt, rec,
              "%d queries; checks the embedding" % n_check)
    quant = faiss.IndexFlatL2(E.shape[1])
    ivf = faiss.IndexIVFFlat(quant, E.shape[1], n_lists)
    n_train = min(len(E), args.faiss_train_per_list * n_lists)
    sample = E[np.random.default_rng(0).choice(len(E), n_train, replace=False)]

    def build():
        ivf.train(sample)
        ivf.add(E)

    _, t_build = timed(build)
    note = "k-means on %d rows (%d per list)" % (n_train, n_train // n_lists)

    def search(p, n):
        ivf.nprobe = p
        return ivf.search(Eq[:n], K)[1]

    run_sweep(table, "faiss IndexIVFFlat (embedding)", "nprobe=%d", search,
              powers_of_two(n_lists), dist_of, d_exact, len(Eq), t_build, note, args)


class GowerRows:
    """The Gower case's rows for the peers, scaled by the full training table's ranges
    (those of hdist's fitted metric): numba rows, their reference function, faiss rows."""

    def __init__(self, X, Q, n_exact):
        self.scaled = Scaled(X)
        self.X, self.Q, self.n_exact = X, Q, n_exact
        self.G, self.Gq = gower_rows(X, self.scaled), gower_rows(Q, self.scaled)

    def dist_of(self, rows):
        """The true distances of returned rows (indices into the first ``rows``)."""
        G, Gq = self.G[:rows], self.Gq
        return lambda ind: gower_pairs(G, Gq, ind)

    def faiss(self, rows):
        F = faiss_gower_rows(self.X[:rows], self.scaled, False)
        Fq = faiss_gower_rows(self.Q, self.scaled, True)
        c = self.scaled(self.Q)
        clipped = int(np.sum((c < 0) | (c > 1)))
        return F, Fq, clipped


def faiss_gower_flat(faiss, table, g, d_exact, args):
    """faiss IndexFlat with METRIC_GOWER: exact, on a few queries."""
    F, Fq, clipped = g.faiss(len(g.X))
    flat = faiss.IndexFlat(F.shape[1], faiss.METRIC_GOWER)
    flat.add(F)
    nq = min(d_exact.shape[0], args.faiss_gower_queries)
    (_, I), dt = timed(lambda: flat.search(Fq[:nq], K))
    table.add("faiss IndexFlat METRIC_GOWER", "exact", None, nq / dt,
              recall(I, g.dist_of(len(F)), d_exact[:nq]),
              "%d queries; %d query values clipped into [0, 1]" % (nq, clipped))


def faiss_gower_indexes(faiss, table, g, rows, d_exact, rows_note, args):
    """faiss IndexHNSWFlat and IndexIVFFlat with METRIC_GOWER on the first ``rows``."""
    F, Fq, _ = g.faiss(rows)
    dist_of = g.dist_of(rows)
    hnsw = faiss.IndexHNSWFlat(F.shape[1], args.hnsw_m, faiss.METRIC_GOWER)
    _, t_build = timed(lambda: hnsw.add(F))
    note = "M=%d, efConstruction=%d%s" % (args.hnsw_m, hnsw.hnsw.efConstruction, rows_note)

    def search_hnsw(ef, n):
        hnsw.hnsw.efSearch = ef
        return hnsw.search(Fq[:n], K)[1]

    run_sweep(table, "faiss IndexHNSWFlat METRIC_GOWER", "efSearch=%d", search_hnsw,
              (10, 20, 40, 80, 160, 320, 640), dist_of, d_exact, len(Fq), t_build, note, args)
    hnsw.reset()
    # faiss' k-means refuses NaN: the coarse quantizer is trained on the complete rows
    n_lists = max(1, round(4 * math.sqrt(rows)))
    complete = F[~np.isnan(F).any(axis=1)]
    if len(complete) < n_lists:
        print("  (faiss IndexIVFFlat METRIC_GOWER skipped: %d complete rows for %d lists)"
              % (len(complete), n_lists))
        return
    ivf = faiss.IndexIVFFlat(faiss.IndexFlat(F.shape[1], faiss.METRIC_GOWER),
                             F.shape[1], n_lists, faiss.METRIC_GOWER)
    n_train = min(len(complete), args.faiss_train_per_list * n_lists)

    def build():
        ivf.train(complete[:n_train])
        ivf.add(F)

    _, t_build = timed(build)
    note = "%d lists, k-means on %d complete rows%s" % (n_lists, n_train, rows_note)

    largest = max(ivf.invlists.list_size(i) for i in range(n_lists))
    note += "; the largest list holds %.0f %% of the rows" % (100.0 * largest / rows)

    def search_ivf(p, n):
        ivf.nprobe = p
        return ivf.search(Fq[:n], K)[1]

    run_sweep(table, "faiss IndexIVFFlat METRIC_GOWER", "nprobe=%d", search_ivf,
              powers_of_two(n_lists), dist_of, d_exact, len(Fq), t_build, note, args)


def pynndescent_gower(pynndescent, table, g, rows, d_exact, rows_note, args):
    """pynndescent's NNDescent with the numba Gower on the first ``rows``."""
    G, Gq = g.G[:rows], g.Gq
    gower = gower_function(N_NOMINAL)
    # compile the metric and pynndescent's functions for it on a few rows first
    _, t_compile = timed(lambda: pynndescent.NNDescent(
        G[:500], metric=gower, n_neighbors=30, random_state=0, tree_init=False)
        .query(Gq[:5], K))

    def build():
        index = pynndescent.NNDescent(G, metric=gower, n_neighbors=30, random_state=0,
                                      tree_init=False)
        index.prepare()
        return index

    index, t_build = timed(build)
    note = "n_neighbors=30 (compiling took %.0f s before)%s" % (t_compile, rows_note)
    dist_of = g.dist_of(rows)

    def search(eps, n):
        return index.query(Gq[:n], K, epsilon=eps)[0]

    run_sweep(table, "pynndescent (numba Gower)", "epsilon=%.2f", search,
              (0.0, 0.1, 0.2, 0.3, 0.4, 0.5), dist_of, d_exact, len(Gq), t_build, note, args)


# -- hdist -----------------------------------------------------------------------------
def check_reference(what, dist_of, d, i):
    """The peers' distances come from the plain implementations above: they must give
    hdist's exact distances for hdist's exact neighbours."""
    err = float(np.max(np.abs(dist_of(i) - d))) if d.size else 0.0
    print("  reference %s of hdist's exact neighbours: max |difference| %.2g" % (what, err))
    if not err <= 1e-9:
        raise RuntimeError("the reference %s disagrees with hdist by %g" % (what, err))


def exact(metric, X, Qs):
    """hdist exact brute force on the rows ``X`` (``None``: the metric's training rows)
    for the query sample ``Qs``: (d, i, queries/s)."""
    index = hdist.NeighborsIndex(metric, algorithm="brute").fit(X)
    index.kneighbors(Qs[:8], K)                 # warm-up: threads, first calls
    (d, i), dt = timed(lambda: index.kneighbors(Qs, K))
    return d, i, len(Qs) / dt


def hdist_ivf(table, metric, X, Q, d_exact, args):
    """hdist's inverted-file index over ``X`` (``None``: the metric's training rows), its
    default lists, an ``n_probe`` sweep; returns its number of lists."""
    index = hdist.NeighborsIndex(metric, algorithm="ivf")
    _, t_build, traced, grown = measured(lambda: index.fit(X), not args.no_tracemalloc)
    data = index.data_nbytes_
    sizes = index.list_sizes_
    print("  hdist ivf: built in %.2f s (build_time_ %.2f s)%s; %d lists of %d to %d rows, "
          "n_probe_ %d by default" % (t_build, index.build_time_,
                                      "" if X is None else ", encoding the rows included",
                                      index.n_lists_, sizes.min(), sizes.max(),
                                      index.n_probe_))
    mem = ["resident set +%.1f MB = %.2fx" % (grown / 1e6, grown / data)]
    if traced is not None:
        mem.insert(0, "tracemalloc peak %.1f MB = %.2fx" % (traced / 1e6, traced / data))
    print("  hdist ivf: encoded reference rows (data_nbytes_) %.1f MB; during the build: %s"
          % (data / 1e6, ", ".join(mem)))
    table.build = "hdist ivf build %.1f s, peak memory (%s) %s the encoded rows" % (
        t_build, " / ".join(m.split(" peak")[0].split(" +")[0] for m in mem),
        " / ".join(m.split("= ")[1] for m in mem))
    found = {}
    index.kneighbors(Q[:8], K, n_probe=1)       # warm-up

    def search(p, n):
        found["d"], ind = index.kneighbors(Q[:n], K, n_probe=p)
        return ind

    def scanned():
        rows = index.search_["rows_scanned"]
        return "%.0f rows scanned (%.2f %%)" % (rows, 100.0 * rows / index.n_train_)

    run_sweep(table, "hdist ivf", "n_probe=%d", search,
              sorted(set(powers_of_two(index.n_lists_)) | {index.n_probe_}
                     | {p for p in args.n_probe if p <= index.n_lists_}),
              lambda ind: found["d"][:len(ind)], d_exact, len(Q),
              t_build, "", args, scanned)
    return index.n_lists_


def run_case(key, data, args, wanted, tables, curves):
    name, missing, title = CASES[key]
    X, y, Q = data[missing]
    n_ex = min(len(Q), args.exact_queries)
    print("\n== %s: %d reference rows x %d queries, 10-NN (%s; %.0f s into the run)" % (
        title, len(X), len(Q), load(), time.perf_counter() - args.start))
    metric = hdist.Metric(name, nominal=NOMINAL, continuous="rest")
    _, t_fit = timed(lambda: metric.fit(X, y if name == "hvdm" else None))
    d_ex, i_ex, qps_exact = exact(metric, None, Q[:n_ex])
    print("  metric fit %.2f s; exact brute force on the first %d queries: %.1f queries/s"
          % (t_fit, n_ex, qps_exact))
    table = Table(title, qps_exact)
    table.add("hdist exact (brute)", "", None, qps_exact, 1.0, "%d queries" % n_ex)
    case_tables = [table]
    n_lists = hdist_ivf(table, metric, None, Q, d_ex, args)
    faiss = available("faiss", wanted)
    if key == "heom" and faiss is not None:
        check_reference("HEOM", lambda ind: heom_pairs(X, Q[:n_ex], ind, Scaled(X)),
                        d_ex, i_ex)
        faiss_ivfflat(faiss, table, X, Q, d_ex, n_lists, args)
    if name == "gower":
        pynnd = available("pynndescent", wanted)
        if faiss is not None and not hasattr(faiss, "METRIC_GOWER"):
            print("  (faiss %s has no METRIC_GOWER: its Gower rows are skipped)"
                  % faiss.__version__)
            faiss = None
        g = GowerRows(X, Q, n_ex) if faiss is not None or pynnd is not None else None
        if g is not None:
            check_reference("Gower", g.dist_of(len(X)), d_ex, i_ex)
        if faiss is not None:
            faiss_gower_flat(faiss, table, g, d_ex, args)
        rows = min(len(X), args.gower_peer_rows)
        sub, d_sub, note = table, d_ex, ""
        if rows < len(X) and g is not None:
            # the slow-building peers index the first `rows` rows; hdist too, beside them
            note = "; first %d rows" % rows
            d_sub, i_sub, qps_sub = exact(metric, X[:rows], Q[:n_ex])
            check_reference("Gower", g.dist_of(rows), d_sub, i_sub)
            sub = Table("%s, first %d reference rows" % (title, rows), qps_sub)
            sub.add("hdist exact (brute)", "", None, qps_sub, 1.0, "%d queries" % n_ex)
            hdist_ivf(sub, metric, X[:rows], Q, d_sub, args)
            case_tables.append(sub)
        if faiss is not None:
            faiss_gower_indexes(faiss, sub, g, rows, d_sub, note, args)
        if pynnd is not None:
            pynndescent_gower(pynnd, sub, g, rows, d_sub, note, args)
    for t in case_tables:
        print("\n  -- %s" % t.title)
        t.print()
        for r in t.rows:
            curves.setdefault((t.title, r["method"]), []).append((r["recall"], r["qps"]))
    tables.extend(case_tables)


def ratios(tables):
    print("\n== ratios")
    for t in tables:
        lines = [t.build] if t.build else []
        hd = "hdist ivf"
        for level in LEVELS_OF_RECALL:
            b = t.best(hd, level)
            if b is not None:
                lines.append("%s at recall >= %.2f: %.1fx exact" % (hd, level,
                                                                     b / t.exact_qps))
        for peer in ("faiss IndexIVFFlat (embedding)", "faiss IndexFlat METRIC_GOWER",
                     "faiss IndexHNSWFlat METRIC_GOWER", "faiss IndexIVFFlat METRIC_GOWER",
                     "pynndescent (numba Gower)"):
            p = t.best(peer, LEVELS_OF_RECALL[0])
            b = t.best(hd, LEVELS_OF_RECALL[0])
            if p is not None:
                lines.append("%s at recall >= %.2f: %.4g queries/s%s" % (
                    peer, LEVELS_OF_RECALL[0], p,
                    "" if b is None else "; hdist ivf / it = %.2fx" % (b / p)))
        print("  %s:" % t.title)
        for line in lines or ["(no approximate rows)"]:
            print("    " + line)


def plot(curves, tables, path, heading):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    titles = [t.title for t in tables]
    cols = 2 if len(titles) > 1 else 1
    rows = math.ceil(len(titles) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4 * rows), squeeze=False)
    for ax, t in zip(axes.flat, tables):
        for (title, method), pts in curves.items():
            if title != t.title or method == "hdist exact (brute)":
                continue
            r, q = zip(*pts)
            ax.plot(r, q, "o-" if len(pts) > 1 else "o", label=method, ms=3)
        ax.axhline(t.exact_qps, color="k", ls="--", lw=0.8, label="hdist exact (brute)")
        ax.set_yscale("log")
        ax.set_xlabel("recall@10")
        ax.set_ylabel("queries/s")
        ax.set_title(t.title, fontsize=9)
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(tables):]:
        ax.axis("off")
    fig.suptitle(heading, fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print("\nplot: %s" % path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="reference rows (10**6)")
    ap.add_argument("--queries", type=int, default=None, help="query rows (10**4)")
    ap.add_argument("--quick", action="store_true", help="10**5 rows, 2 000 queries")
    ap.add_argument("--exact-queries", type=int, default=1000,
                    help="queries of the exact search and ground truth (1000)")
    ap.add_argument("--check-queries", type=int, default=200,
                    help="queries of faiss' exact check of the HEOM embedding (200)")
    ap.add_argument("--faiss-gower-queries", type=int, default=50,
                    help="queries of faiss' exact METRIC_GOWER search (50)")
    ap.add_argument("--faiss-train-per-list", type=int, default=40,
                    help="k-means rows per list for faiss' IVF indexes (40)")
    ap.add_argument("--faiss-max-gb", type=float, default=8.0,
                    help="largest HEOM embedding (with faiss' copy) to build, GB (8)")
    ap.add_argument("--gower-peer-rows", type=int, default=100_000,
                    help="reference rows of the graph and IVF Gower peers (10**5)")
    ap.add_argument("--hnsw-m", type=int, default=32)
    ap.add_argument("--setting-seconds", type=float, default=3.0,
                    help="a sweep's setting searches the queries that fit in this (3)")
    ap.add_argument("--min-queries", type=int, default=300,
                    help="fewest queries a sweep's setting searches (300)")
    ap.add_argument("--sweep-seconds", type=float, default=30.0,
                    help="a sweep stops when --min-queries took longer (30)")
    ap.add_argument("--cases", default=",".join(CASES),
                    help="comma-separated: %s" % ", ".join(CASES))
    ap.add_argument("--peers", default=",".join(PEERS),
                    help="comma-separated peers to run (%s; 'none')" % ", ".join(PEERS))
    ap.add_argument("--plot", default=os.path.join(HERE, "..", "docs", "ann_recall.png"),
                    help="where to save the recall-speed plot ('' for none)")
    ap.add_argument("--no-tracemalloc", action="store_true",
                    help="measure the build's memory by the resident set only")
    ap.add_argument("--profiles", type=int, default=0,
                    help="rows drawn around this many profiles (make_census_like.codes; "
                         "0: every column drawn on its own, the default)")
    ap.add_argument("--n-probe", default="",
                    help="comma-separated n_probe values hdist ivf's sweep adds to its "
                         "powers of two and its default")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        args.n_probe = sorted({int(v) for v in args.n_probe.split(",") if v.strip()})
    except ValueError:
        ap.error("--n-probe takes comma-separated integers, got %r" % args.n_probe)
    if any(p < 1 for p in args.n_probe):
        ap.error("--n-probe values must be >= 1")
    if args.profiles < 0:
        ap.error("--profiles must be >= 0")
    n = args.rows or (100_000 if args.quick else 1_000_000)
    nq = args.queries or (2_000 if args.quick else 10_000)
    cases = [c for c in args.cases.split(",") if c]
    bad = sorted(set(cases) - set(CASES))
    if bad:
        ap.error("unknown case(s) %s" % ", ".join(bad))
    wanted = set(args.peers.split(",")) - {"none", ""}
    if wanted - set(PEERS):
        ap.error("unknown peer(s) %s" % ", ".join(sorted(wanted - set(PEERS))))
    shape = ("rows around %d profiles" % args.profiles if args.profiles
             else "columns drawn independently")
    print("approximate 10-NN, census-like data (%s): %d reference rows, %d queries"
          % (shape, n, nq))
    start_load = load()
    print("nproc %d; %s" % (os.cpu_count(), start_load))
    print("machine: %s, %s, %.0f GiB" % (cpu_name(), platform.platform(),
                                         os.sysconf("SC_PAGE_SIZE")
                                         * os.sysconf("SC_PHYS_PAGES") / 2**30))
    print(versions())
    hdist.show_config()
    t0 = args.start = time.perf_counter()
    data = {}
    for key in cases:
        missing = CASES[key][1]
        if missing not in data:
            X, y = codes(n, args.seed, missing, args.profiles)
            Q, _ = codes(nq, args.seed + 1, missing, args.profiles)
            data[missing] = (X, y, Q)
    tables, curves = [], {}
    for key in cases:
        run_case(key, data, args, wanted, tables, curves)
    ratios(tables)
    if args.plot:
        plot(curves, tables, args.plot,
             "census-like data (%s), %d reference rows, %d queries, 10-NN; %s, nproc %d, "
             "%s at the start" % (shape, n, nq, cpu_name(), os.cpu_count(), start_load))
    print("\ntotal %.0f s; %s" % (time.perf_counter() - t0, load()))


if __name__ == "__main__":
    main()
