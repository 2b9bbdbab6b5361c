"""The inverted-file index (``NeighborsIndex(algorithm="ivf")``, hdist._search.ivf and the
list scans of hdist._kernels.knn_lists / radius_lists).

Probing every list is brute force, bit for bit (every preset family, several p, missing
values, ties); fewer lists give the exact distances of the rows found, and the rows found
are those a plain search restricted to the probed lists finds."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import hdist
from hdist import Metric, NeighborsIndex
from hdist._kernels import CRows, knn, knn_lists, radius, radius_lists
from hdist._search import ivf as _ivf
from hdist.metrics import METRICS

from test_trees import mixed_data

pytestmark = [pytest.mark.sanitize]

PRESETS = sorted({info.name for info in METRICS.values()})


def _metric(name, X, y, nom, **params):
    if METRICS[name].continuous is None:          # nominal attributes only
        Xn = X[:, nom]
        return Metric(name, nominal=list(range(Xn.shape[1])), **params).fit(Xn, y), Xn
    return Metric(name, nominal=nom, **params).fit(X, y), X


def _data(seed=1, n=1200, nq=40, **kw):
    X, Q, y, nom = mixed_data(seed, n, nq, **kw)
    return X, Q, y, nom


def _same(a, b):
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[0], b[0])


# -- the list scans (kernel) ---------------------------------------------------------

def _store_of(metric, rows, labels, L):
    lists = _ivf.Lists(np.arange(L), labels)
    offsets, ids = lists.layout()
    return offsets, ids, _ivf.make_store(rows, ids)


def _restricted(D, allowed, k):
    """Plain reference: the k nearest of the allowed rows by (distance, index)."""
    out_d, out_i = [], []
    for q in range(D.shape[0]):
        cand = np.flatnonzero(allowed[q])
        order = np.lexsort((cand, D[q, cand]))[:k]
        d = np.full(k, np.inf)
        i = np.full(k, D.shape[1], dtype=np.intp)
        d[:len(order)] = D[q, cand[order]]
        i[:len(order)] = cand[order]
        out_d.append(d)
        out_i.append(i)
    return np.array(out_d), np.array(out_i)


@pytest.mark.parametrize("name,params", [("heom", {}), ("hvdm", {}), ("gower", {}),
                                         ("heom", {"p": 0.5}), ("heom", {"p": 3.0})])
def test_list_scans_match_a_restricted_search(name, params):
    X, Q, y, nom = _data(seed=5, n=1500, nq=30)
    metric, X = _metric(name, X, y, nom, **params)
    rows = metric.train_
    if X.shape[1] < Q.shape[1]:
        Q = Q[:, nom]
    Qr = NeighborsIndex(metric, algorithm="brute").fit()._query_rows(Q, False)
    rng = np.random.default_rng(0)
    L = 7
    labels = rng.integers(0, L - 1, rows.n)       # list L - 1 stays empty
    labels[:700] = 2                              # one list longer than a tile (512 rows)
    offsets, ids, store = _store_of(metric, rows, labels, L)
    plan = metric.plan_.cplan
    D = metric.pairwise(Q, X, n_jobs=1)
    k = 6
    probes = np.array([rng.permutation(L)[:3] for _ in range(Qr.n)], dtype=np.intp)
    probes[0, 1:] = -1                            # one list only
    allowed = np.array([np.isin(labels, p[p >= 0]) for p in probes])
    ed, ei = _restricted(D, allowed, k)
    for threads in (1, 2):
        d, i, scanned = knn_lists(plan, CRows(Qr), store, offsets, ids, probes, k, threads)
        np.testing.assert_array_equal(i, ei)
        np.testing.assert_array_equal(d, ed)
        np.testing.assert_array_equal(scanned, allowed.sum(axis=1))
    # every list probed: the brute-force kernel's answer, bit for bit, and its radius lists
    allp = np.tile(np.arange(L), (Qr.n, 1))
    _same(knn_lists(plan, CRows(Qr), store, offsets, ids, allp, k, 2)[:2],
          knn(plan, CRows(Qr), CRows(rows), k, 1))
    r = float(np.quantile(D, 0.05))
    dl, il, _ = radius_lists(plan, CRows(Qr), store, offsets, ids, probes, r, 2)
    for q in range(Qr.n):
        keep = np.flatnonzero(allowed[q] & (D[q] <= r))
        keep = keep[np.lexsort((keep, D[q, keep]))]
        np.testing.assert_array_equal(il[q], keep)
        np.testing.assert_array_equal(dl[q], D[q, keep])
    bd, bi = radius(plan, CRows(Qr), CRows(rows), r, 1)
    dl, il, _ = radius_lists(plan, CRows(Qr), store, offsets, ids, allp, r, 1)
    for a, b, c, e in zip(dl, bd, il, bi):
        np.testing.assert_array_equal(c, e)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("group", [1, 4, 10 ** 6])
def test_grouped_list_scans_give_every_query_its_own_answer(monkeypatch, group):
    # queries scan their lists in groups, each list once for every query of the group
    # probing it (LIST_GROUP_PROBES sets the groups' size): the answer, its ties and the
    # rows counted must be each query's own restricted search's, whatever the grouping
    # and threads.  Few distinct values make many ties at the k-th distance.
    import hdist._kernels.tiles as tiles
    monkeypatch.setattr(tiles, "LIST_GROUP_PROBES", group)
    rng = np.random.default_rng(11)
    X = rng.integers(0, 3, size=(900, 4)).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    Q = rng.integers(0, 3, size=(260, 4)).astype(float)
    metric = Metric("heom", nominal=[0, 1, 2, 3]).fit(X)
    rows = metric.train_
    Qr = NeighborsIndex(metric, algorithm="brute").fit()._query_rows(Q, False)
    L = 9
    labels = rng.integers(0, L, rows.n)
    offsets, ids, store = _store_of(metric, rows, labels, L)
    probes = np.array([rng.permutation(L)[:4] for _ in range(Qr.n)], dtype=np.intp)
    probes[::7, 2:] = -1                          # some queries probe two lists only
    selfs = rng.integers(-1, rows.n, Qr.n)        # a row each query skips (-1: none)
    allowed = np.array([np.isin(labels, p[p >= 0]) for p in probes])
    allowed[np.arange(Qr.n), np.maximum(selfs, 0)] &= selfs < 0
    D = metric.pairwise(Q, X, n_jobs=1)
    k = 5
    ed, ei = _restricted(D, allowed, k)
    for threads in (1, 2):
        d, i, scanned = knn_lists(metric.plan_.cplan, CRows(Qr), store, offsets, ids,
                                  probes, k, threads, selfs)
        np.testing.assert_array_equal(i, ei)
        np.testing.assert_array_equal(d, ed)
        held = np.bincount(labels, minlength=L)
        np.testing.assert_array_equal(scanned, [held[p[p >= 0]].sum() for p in probes])
        wd, wi, _ = knn_lists(metric.plan_.cplan, CRows(Qr), store, offsets, ids, probes,
                              k, threads, selfs, ties=True)
        for q in range(Qr.n):
            tied = np.flatnonzero(allowed[q] & (D[q] <= ed[q, -1]))
            got = wi[q][np.isfinite(wd[q])]
            np.testing.assert_array_equal(np.sort(got), tied)
            np.testing.assert_array_equal(got[:k], ei[q])
    # the radius scan's groups: each query's own rows within r, sorted by (distance,
    # index), whatever the grouping and threads (many ties at every distance)
    for r in (np.quantile(D, 0.1), np.inf):
        for threads in (1, 2):
            dl, il, scanned = radius_lists(metric.plan_.cplan, CRows(Qr), store, offsets,
                                           ids, probes, r, threads, selfs)
            np.testing.assert_array_equal(scanned, [held[p[p >= 0]].sum() for p in probes])
            for q in range(Qr.n):
                keep = np.flatnonzero(allowed[q] & (D[q] <= r))
                keep = keep[np.lexsort((keep, D[q, keep]))]
                np.testing.assert_array_equal(il[q], keep)
                np.testing.assert_array_equal(dl[q], D[q, keep])


@pytest.mark.parametrize("n_threads", [1, 2, 3, 16])
@pytest.mark.parametrize("nq", [1, 2, 5, 9, 15, 16, 17, 100, 10 ** 5])
@pytest.mark.parametrize("n_lists,probes", [(9, 3), (2191, 7), (1000, 0)])
def test_list_groups_leave_no_thread_idle(n_threads, nq, n_lists, probes):
    # a list scan shares its queries among the threads only by groups: every thread
    # gets one as long as there are queries for it, and groups hold at least 8 queries
    # where every thread can still get one of them
    import hdist._kernels.tiles as tiles
    per = tiles._list_group_rows(nq, n_threads, n_lists, probes)
    groups = -(-nq // per)
    assert per >= 1 and groups >= min(nq, n_threads)
    if nq >= 8 * n_threads:
        assert per >= 8
    assert per <= max(8, tiles.LIST_GROUP_PROBES * n_lists // max(1, probes))


def test_a_probe_row_ends_at_its_first_minus_one():
    # a query scans its probes up to the first -1, even when that is the first entry
    # (later entries are not read): nothing scanned, no neighbour found
    X, Q, y, nom = _data(seed=4, n=300, nq=6)
    metric, X = _metric("heom", X, y, nom)
    rows = metric.train_
    Qr = NeighborsIndex(metric, algorithm="brute").fit()._query_rows(Q, False)
    labels = np.arange(rows.n) % 3
    offsets, ids, store = _store_of(metric, rows, labels, 3)
    probes = np.tile(np.array([0, 1, 2], dtype=np.intp), (Qr.n, 1))
    probes[2] = [-1, 0, 1]
    probes[4] = [1, -1, 2]
    D = metric.pairwise(Q, X, n_jobs=1)
    allowed = np.array([np.isin(labels, p[:np.argmax(np.append(p, -1) < 0)])
                        for p in probes])
    ed, ei = _restricted(D, allowed, 4)
    for threads in (1, 2):
        d, i, scanned = knn_lists(metric.plan_.cplan, CRows(Qr), store, offsets, ids,
                                  probes, 4, threads)
        np.testing.assert_array_equal(i, ei)
        np.testing.assert_array_equal(d, ed)
        np.testing.assert_array_equal(scanned, allowed.sum(axis=1))
        dl, il, scanned = radius_lists(metric.plan_.cplan, CRows(Qr), store, offsets, ids,
                                       probes, np.inf, threads)
        np.testing.assert_array_equal(scanned, allowed.sum(axis=1))
        for q in range(Qr.n):
            keep = np.flatnonzero(allowed[q])
            np.testing.assert_array_equal(il[q], keep[np.lexsort((keep, D[q, keep]))])
    assert scanned[2] == 0 and np.all(np.isinf(d[2])) and len(il[2]) == 0


def test_list_scans_refuse_bad_layouts():
    X, Q, y, nom = _data(n=50, nq=3)
    metric, X = _metric("heom", X, y, nom)
    rows = metric.train_
    offsets, ids, store = _store_of(metric, rows, np.zeros(rows.n, dtype=int), 2)
    plan = metric.plan_.cplan
    cq = CRows(rows.take(np.arange(3)))
    with pytest.raises(ValueError, match="probes"):
        knn_lists(plan, cq, store, offsets, ids, np.full((3, 1), 2, dtype=np.intp), 2, 1)
    short = offsets.copy()
    short[-1] -= 1                                # not every stored row
    with pytest.raises(ValueError, match="offsets"):
        knn_lists(plan, cq, store, short, ids, np.zeros((3, 1), dtype=np.intp), 2, 1)
    falling = np.array([0, rows.n, 5, rows.n], dtype=np.intp)
    with pytest.raises(ValueError, match="non-decreasing"):
        knn_lists(plan, cq, store, falling, ids, np.zeros((3, 1), dtype=np.intp), 2, 1)
    with pytest.raises(ValueError, match="probes has"):
        knn_lists(plan, cq, store, offsets, ids, np.zeros((2, 1), dtype=np.intp), 2, 1)


# -- exact at the limit -------------------------------------------------------------

@pytest.mark.parametrize("name", PRESETS)
def test_probing_every_list_is_brute_force(name):
    X, Q, y, nom = _data(seed=11, n=900, nq=25, p_missing=0.15)
    metric, Xm = _metric(name, X, y, nom)
    Qm = Q[:, nom] if Xm.shape[1] < X.shape[1] else Q
    brute = NeighborsIndex(metric, algorithm="brute").fit()
    ivf = NeighborsIndex(metric, algorithm="ivf", n_lists=6, n_probe=6).fit()
    assert ivf.n_probe_ == ivf.n_lists_
    for k in (1, 7):
        _same(ivf.kneighbors(Qm, k), brute.kneighbors(Qm, k))
        _same(ivf.kneighbors(None, k, exclude_self=True),
              brute.kneighbors(None, k, exclude_self=True))
    _same(ivf._kneighbors(Qm, 5, ties=True), brute._kneighbors(Qm, 5, ties=True))
    d0 = brute.kneighbors(Qm, 3)[0]
    r = float(np.median(d0[:, -1]))
    D, I = ivf.radius_neighbors(Qm, r)
    D0, I0 = brute.radius_neighbors(Qm, r)
    for a, b, c, e in zip(D, D0, I, I0):
        np.testing.assert_array_equal(c, e)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("p", [0.5, 1.0, 3.0, np.inf])
def test_probing_every_list_is_brute_force_for_any_p(p):
    X, Q, y, nom = _data(seed=12, n=800, nq=20, p_missing=0.2)
    metric = Metric("heom", nominal=nom, p=p).fit(X)
    brute = NeighborsIndex(metric, algorithm="brute").fit()
    ivf = NeighborsIndex(metric, algorithm="ivf", n_lists=9, n_probe=9).fit()
    _same(ivf.kneighbors(Q, 6), brute.kneighbors(Q, 6))


# -- approximate: exact distances, recall ------------------------------------------------

def _clustered(seed, n_clusters=12, per=120, nq=60):
    """Mixed rows around ``n_clusters`` well-separated centres (continuous columns
    jittered, nominal columns mostly the centre's value)."""
    rng = np.random.default_rng(seed)
    m_c, m_n = 4, 3
    cen_c = rng.normal(size=(n_clusters, m_c)) * 10
    cen_n = rng.integers(0, 8, (n_clusters, m_n))

    def draw(count):
        lab = rng.integers(0, n_clusters, count)
        out = np.empty((count, m_c + m_n), dtype=object)
        out[:, :m_c] = cen_c[lab] + rng.normal(size=(count, m_c)) * 0.3
        nomv = np.where(rng.random((count, m_n)) < 0.9, cen_n[lab],
                        rng.integers(0, 8, (count, m_n)))
        out[:, m_c:] = np.vectorize(lambda v: "v%d" % v)(nomv)
        out[rng.random((count, m_c + m_n)) < 0.05] = None
        return out
    return draw(n_clusters * per), draw(nq), list(range(m_c, m_c + m_n))


def test_known_clusters_are_found_with_few_probes():
    X, Q, nom = _clustered(3)
    index = NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf", n_lists=12,
                           n_probe=2).fit(X)
    assert index.recall(Q, 10) >= 0.9
    assert index.recall(None, 10) >= 0.9
    index.kneighbors(Q, 10)
    assert index.search_["lists_probed"] >= 2
    assert index.search_["rows_scanned"] < 0.5 * len(X)


