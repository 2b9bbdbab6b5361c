"""KMedoids' FasterPAM kernels (``pam_assign`` / ``pam_swaps`` in hdist/_kernels/pam.pyx)
against the plain-numpy eager-swap reference (tests/ref_pam.py) and the ``kmedoids``
package, for thread-count invariance, and sample weights against repeated rows."""
import numpy as np
import pandas as pd
import pytest

import hdist

from hdist.cluster import KMedoids
from ref_pam import eager_swaps, fasterpam_state, kernel_swaps, loss_of, swap_losses

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]


def sym_matrix(rng, n, dims=3, dyadic=False):
    """A symmetric Manhattan distance matrix (zero diagonal); with ``dyadic`` every entry
    is a multiple of 1/8, so every sum below is exact."""
    P = rng.random((n, dims))
    if dyadic:
        P = np.floor(P * 8) / 8
    return np.abs(P[:, None, :] - P[None, :, :]).sum(axis=2)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_matches_reference(seed, weighted):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 90))
    k = [1, 2, 3, 5, 8, 1][seed]
    D = sym_matrix(rng, n)
    w = rng.integers(1, 5, n).astype(float) if weighted else None
    med = rng.choice(n, k, replace=False)
    order = rng.permutation(n)
    ref = eager_swaps(D, med, order, w)
    got = kernel_swaps(D, med, order, w)
    np.testing.assert_array_equal(got[0], ref[0])
    assert got[1] == pytest.approx(ref[1], rel=1e-12)
    assert got[1] == pytest.approx(loss_of(D, got[0], w), rel=1e-12)
    assert got[2:] == ref[2:]          # passes, swaps


