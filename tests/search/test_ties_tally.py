"""ties="include" in bounded memory: the search tallies the rows tied with the k-th
beyond the k best (their count per class, or their sum per target) instead of listing
them.  Every path's tally equals what its lists of the tied rows give, on every thread
count, and the estimators' votes, leave-one-out scores and the command line's
predictions equal those of the lists."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._kernels import CRows, TieLists, knn
from hdist._search import votes as _knn

ALGOS = ["brute-direct", "brute-filter", "kd_tree", "ball_tree", "ivf"]


def tied_frame(rng, n):
    """Few distinct rows: most queries tie at their k-th distance with many rows."""
    return pd.DataFrame({"a": rng.integers(0, 3, n).astype(float),
                         "b": rng.choice(list("xyz"), n).astype(object),
                         "c": rng.choice(list("pq"), n).astype(object)})


def _lists_tally(d, i, k, codes=None, n_classes=0, values=None):
    """(count, acc) of widened lists: the rows listed after the k-th, per class or summed
    exactly (math.fsum)."""
    n = len(d)
    extra = np.isfinite(d[:, k:])
    count = extra.sum(axis=1)
    if codes is not None:
        acc = np.zeros((n, n_classes))
        for q in range(n):
            np.add.at(acc[q], codes[i[q, k:][extra[q]]], 1.0)
        return count, acc
    v = values.reshape(len(values), -1)
    acc = np.array([[math.fsum(v[i[q, k:][extra[q]], t]) for t in range(v.shape[1])]
                    for q in range(n)]).reshape(n, v.shape[1])
    return count, acc


def _kernel_calls(m, Q, k, exclude_self=False):
    """Every kernel that keeps tie lists, as ``(name, call(ties))``."""
    from hdist._search import gemm_filter as _gemm
    rows = m.encode(Q) if Q is not None else m.train_
    cQ = CRows(rows)
    st = m._fitted()
    calls = []
    for strategy in ("queries", "references"):
        for threads, tile in ((1, 256), (2, 7), (3, 64)):
            calls.append(("direct-%s-%d" % (strategy, threads),
                          lambda t, s=strategy, th=threads, ti=tile: knn(
                              m.plan_.cplan, cQ, m._ctrain(), k, th, tile=ti, strategy=s,
                              exclude_self=exclude_self, ties=t)))
    if m.plan_.pmode == 2:
        for threads in (1, 2):
            calls.append(("gemm-%d" % threads, lambda t, th=threads: _gemm.knn(
                st.plan, rows, st.train, cQ, st.crows(), k, th, exclude_self,
                dtype=np.float64, ties=t)))
    for algo in ("kd_tree", "ball_tree", "ivf"):
        kw = {"n_lists": 6, "n_probe": 6} if algo == "ivf" else {}
        try:
            idx = hdist.NeighborsIndex(m, algorithm=algo, leaf_size=4, **kw).fit()
        except ValueError:          # the ball tree is not exact on these rows
            continue
        for threads in (1, 2):
            calls.append(("%s-%d" % (algo, threads),
                          lambda t, ix=idx, th=threads: ix._kneighbors(
                              Q, k, exclude_self, n_jobs=th, ties=t)))
    calls.append(("metric-blocks", lambda t: m._kneighbors(
        Q, k, exclude_self, progress=lambda a, b: None, ties=t)))
    return calls


@pytest.mark.parametrize("name", ["heom", "gower", "hvdm", "chebyshev"])
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("own", [False, True])
def test_kernel_tally_equals_the_tied_lists(name, k, own):
    """On every kernel, thread count, strategy and tile size the tally of the rows tied
    with the k-th beyond the k best equals the count per class / the exact sum of the
    targets of the rows the lists of the ties hold, and the k best are unchanged."""
    rng = np.random.default_rng(k + 10 * own)
    X, Q = tied_frame(rng, 300), tied_frame(rng, 40)
    X.loc[rng.random(300) < 0.1, "a"] = np.nan
    y = rng.integers(0, 3, 300)
    vals = np.round(rng.normal(size=(300, 2)), 3) * 1e3
    m = hdist.Metric(name, nominal=["b", "c"], continuous=["a"]).fit(
        X, y if name == "hvdm" else None)
    Qx = None if own else Q
    widest = 0
    seen = {}
    for label, call in _kernel_calls(m, Qx, k, own):
        d, i = call(True)[:2]
        widest = max(widest, d.shape[1])
        tc = _knn.TieTally(codes=y, n_classes=3)
        dc, ic = call(tc)[:2]
        np.testing.assert_array_equal(dc, d[:, :k], err_msg=label)
        np.testing.assert_array_equal(ic, i[:, :k], err_msg=label)
        count, acc = tc.result(len(d))
        wc, wa = _lists_tally(d, i, k, codes=y, n_classes=3)
        np.testing.assert_array_equal(count, wc, err_msg=label)
        np.testing.assert_array_equal(acc, wa, err_msg=label)
        tv = _knn.TieTally(values=vals)
        call(tv)
        count, acc = tv.result(len(d))
        wc, wa = _lists_tally(d, i, k, values=vals)
        np.testing.assert_array_equal(count, wc, err_msg=label)
        np.testing.assert_allclose(acc, wa, rtol=1e-15, atol=0, err_msg=label)
        # the same bits on every thread count and strategy
        key = (count.tobytes(), acc.tobytes())
        seen.setdefault(key, []).append(label)
    assert len(seen) == 1, seen
    assert widest > k + 5                       # the data ties wide at the k-th


def test_tally_lists_check_their_arguments():
    with pytest.raises(ValueError, match="n_classes"):
        TieLists(3, codes=np.array([0, 1, 3]), n_classes=3)
    with pytest.raises(ValueError, match="finite"):
        TieLists(3, values=np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="codes or values"):
        TieLists(3, codes=np.array([0]), n_classes=1, values=np.array([1.0]))
    t = TieLists(2, codes=np.array([0, 1]), n_classes=2)
    assert t.is_tally and not TieLists(2).is_tally
    count, acc = t.tally()
    assert count.tolist() == [0, 0] and acc.shape == (2, 2) and not acc.any()
    with pytest.raises(ValueError, match="not a tally"):
        TieLists(2).tally()


def _list_votes(index, Q, k, weights, codes=None, C=0, values=None, exclude_self=False,
                n_jobs=1):
    """The votes of the lists of the tied rows (the route before the tally)."""
    d, i = index._kneighbors(Q, k, exclude_self, n_jobs=n_jobs, ties=True)
    w = _knn.tie_weights(d, k, weights, "include")
    if codes is not None:
        return _knn.class_votes(codes[i], w, C)
    return _knn.weighted_mean(values[i], w)


KINDS = {"continuous": ["a"], "nominal": ["b", "c"]}


def _index_kwargs(algo):
    out = {"metric_params": KINDS}
    if algo == "ivf":
        out.update(algorithm="ivf", algorithm_params={"n_lists": 5, "n_probe": 5})
    else:
        out.update(algorithm="brute" if algo.startswith("brute") else algo)
    return out


def _force_path(est, algo):
    """The brute-force path asked for: the direct kernel or the matrix-product filter."""
    if algo.startswith("brute"):
        est._index._brute.min_pairs = 0 if algo == "brute-filter" else 1 << 62


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("weights", ["uniform", "distance"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_estimators_votes_equal_the_tied_lists(algo, weights, n_jobs):
    """KNeighborsClassifier / Regressor with ties="include": predict_proba, predict and
    the leave-one-out scores of select_k="loo" equal those of the lists of the tied rows
    (classification exactly; regression to the rounding of the sums)."""
    from hdist.neighbors import KNeighborsClassifier, KNeighborsRegressor
    rng = np.random.default_rng(3 + n_jobs)
    X, Q = tied_frame(rng, 500), tied_frame(rng, 120)
    y = rng.integers(0, 3, 500)
    t = rng.normal(size=500) * 10
    for k in (1, 5):
        clf = KNeighborsClassifier(k, weights=weights, n_jobs=n_jobs,
                                   **_index_kwargs(algo)).fit(X, y)
        _force_path(clf, algo)
        votes = _list_votes(clf._index, Q, k, weights, codes=y, C=3, n_jobs=n_jobs)
        np.testing.assert_allclose(clf.predict_proba(Q), _knn.vote_probabilities(votes),
                                   rtol=1e-14, atol=0)
        np.testing.assert_array_equal(clf.predict(Q), _knn.vote_winner(votes))
        if algo.startswith("brute"):
            assert clf._index.search_["path"] == algo.split("-")[1]
        reg = KNeighborsRegressor(k, weights=weights, n_jobs=n_jobs,
                                  **_index_kwargs(algo)).fit(X, t)
        _force_path(reg, algo)
        np.testing.assert_allclose(reg.predict(Q), _list_votes(reg._index, Q, k, weights,
                                                               values=t, n_jobs=n_jobs),
                                   rtol=1e-12, atol=0)
    # leave-one-out choice of k: the scores of the lists of the tied rows
    K = 6
    clf = KNeighborsClassifier(K, weights=weights, select_k="loo", n_jobs=n_jobs,
                               **_index_kwargs(algo)).fit(X, y)
    d, i = clf._index._kneighbors(None, K, True, n_jobs=n_jobs, ties=True)
    want = _knn.loo_scores(d, i, y, weights, "classification", "include", K)
    np.testing.assert_array_equal(clf.loo_scores_, want)
    reg = KNeighborsRegressor(K, weights=weights, select_k="loo", n_jobs=n_jobs,
                              **_index_kwargs(algo)).fit(X, t)
    d, i = reg._index._kneighbors(None, K, True, n_jobs=n_jobs, ties=True)
    want = _knn.loo_scores(d, i, t, weights, "regression", "include", K)
    np.testing.assert_allclose(reg.loo_scores_, want, rtol=1e-12, atol=0)


def test_multi_output_regression_and_dudani():
    from hdist.neighbors import KNeighborsRegressor
    rng = np.random.default_rng(7)
    X, Q = tied_frame(rng, 300), tied_frame(rng, 60)
    T = rng.normal(size=(300, 3))
    for weights in ("dudani", lambda d: 1.0 / (1.0 + d)):
        reg = KNeighborsRegressor(4, weights=weights, algorithm="brute",
                                  metric_params=KINDS).fit(X, T)
        want = _list_votes(reg._index, Q, 4, weights, values=T)
        np.testing.assert_allclose(reg.predict(Q), want, rtol=1e-12, atol=0)


def _identical_rows_proba(sample_weight=None):
    """``predict_proba`` of 200 queries against 10^5 identical training rows (class 1
    ahead by 10 rows) and its traced peak of memory, the reference side's caches built
    before."""
    import tracemalloc
    from hdist.neighbors import KNeighborsClassifier
    n, q = 100_000, 200
    X = pd.DataFrame({"a": ["u"] * n, "b": ["v"] * n})
    y = np.arange(n) % 2
    y[:10] = 1
    clf = KNeighborsClassifier(5, algorithm="brute").fit(X, y, sample_weight=sample_weight)
    clf.predict_proba(X.iloc[:20])
    tracemalloc.start()
    try:
        proba = clf.predict_proba(X.iloc[:q])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    want = np.array([(n - 10) / 2 / n, ((n - 10) / 2 + 10) / n])
    np.testing.assert_allclose(proba, np.tile(want, (q, 1)), rtol=1e-13)
    return peak


def test_tally_memory_does_not_grow_with_the_ties():
    """10^5 identical training rows: every query ties with all of them.  The lists of
    the tied rows would take 10^5 entries per query (320 MB for 200 queries), the tally
    2 classes: far below, the codes copied to the kernel are not traced, what is grows
    with the queries times k."""
    peak = _identical_rows_proba()
    assert peak < 4 * 10 ** 6, peak


def test_lists_of_the_ties_name_their_size_when_they_cannot_fit():
    """The lists of the tied rows themselves (``ties=True``) are allocated after the
    search: when they do not fit, the MemoryError names their size and the remedy."""
    from unittest import mock
    X = pd.DataFrame({"a": ["u"] * 3000})
    m = hdist.Metric("heom").fit(X)
    cQ = CRows(m.encode(X))
    real = np.full

    def full(shape, *a, **kw):
        if shape[1] > 1000:
            raise MemoryError("Unable to allocate 68.7 MiB for an array")
        return real(shape, *a, **kw)
    with mock.patch.object(np, "full", full):
        with pytest.raises(MemoryError, match=r"3000 x 3000 entries \(144\.0 MB; 8997000 "
                                              r"tied rows in all, up to 2999 .*ties='index'"):
            knn(m.plan_.cplan, cQ, m._ctrain(), 1, 1, ties=True)


def _mass_lists(index, Q, k, sw, exclude_self=False):
    """The lists widened by doubling until every weighted neighborhood with its ties is
    in them (the route before the tally)."""
    avail = index.n_train_ - exclude_self
    width = k
    while True:
        d, i = index._kneighbors(Q, width, exclude_self)
        if width >= avail or _knn.mass_complete(d, sw[i], k, "include").all():
            return d, i
        width = min(avail, 2 * width)


@pytest.mark.parametrize("algo", ["brute-direct", "kd_tree"])
@pytest.mark.parametrize("weights", ["uniform", "distance"])
@pytest.mark.parametrize("kind", ["integer", "half"])
def test_sample_weighted_votes_tally_the_ties(algo, weights, kind):
    """With sample_weight and ties="include" the search tallies the training weight of
    the rows tied with the last listed distance, so duplicates no longer widen the
    lists; votes, predictions, means and leave-one-out scores equal those of the lists
    widened by doubling."""
    from hdist.neighbors import KNeighborsClassifier, KNeighborsRegressor
    rng = np.random.default_rng(11)
    X, Q = tied_frame(rng, 400), tied_frame(rng, 100)
    y = rng.integers(0, 3, 400)
    t = rng.normal(size=400)
    sw = rng.integers(0, 4, 400).astype(float)
    if kind == "half":
        sw = sw / 2 + 0.25 * (rng.random(400) < 0.3)
    for k in (1, 4):
        clf = KNeighborsClassifier(k, weights=weights, **_index_kwargs(algo)).fit(
            X, y, sample_weight=sw)
        d, i = _mass_lists(clf._index, Q, k, sw)
        assert d.shape[1] > 4 * k                   # the ties would widen the lists
        votes = _knn.class_votes(y[i], _knn.mass_weights(d, sw[i], k, weights, "include"),
                                 3)
        np.testing.assert_allclose(clf.predict_proba(Q), _knn.vote_probabilities(votes),
                                   rtol=1e-12, atol=1e-15)
        if weights == "uniform" and kind == "integer":
            np.testing.assert_array_equal(clf.predict(Q), _knn.vote_winner(votes))
        reg = KNeighborsRegressor(k, weights=weights, **_index_kwargs(algo)).fit(
            X, t, sample_weight=sw)
        want = _knn.weighted_mean(t[i], _knn.mass_weights(d, sw[i], k, weights, "include"))
        np.testing.assert_allclose(reg.predict(Q), want, rtol=1e-12, atol=1e-14)
    K = 5
    clf = KNeighborsClassifier(K, weights=weights, select_k="loo",
                               **_index_kwargs(algo)).fit(X, y, sample_weight=sw)
    d, i = _mass_lists(clf._index, None, K, sw, exclude_self=True)
    want = _knn.loo_scores(d, i, y, weights, "classification", "include", K, sw)
    np.testing.assert_allclose(clf.loo_scores_, want, rtol=1e-12)
    reg = KNeighborsRegressor(K, weights=weights, select_k="loo",
                              **_index_kwargs(algo)).fit(X, t, sample_weight=sw)
    want = _knn.loo_scores(d, i, t, weights, "regression", "include", K, sw)
    np.testing.assert_allclose(reg.loo_scores_, want, rtol=1e-12)


def test_sample_weighted_votes_in_bounded_memory():
    """10^5 identical rows of weight 0.5: k = 5 needs 10 rows' weight, and every row
    ties; the lists stay at width k (they widened to all rows before: 1.3 GB)."""
    peak = _identical_rows_proba(np.full(100_000, 0.5))
    assert peak < 4 * 10 ** 6, peak