def test_distances_are_exact_and_recall_grows_with_n_probe():
    X, Q, y, nom = _data(seed=4, n=3000, nq=80, p_missing=0.05)
    index = NeighborsIndex(Metric("gower", nominal=nom), algorithm="ivf", n_lists=40).fit(X)
    metric = index.metric_
    prev = -1.0
    for p in (1, 3, 10, 40):
        d, i = index.kneighbors(Q, 8, n_probe=p)
        assert index.search_["n_probe"] == p
        assert np.all(index.search_["lists_probed_per_query"] >= p)
        # each distance is the pair's own (computed by pairwise)
        for q in range(0, len(Q), 9):
            np.testing.assert_array_equal(d[q], metric.pairwise(Q[q:q + 1], X[i[q]])[0])
        rec = index.recall(Q, 8, n_probe=p)
        assert rec >= prev
        prev = rec
    assert prev == 1.0
    assert index.recall(Q, 8, n_probe=index.n_lists_) == 1.0


def test_recall_counts_rows_tied_with_the_kth():
    d_exact = np.array([[0.0, 1.0, 2.0]])
    # a row at the exact 3rd distance counts as found, one beyond does not
    assert _ivf.recall_of(np.array([[0.0, 2.0, 2.0]]), d_exact, 3) == 1.0
    assert _ivf.recall_of(np.array([[0.0, 1.0, 2.5]]), d_exact, 3) == pytest.approx(2 / 3)