def test_kernel_state_after_assignment():
    """Nearest / second nearest medoid of every row, a medoid its own nearest."""
    rng = np.random.default_rng(11)
    D = sym_matrix(rng, 50)
    med = np.array([7, 3, 40, 22])
    st = fasterpam_state(D, med)
    Dm = D[med]
    np.testing.assert_array_equal(st["near"], np.argmin(Dm, axis=0))
    np.testing.assert_array_equal(st["dn"], Dm.min(axis=0))
    np.testing.assert_array_equal(st["ds"], np.sort(Dm, axis=0)[1])
    assert st["loss"][0] == pytest.approx(Dm.min(axis=0).sum(), rel=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_kernel_matches_kmedoids_package(seed):
    """kmedoids.fasterpam on one thread without a seed visits rows in index order: given
    the same matrix and initial medoids, the same medoids, loss, passes and swaps."""
    kmedoids = pytest.importorskip("kmedoids")
    rng = np.random.default_rng(100 + seed)
    n, k = [(300, 5), (200, 2), (400, 12), (150, 3)][seed]
    D = sym_matrix(rng, n, dims=4)
    med = rng.choice(n, k, replace=False)
    theirs = kmedoids.fasterpam(D, med.copy(), max_iter=100, n_cpu=1)
    ours = kernel_swaps(D, med, np.arange(n))
    np.testing.assert_array_equal(ours[0], np.asarray(theirs.medoids, dtype=np.intp))
    assert ours[1] == pytest.approx(theirs.loss, rel=1e-12)
    assert (ours[2], ours[3]) == (theirs.n_iter, theirs.n_swap)


@pytest.mark.parametrize("chunk", [None, 1, 7, 64])
def test_kernel_thread_count_and_chunk_invariance(chunk):
    rng = np.random.default_rng(4)
    n = 600
    D = sym_matrix(rng, n)
    w = rng.integers(1, 4, n).astype(float)
    med = rng.choice(n, 6, replace=False)
    order = rng.permutation(n)
    one = kernel_swaps(D, med, order, w)
    for threads in (2, 3, 8):
        got = kernel_swaps(D, med, order, w, n_threads=threads, chunk=chunk)
        np.testing.assert_array_equal(got[0], one[0])
        assert got[1:] == one[1:]       # the same loss to the last bit


def test_rounding_swap_is_undone_not_the_end_of_the_search():
    """Rows repeated and distances in tenths: a candidate's change can be negative by
    rounding alone, its swap leaving the recomputed loss as it was.  Such a swap is undone
    and the search goes on (it used to end the search: 6 of these 150 cases then had a
    single swap lowering the loss, by up to 27 %); the result, undone swaps included, is the
    same on any number of threads and in any chunking of the candidates."""
    for seed in range(150):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(8, 30))
        X = rng.random((n, 3)).round(1)
        X[n // 2:] = X[rng.integers(0, n // 2, n - n // 2)]
        D = np.abs(X[:, None, :] - X[None, :, :]).sum(axis=2) / 3
        w = rng.integers(1, 4, n).astype(float) if seed % 2 else None
        med = rng.choice(n, int(rng.integers(2, 5)), replace=False)
        order = rng.permutation(n)
        one = kernel_swaps(D, med, order, w)
        loss = loss_of(D, one[0], w)
        assert one[1] == pytest.approx(loss, rel=1e-12)
        assert swap_losses(D, one[0], w).min() >= loss - 1e-12 * loss, seed
        for threads, chunk in ((2, None), (3, 1), (8, 5)):
            got = kernel_swaps(D, med, order, w, n_threads=threads, chunk=chunk)
            np.testing.assert_array_equal(got[0], one[0])
            assert got[1:] == one[1:]


def test_kernel_weights_equal_repeated_rows():
    """A row of weight m visited once = its m copies visited one after the other: the same
    swaps, medoids and loss (distances are multiples of 1/8, so every sum is exact)."""
    rng = np.random.default_rng(7)
    for trial in range(5):
        n = 60
        D = sym_matrix(rng, n, dyadic=True)
        w = rng.integers(1, 4, n)
        rep = np.repeat(np.arange(n), w)        # expanded row -> original row
        first = np.concatenate([[0], np.cumsum(w)[:-1]])
        Drep = D[np.ix_(rep, rep)]
        med = rng.choice(n, 4, replace=False)
        order = rng.permutation(n)
        ow = kernel_swaps(D, med, order, w.astype(float))
        orep = kernel_swaps(Drep, first[med], np.concatenate([np.arange(f, f + m) for f, m in
                                                              zip(first[order], w[order])]))
        np.testing.assert_array_equal(rep[orep[0]], ow[0])
        assert orep[1] == ow[1]
        assert orep[3] == ow[3]                 # swaps
        ref = eager_swaps(D, med, order, w.astype(float))
        np.testing.assert_array_equal(ref[0], ow[0])


def test_kernel_refuses_bad_shapes():
    from hdist._kernels import pam_swaps
    rng = np.random.default_rng(0)
    D = sym_matrix(rng, 10)
    st = fasterpam_state(D, [1, 2])
    args = [st[a] for a in ("Dm", "med", "near", "seco", "dn", "ds", "w")]
    idx = np.arange(10, dtype=np.intp)
    with pytest.raises(ValueError, match="out of range"):
        pam_swaps(D, idx + 1, idx, *args, np.zeros(2, np.intp), st["loss"], 10, 1)
    with pytest.raises(ValueError, match="shapes"):
        pam_swaps(D, idx[:3], idx, *args, np.zeros(2, np.intp), st["loss"], 10, 1)
    with pytest.raises(ValueError, match="n_threads"):
        pam_swaps(D, idx, idx, *args, np.zeros(2, np.intp), st["loss"], 10, 0)


# -- through KMedoids ----------------------------------------------------------------------
def blobs(rng, n_per, centers, missing=0.0):
    """Mixed rows around well-separated centers: two numbers and a nominal column."""
    rows = []
    for c, (x, y) in enumerate(centers):
        for _ in range(n_per):
            rows.append((x + rng.normal(0, 0.3), y + rng.normal(0, 0.3), "abc"[c % 3]))
    X = pd.DataFrame(rows, columns=["x", "y", "kind"])
    if missing:
        X.loc[rng.random(len(X)) < missing, "x"] = np.nan
    return X


@pytest.mark.parametrize("parallel_swaps", [False, True])
def test_kmedoids_thread_count_invariance(monkeypatch, parallel_swaps):
    if parallel_swaps:     # candidates evaluated in parallel batches from 2 rows on
        monkeypatch.setattr(KMedoids, "SWAP_PARALLEL_ROWS", 2)
    rng = np.random.default_rng(2)
    X = blobs(rng, 150, [(0, 0), (5, 0), (0, 5), (5, 5), (9, 9)], missing=0.05)
    fits = [KMedoids(5, metric="gower", n_init=2, random_state=3, n_jobs=t).fit(X)
            for t in (1, 2, 4)]
    for m in fits[1:]:
        np.testing.assert_array_equal(m.medoid_indices_, fits[0].medoid_indices_)
        np.testing.assert_array_equal(m.labels_, fits[0].labels_)
        assert m.inertia_ == fits[0].inertia_


def test_kmedoids_same_loss_as_kmedoids_package_on_hdist_matrix():
    """Given hdist's own Gower matrix and KMedoids' initial medoids, kmedoids.fasterpam
    reaches a local optimum of the same quality (another visiting order: not the same
    swaps, but both are swap-optimal; on these clusters the same medoids)."""
    kmedoids = pytest.importorskip("kmedoids")
    rng = np.random.default_rng(8)
    X = blobs(rng, 60, [(0, 0), (6, 0), (0, 6), (6, 6)])
    init = np.array([0, 1, 2, 3])        # all in the first blob: swaps must do the work
    m = KMedoids(4, metric="gower", init=init, random_state=0).fit(X)
    D = m.metric_.pairwise(X)
    theirs = kmedoids.fasterpam(D, init.copy(), n_cpu=1)
    assert m.inertia_ == pytest.approx(theirs.loss, rel=1e-12)
    assert sorted(m.medoid_indices_) == sorted(int(i) for i in theirs.medoids)


def test_kmedoids_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(5)
    X = blobs(rng, 25, [(0, 0), (6, 0), (0, 6)])
    w = rng.integers(1, 4, len(X))
    rep = np.repeat(np.arange(len(X)), w)
    Xr = X.iloc[rep].reset_index(drop=True)
    first = np.concatenate([[0], np.cumsum(w)[:-1]])
    init = np.array([0, 1, 2])
    for method in ("fasterpam", "alternate"):
        a = KMedoids(3, metric="gower", method=method, init=init, random_state=0).fit(
            X, sample_weight=w)
        b = KMedoids(3, metric="gower", method=method, init=first[init], random_state=0).fit(Xr)
        # the same medoids (the slots may differ: the visiting orders differ)
        np.testing.assert_array_equal(np.sort(rep[b.medoid_indices_]),
                                      np.sort(a.medoid_indices_))
        assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-12)
        # every row's medoid is the same row
        np.testing.assert_array_equal(a.medoid_indices_[a.labels_][rep],
                                      rep[b.medoid_indices_[b.labels_]])
    # from the same medoids, weights of 1 are no weights at all, bit for bit
    c = KMedoids(3, metric="gower", init=init, random_state=4).fit(X)
    d = KMedoids(3, metric="gower", init=init, random_state=4).fit(
        X, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(c.medoid_indices_, d.medoid_indices_)
    assert c.inertia_ == d.inertia_


def test_kmedoids_zero_weight_rows_and_sampled_mode():
    rng = np.random.default_rng(6)
    X = blobs(rng, 40, [(0, 0), (6, 0), (0, 6)])
    w = np.ones(len(X))
    zero = rng.choice(len(X), 30, replace=False)
    w[zero] = 0.0
    for kw in ({}, {"max_exact": 50, "sample_size": 40, "n_init": 3},
               {"method": "alternate"}, {"init": "random"}):
        m = KMedoids(3, metric="gower", random_state=1, **kw).fit(X, sample_weight=w)
        assert not np.isin(m.medoid_indices_, zero).any()
        D = m.metric_.pairwise(X)
        assert m.inertia_ == pytest.approx(loss_of(D, m.medoid_indices_, w), rel=1e-12)
    labels = KMedoids(3, metric="gower", random_state=1).fit_predict(X, sample_weight=w)
    assert labels.shape == (len(X),)


def test_kmedoids_bad_sample_weight():
    X = blobs(np.random.default_rng(0), 5, [(0, 0), (6, 0)])
    with pytest.raises(ValueError, match="sample_weight"):
        KMedoids(2).fit(X, sample_weight=-np.ones(len(X)))
    with pytest.raises(ValueError, match="sample_weight"):
        KMedoids(2).fit(X, sample_weight=np.ones(3))
    w = np.zeros(len(X))
    w[0] = 1.0
    with pytest.raises(ValueError, match="positive sample_weight"):
        KMedoids(2).fit(X, sample_weight=w)
    w[:3] = 1.0
    with pytest.raises(ValueError, match="sample_weight is 0"):
        KMedoids(2, init=np.array([0, 5])).fit(X, sample_weight=w)


@pytest.mark.parametrize("metric", ["gower", "hvdm", "heom"])
def test_symmetric_matrix_equals_both_sides_computed(monkeypatch, metric):
    """Metric.pairwise(X) computes each pair once and copies it across the diagonal by
    tiles after each block of rows: equal, bit for bit, to pairwise(X, X), over several
    blocks and thread counts (the tile-mode and full-matrix k-medoids rely on it)."""
    import hdist
    import hdist._kernels as kern
    rng = np.random.default_rng(9)
    X = blobs(rng, 70, [(0, 0), (5, 0), (0, 5)], missing=0.1)
    y = rng.integers(0, 2, len(X))
    m = hdist.Metric(metric).fit(X, y)
    full = m.pairwise(X, X, n_jobs=1)
    monkeypatch.setattr(kern.plan, "REGION_PAIRS", 37 * len(X))   # blocks of 64 rows
    for threads in (1, 2, 3):
        np.testing.assert_array_equal(m.pairwise(X, n_jobs=threads), full)
    np.testing.assert_array_equal(full, full.T)


def missing_matrix(rng, n, dims=4, missing=0.3):
    """Manhattan distances under missing="one" between rows with missing values: an
    attribute missing in either row adds 1, so a row with a missing value is at a
    positive distance from itself (the diagonal counts its missing values)."""
    P = rng.random((n, dims))
    P[rng.random(P.shape) < missing] = np.nan
    diff = np.abs(P[:, None, :] - P[None, :, :])
    return np.where(np.isnan(diff), 1.0, diff).sum(axis=2)


def test_a_medoid_is_assigned_by_its_distances_like_any_row():
    """A medoid with missing values is at a positive distance from itself: it costs that
    distance, and goes to another medoid that is nearer, whatever the slots' order."""
    from hdist._kernels import pam_assign
    D = np.array([[1.0, 0.5, 0.2], [0.5, 0.0, 0.9]])     # row 0 = medoid of slot 0
    out = []
    for Dm, med in ((D, [0, 1]), (D[::-1].copy(), [1, 0])):
        near, seco = np.empty(3, np.intp), np.empty(3, np.intp)
        dn, ds = np.empty(3), np.empty(3)
        loss = pam_assign(Dm, np.array(med, np.intp), near, seco, dn, ds, np.empty(0))
        out.append((loss, np.array(med)[near].tolist()))
    assert out[0] == out[1] == (0.7, [1, 1, 0])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_matches_reference_with_positive_self_distances(seed, weighted):
    """The swaps minimize Σ_o w_o min_i D[med_i, o] with D's diagonal as it is: against
    the plain reference, which evaluates every swap's loss from scratch."""
    rng = np.random.default_rng(50 + seed)
    n = int(rng.integers(20, 80))
    k = [1, 2, 3, 5, 8, 4][seed]
    D = missing_matrix(rng, n)
    assert (np.diag(D) > 0).any()
    w = rng.integers(1, 5, n).astype(float) if weighted else None
    med = rng.choice(n, k, replace=False)
    order = rng.permutation(n)
    st = fasterpam_state(D, med, w)
    np.testing.assert_array_equal(st["dn"], D[med].min(axis=0))
    np.testing.assert_array_equal(st["near"], np.argmin(D[med], axis=0))
    ref = eager_swaps(D, med, order, w)
    got = kernel_swaps(D, med, order, w)
    np.testing.assert_array_equal(got[0], ref[0])
    assert got[1] == pytest.approx(ref[1], rel=1e-12)
    assert got[1] == pytest.approx(loss_of(D, got[0], w), rel=1e-12)
    assert got[2:] == ref[2:]
    # a local optimum of the true loss: no single swap lowers it
    for i in range(k):
        for j in range(n):
            if j not in got[0]:
                trial = got[0].copy()
                trial[i] = j
                assert loss_of(D, trial, w) >= got[1] - 1e-12 * got[1]


@pytest.mark.parametrize("method", ["fasterpam", "alternate"])
def test_kmedoids_loss_is_the_metrics_own_distances(method):
    """inertia_, labels_, transform and predict all read metric_.pairwise: a medoid with
    a missing value costs its distance to itself (docs/metrics.md section 11)."""
    from hdist.cluster import KMedoids
    X = np.array([[0.0, np.nan], [1.0, 0.0], [0.0, 1.0]])
    km = KMedoids(3, metric="manhattan", method=method, random_state=0).fit(X)
    D = km.metric_.pairwise(X)
    assert D[0, 0] == 1.0                      # the missing value counts 1
    assert km.inertia_ == 1.0
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 3))
    X[rng.random(X.shape) < 0.3] = np.nan
    km = KMedoids(4, metric="manhattan", method=method, random_state=1).fit(X)
    D = hdist.Metric("manhattan").fit(X).pairwise(X)
    Dm = D[km.medoid_indices_]
    assert km.inertia_ == pytest.approx(Dm.min(axis=0).sum(), rel=1e-12)
    np.testing.assert_array_equal(km.labels_, np.argmin(Dm, axis=0))
    np.testing.assert_array_equal(km.transform(X), Dm.T)
    np.testing.assert_array_equal(km.predict(X), km.labels_)