@pytest.mark.needs_data
def test_recall_on_a_shared_dataset():
    from strategies import load_dataset
    ds = load_dataset("adult_test", codes_as_numbers=False)
    frame = ds.frame().iloc[:6000]
    y = np.asarray(ds.y[:5000], dtype=object)
    nominal = [c for c, kind in zip(ds.table.names, ds.table.kinds) if kind != "continuous"]
    index = NeighborsIndex(Metric("hvdm", nominal=nominal), algorithm="ivf",
                           target_recall=0.9).fit(frame.iloc[:5000], y)
    assert 1 <= index.n_probe_ < index.n_lists_
    Q = frame.iloc[5000:5300]
    assert index.recall(Q, 10) >= 0.8
    assert index.recall(Q, 10, n_probe=index.n_lists_) == 1.0


def test_target_recall_picks_the_smallest_n_probe():
    X, Q, y, nom = _data(seed=8, n=2500, nq=10, p_missing=0.05)
    index = NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf", n_lists=30,
                           target_recall=0.95).fit(X)
    p = index.n_probe_
    rows = index._rows
    rng = np.random.default_rng(index.random_state + 1)
    sel = np.sort(rng.choice(rows.n, size=min(rows.n, _ivf.CALIBRATION_ROWS),
                             replace=False))
    d_ex, i_ex = _ivf.exact_excluding(index._searcher, rows.take(sel), sel, 10, 1)
    # the exact search by every list is brute force without the own row
    bd, bi = NeighborsIndex(index.metric_, algorithm="brute").fit().kneighbors(
        None, 10, exclude_self=True)
    np.testing.assert_array_equal(i_ex, bi[sel])
    np.testing.assert_array_equal(d_ex, bd[sel])

    def rec(pp):
        d = _ivf.knn(index._searcher, rows.take(sel), 10, pp, sel, 1)[0]
        return _ivf.recall_of(d, d_ex, 10)
    assert rec(p) >= 0.95
    if p > 1:
        assert rec(p - 1) < 0.95


def test_too_few_rows_in_the_probed_lists_widen_the_search():
    X, Q, y, nom = _data(seed=9, n=400, nq=15)
    index = NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf", n_lists=100,
                           n_probe=1).fit(X)
    k = int(index.list_sizes_.max()) + 3
    d, i = index.kneighbors(Q, k)
    assert np.all(np.isfinite(d)) and np.all(i < len(X))
    assert all(len(set(row)) == k for row in i.tolist())
    assert np.all(index.search_["rows_scanned_per_query"] >= k)
    d, i = index.kneighbors(None, k, exclude_self=True)
    assert np.all(np.isfinite(d))
    assert not np.any(i == np.arange(len(X))[:, None])


def test_thread_count_does_not_change_results():
    X, Q, y, nom = _data(seed=6, n=2000, nq=50)
    index = NeighborsIndex(Metric("hvdm", nominal=nom), algorithm="ivf", n_lists=25,
                           n_probe=4).fit(X, y)
    a = index.kneighbors(Q, 5, n_jobs=1)
    b = index.kneighbors(Q, 5, n_jobs=2)
    _same(a, b)


def test_build_does_not_depend_on_thread_count(monkeypatch):
    X, Q, y, nom = _data(seed=6, n=1500, nq=5)
    built = []
    for nj in (1, 2):
        monkeypatch.setattr("hdist._search.searchers.effective_n_jobs",
                            lambda n_jobs=None, _nj=nj: _nj)
        built.append(NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf",
                                    n_lists=20).fit(X))
    np.testing.assert_array_equal(built[0].centres_, built[1].centres_)
    np.testing.assert_array_equal(built[0]._searcher.lists.list_of,
                                  built[1]._searcher.lists.list_of)


# -- insert, pickling, progress, search_ ------------------------------------------------

def test_insert_joins_the_nearest_list_and_stays_exact_at_the_limit():
    X, Q, y, nom = _data(seed=13, n=1000, nq=200)
    index = NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf", n_lists=10,
                           n_probe=10).fit(X)
    sizes = index.list_sizes_.copy()
    new = index.insert(Q[:150])
    np.testing.assert_array_equal(new, np.arange(1000, 1150))
    assert index.list_sizes_.sum() == 1150 and np.all(index.list_sizes_ >= sizes)
    # each new row is in the list of its nearest centre
    metric = index.metric_
    cen = np.vstack([X, Q[:150]])[index.centres_]
    near = np.argmin(metric.pairwise(Q[:150], cen), axis=1)
    np.testing.assert_array_equal(index._searcher.lists.list_of[1000:], near)
    brute = NeighborsIndex(metric, algorithm="brute").fit(np.vstack([X, Q[:150]]))
    _same(index.kneighbors(Q[150:], 5), brute.kneighbors(Q[150:], 5))
    # a copy of an indexed row joins the list of the row it copies: found at distance 0
    # (rows with no missing value: a missing value is at distance 1 from itself in HEOM)
    full = X[[all(v is not None for v in row) for row in X]][:60]
    index.insert(full)
    d, i = index.kneighbors(full, 1, n_probe=1)
    assert np.all(d == 0.0)


def test_pickle_round_trip_keeps_results_and_stays_small():
    X, Q, y, nom = _data(seed=14, n=3000, nq=30)
    index = NeighborsIndex(Metric("gower", nominal=nom), algorithm="ivf", n_lists=30,
                           n_probe=3).fit(X)
    a = index.kneighbors(Q, 5)
    blob = pickle.dumps(index)
    back = pickle.loads(blob)
    _same(back.kneighbors(Q, 5), a)
    assert back.n_probe_ == 3 and back.n_lists_ == index.n_lists_
    # the stored copy of the rows is not pickled
    assert len(blob) < 1.5 * index.data_nbytes_ + 200_000


def test_progress_reports_the_build_steps():
    X, Q, y, nom = _data(seed=15, n=600, nq=2)
    seen = []
    NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf").fit(
        X, progress=lambda d, t: seen.append((d, t)))
    steps = [s for s in seen if s[1] == _ivf.PASSES + 2]
    assert steps[-1] == (_ivf.PASSES + 2, _ivf.PASSES + 2)
    assert [d for d, _ in steps] == sorted(d for d, _ in steps)


def test_defaults_and_attributes():
    X, Q, y, nom = _data(seed=16, n=2500, nq=5)
    index = NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf").fit(X)
    assert index.n_lists_ == _ivf.default_n_lists(2500) == 200
    # n_probe calibrated to recall@10 >= 0.95 on indexed rows
    assert index.n_probe_ == _ivf.calibrate(index._searcher, 0.95, 1, 0)
    assert index.recall(None, 10) >= 0.9
    assert index.list_sizes_.sum() == 2500 and np.all(index.list_sizes_ > 0)
    assert index.build_time_ > 0
    index.kneighbors(Q, 3)
    assert index.search_["algorithm"] == "ivf"
    assert index.n_distance_evaluations_.shape == (5,)
    # "auto" never chooses the approximate index
    auto = NeighborsIndex(Metric("heom", nominal=nom)).fit(X)
    assert auto.algorithm_ != "ivf"


def test_duplicate_rows_leave_no_empty_list():
    X = np.array([[1.5, "a"]] * 30 + [[2.25, "b"]] * 30, dtype=object)
    index = NeighborsIndex(Metric("heom", nominal=[1]), algorithm="ivf", n_lists=10,
                           n_probe=1).fit(X)
    assert index.n_lists_ <= 2 and np.all(index.list_sizes_ > 0)
    d, i = index.kneighbors(X[:1], 40)
    assert np.all(np.isfinite(d)) and len(set(i[0].tolist())) == 40


# -- bad input ---------------------------------------------------------------------------

def test_bad_parameters_name_the_argument():
    X, Q, y, nom = _data(seed=17, n=50, nq=2)
    with pytest.raises(ValueError, match="n_probe"):
        NeighborsIndex("heom", algorithm="ivf", n_lists=4, n_probe=5)
    with pytest.raises(TypeError, match="n_lists"):
        NeighborsIndex("heom", algorithm="ivf", n_lists=4.0)
    with pytest.raises(TypeError, match="n_probe"):
        NeighborsIndex("heom", algorithm="ivf", n_probe="3")
    with pytest.raises(ValueError, match="n_lists"):
        NeighborsIndex("heom", algorithm="ivf", n_lists=0)
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="target_recall"):
            NeighborsIndex("heom", algorithm="ivf", target_recall=bad)
    with pytest.raises(ValueError, match="n_lists"):
        NeighborsIndex("heom", algorithm="brute", n_lists=4)
    with pytest.raises(ValueError, match="n_lists"):
        NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf", n_lists=51).fit(X)
    index = NeighborsIndex(Metric("heom", nominal=nom), algorithm="ivf", n_lists=5).fit(X)
    with pytest.raises(ValueError, match="n_probe"):
        index.kneighbors(Q, 2, n_probe=6)
    with pytest.raises(ValueError, match="n_probe"):
        index.n_probe_ = 0
    with pytest.raises(TypeError, match="n_probe"):
        index.recall(Q, 2, n_probe=1.5)
    with pytest.raises(ValueError, match="k"):
        index.kneighbors(Q, 51)
    exact = NeighborsIndex(Metric("heom", nominal=nom), algorithm="brute").fit(X)
    with pytest.raises(AttributeError, match="ivf"):
        exact.n_lists_
    assert not hasattr(exact, "n_probe_")
    with pytest.raises(ValueError, match="n_probe"):
        exact.kneighbors(Q, 2, n_probe=1)
    with pytest.raises(ValueError, match="ivf"):
        exact.recall(Q, 2)
