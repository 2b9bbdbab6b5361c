"""k-modes, k-prototypes and k-medoids (hdist.cluster) checked by brute force, against the
fitted metric's public distances and the plain reference, and for determinism."""
import itertools
import pickle

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist import _kernels
from hdist._estimators import cluster
from hdist.cluster import KMedoids, KModes, KPrototypes
from ref_cooccurrence import RefMetric, read_dataset
from ref_pam import loss_of, swap_losses
from datadir import ROOT


def nominal_frame(rng, n, m, V=4, missing=0.0):
    data = {}
    for k in range(m):
        col = np.array(["%s%d" % ("abcdefgh"[k], v) for v in rng.integers(0, V, n)],
                       dtype=object)
        if missing:
            col[rng.random(n) < missing] = None
            col[:1] = "%s0" % "abcdefgh"[k]
        data["n%d" % k] = col
    return pd.DataFrame(data)


def mixed_frame(rng, n, missing=0.1):
    X = nominal_frame(rng, n, 3, missing=missing)
    for k in range(3):
        x = rng.normal(size=n) + 3.0 * (rng.random(n) < 0.5)
        x[rng.random(n) < missing] = np.nan
        x[0] = 0.0
        X["x%d" % k] = x
    return X


def reduced_to_centers(model, X):
    """Reduced distances [n, k] through the public Metric.pairwise on decoded centers."""
    return model.metric_.pairwise(model.cluster_centers_, X, reduced=True).T


def check_consistent(model, X):
    """Labels are the nearest centers and inertia_ their total reduced distance."""
    D = reduced_to_centers(model, X)
    np.testing.assert_array_equal(model.labels_, np.argmin(D, axis=1))
    assert model.inertia_ == pytest.approx(D[np.arange(len(X)), model.labels_].sum(),
                                           rel=1e-12)
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def assert_centers_optimal(model, X, columns, power, rel=1e-12):
    """Each nominal center value has the least total term Σ_i d_a(x_ia, c)^power over
    its cluster (brute force over the learned values, through value_distances)."""
    centers = model.cluster_centers_
    for col in columns:
        T = model.metric_.value_distances(col) ** power
        for c in range(len(centers)):
            vals = X[col][model.labels_ == c].dropna()
            cost = {v: sum(T.loc[x, v] for x in vals) for v in T.columns}
            assert cost[centers.loc[c, col]] == pytest.approx(min(cost.values()), rel=rel,
                                                              abs=1e-12)


# -- KModes ------------------------------------------------------------------------------------
def best_partition_cost(X, k, table_of):
    """Brute force: the least k-modes cost over every partition of the rows into k
    non-empty clusters, with the best center value per attribute (cost centers)."""
    n = len(X)
    cols = [X[c].tolist() for c in X.columns]
    best = np.inf
    for assign in itertools.product(range(k), repeat=n - 1):
        lab = (0,) + assign
        if len(set(lab)) != k:
            continue
        total = 0.0
        for c in range(k):
            members = [i for i in range(n) if lab[i] == c]
            for a, col in enumerate(cols):
                T = table_of(a)
                total += min(sum(T.loc[col[i], v] for i in members) for v in T.columns)
        best = min(best, total)
    return best


@pytest.mark.parametrize("metric", ["smd", "hds"])
def test_kmodes_reaches_brute_force_optimum(metric):
    rng = np.random.default_rng(4)
    X = nominal_frame(rng, 9, 3, V=3)
    km = KModes(2, metric=metric, n_init=30, random_state=0).fit(X)
    tables = {a: km.metric_.value_distances(a) for a in range(3)}
    best = best_partition_cost(X, 2, lambda a: tables[a])
    assert km.inertia_ == pytest.approx(best, rel=1e-12)
    check_consistent(km, X)


def test_kmodes_by_hand():
    # two obvious groups; the modes are the rows' common values
    X = pd.DataFrame({"a": ["x", "x", "x", "y", "y", "y"],
                      "b": ["p", "p", "q", "r", "r", "r"],
                      "c": ["u", "u", "u", "v", "w", "v"]})
    km = KModes(2, n_init=5, random_state=1).fit(X)
    assert len(set(km.labels_[:3])) == 1 and len(set(km.labels_[3:])) == 1
    assert km.labels_[0] != km.labels_[3]
    centers = {tuple(r) for r in km.cluster_centers_.to_numpy().tolist()}
    assert centers == {("x", "p", "u"), ("y", "r", "v")}
    assert km.inertia_ == 2.0          # one mismatch in each group (smd, p = 1)


@pytest.mark.parametrize("metric", ["smd", "add", "hds"])
def test_kmodes_centers_are_optimal_values(metric):
    rng = np.random.default_rng(7)
    X = nominal_frame(rng, 80, 4, V=5, missing=0.1)
    km = KModes(3, metric=metric, n_init=2, random_state=3).fit(X)
    check_consistent(km, X)
    assert_centers_optimal(km, X, X.columns, 1)
    mode = KModes(3, metric=metric, nominal_center="mode", n_init=2, random_state=3).fit(X)
    for a, col in enumerate(X.columns):
        for c in range(3):
            counts = X[col][mode.labels_ == c].value_counts()
            assert counts[mode.cluster_centers_.iloc[c, a]] == counts.max()


def test_kmodes_symbol_policy_center_can_be_missing():
    X = pd.DataFrame({"a": [None, None, None, "x", "y", "x"],
                      "b": ["p", "p", "p", "q", "q", "q"]})
    km = KModes(2, metric_params={"missing": "symbol"}, n_init=5, random_state=0).fit(X)
    check_consistent(km, X)
    centers = km.cluster_centers_
    assert centers["a"].isna().sum() == 1      # the missing symbol is a value


def test_kmodes_rejects_continuous_and_bad_parameters():
    X = pd.DataFrame({"a": ["x", "y", "x"], "v": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="'v' is continuous"):
        KModes(2, metric=hdist.Metric("smd", nominal=["a"])).fit(X)
    Xn = X.astype({"v": object})
    with pytest.raises(ValueError, match="n_clusters"):
        KModes(4).fit(Xn)
    with pytest.raises(ValueError, match="n_clusters"):
        KModes(0).fit(Xn)
    with pytest.raises(TypeError, match="n_init"):
        KModes(2, n_init=1.5).fit(Xn)
    with pytest.raises(ValueError, match="init"):
        KModes(2, init="farthest").fit(Xn)
    with pytest.raises(ValueError, match="init"):
        KPrototypes(2, init="cao").fit(Xn)
    with pytest.raises(ValueError, match="n_init=1"):
        KModes(2, init=Xn.iloc[:2], n_init=3).fit(Xn)
    with pytest.raises(ValueError, match="nominal_center"):
        KModes(2, nominal_center="median").fit(Xn)
    with pytest.raises(ValueError, match="unknown metric"):
        KModes(2, metric="nope").fit(Xn)
    with pytest.raises(TypeError, match="metric_params"):
        KModes(2, metric_params=[1]).fit(Xn)
    with pytest.raises(TypeError, match="average"):
        KModes(2, metric="hds", metric_params={"average": "no"}).fit(Xn)
    with pytest.raises(TypeError, match="random_state"):
        KModes(2, random_state="seed").fit(Xn)
    with pytest.raises(cluster.NotFittedError, match="not fitted"):
        KModes(2).predict(Xn)
    with pytest.raises(ValueError, match="parameter"):
        KModes(2).set_params(colour=1)
    with pytest.raises(ValueError, match="n_samples = 1"):
        KModes(1).fit(Xn.iloc[:1])
    with pytest.raises(ValueError, match="[Rr]eshape"):
        KModes(1).fit(np.array(["a", "b"], dtype=object))


@pytest.mark.needs_data
def test_kmodes_matches_reference_distances_on_zoo():
    df, schema = read_dataset("Zoo")
    X = df.drop(columns=schema["class"]).astype(object)
    km = KModes(7, metric="hds", n_init=3, random_state=2).fit(X)
    kinds = ["nominal"] * X.shape[1]
    cols = [X[c].tolist() for c in X.columns]
    ref = RefMetric("hds", p=1.0).fit(cols, kinds)
    centers = km.cluster_centers_.to_numpy().tolist()
    rows = X.to_numpy().tolist()
    D = np.array([[ref.distance(r, c) for c in centers] for r in rows])
    np.testing.assert_allclose(km.transform(X), D, rtol=1e-11, atol=1e-12)
    np.testing.assert_array_equal(km.labels_, np.argmin(D, axis=1))


def test_center_clustering_deterministic_and_thread_independent():
    rng = np.random.default_rng(9)
    X = mixed_frame(rng, 400)
    runs = [KPrototypes(4, metric="hds", n_init=3, random_state=5, n_jobs=j).fit(X)
            for j in (1, 2, 1)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.labels_, runs[0].labels_)
        assert r.inertia_ == runs[0].inertia_
        pd.testing.assert_frame_equal(r.cluster_centers_, runs[0].cluster_centers_)
    other = KPrototypes(4, metric="hds", n_init=1, random_state=6, init="random").fit(X)
    check_consistent(other, X)
    km = [KModes(3, metric="add", n_init=4, random_state=np.random.default_rng(1),
                 n_jobs=j).fit(X[["n0", "n1", "n2"]]) for j in (1, 2)]
    np.testing.assert_array_equal(km[0].labels_, km[1].labels_)


@pytest.mark.parametrize("metric,power", [("heom", 2), ("hds", 2), ("add", 2), ("gower", 1),
                                          ("chebyshev", 1), ("fractional", 0.5)])
def test_kprototypes_centers_are_means_and_optimal_values(metric, power):
    """Means, and nominal values with the least Σ of the kernel's terms (w d^p; w d for
    p = inf), whatever the aggregation."""
    rng = np.random.default_rng(12)
    X = mixed_frame(rng, 300)
    kp = KPrototypes(3, metric=metric, n_init=2, random_state=0).fit(X)
    check_consistent(kp, X)
    for c in range(3):
        members = X[kp.labels_ == c]
        for col in ("x0", "x1", "x2"):
            assert kp.cluster_centers_.loc[c, col] == pytest.approx(members[col].mean(),
                                                                    rel=1e-12)
    assert_centers_optimal(kp, X, ("n0", "n1", "n2"), power)
    assert kp.n_iter_ >= 1
    model = pickle.loads(pickle.dumps(kp))
    np.testing.assert_array_equal(model.predict(X), kp.labels_)


def test_kprototypes_given_centers_and_numpy_input():
    rng = np.random.default_rng(2)
    X = mixed_frame(rng, 120, missing=0.0)
    arr = X.to_numpy(dtype=object)
    init = arr[[0, 50, 100]]
    kp = KPrototypes(3, init=init, n_init=1, metric_params={"nominal": [0, 1, 2]}).fit(arr)
    assert isinstance(kp.cluster_centers_, np.ndarray) and kp.cluster_centers_.shape == (3, 6)
    D = kp.metric_.pairwise(kp.cluster_centers_, arr, reduced=True).T
    np.testing.assert_array_equal(kp.labels_, np.argmin(D, axis=1))
    # a fixed point: the means of the final clusters are the centers
    for c in range(3):
        got = kp.cluster_centers_[c, 3:].astype(float)
        np.testing.assert_allclose(got, arr[kp.labels_ == c, 3:].astype(float).mean(axis=0),
                                   rtol=1e-12)
    with pytest.raises(ValueError, match="init has 2 rows"):
        KPrototypes(3, init=init[:2], metric_params={"nominal": [0, 1, 2]}).fit(arr)


def test_empty_cluster_is_refilled():
    # four identical rows and one other: k = 3 forces a refill from the farthest row
    X = pd.DataFrame({"a": ["x"] * 4 + ["y", "z"], "b": ["p"] * 4 + ["q", "r"]})
    km = KModes(3, init=X.iloc[[0, 1, 4]], n_init=1).fit(X)
    assert np.bincount(km.labels_, minlength=3).min() >= 1
    check_consistent(km, X)


def test_prefit_metric_is_used_as_is():
    rng = np.random.default_rng(1)
    X = mixed_frame(rng, 200)
    metric = hdist.Metric("hds").fit(X)
    kp = KPrototypes(2, metric=metric, random_state=0, n_init=2).fit(X.iloc[:120])
    assert kp.metric_ is metric
    check_consistent(kp, X.iloc[:120])
    with pytest.raises(ValueError, match="already fitted"):
        KPrototypes(2, metric=metric).fit(X, y=np.zeros(len(X)))


# -- KMedoids ----------------------------------------------------------------------------------
def total_deviation(D, med):
    """Σ over rows of the distance to the nearest medoid, as the metric gives it: a medoid
    with a missing value is at a positive distance from itself under hds, and costs it
    (docs/metrics.md section 11)."""
    return D[list(med)].min(axis=0).sum()


@pytest.mark.parametrize("method", ["fasterpam", "alternate"])
def test_kmedoids_against_brute_force(method):
    rng = np.random.default_rng(0)
    X = mixed_frame(rng, 14)
    model = KMedoids(3, metric="hds", method=method, n_init=6, random_state=0).fit(X)
    D = model.metric_.pairwise(X)
    best = min(total_deviation(D, c) for c in itertools.combinations(range(14), 3))
    assert model.inertia_ >= best - 1e-12
    if method == "fasterpam":
        assert model.inertia_ == pytest.approx(best, rel=1e-12)
    med = model.medoid_indices_
    np.testing.assert_array_equal(model.labels_, np.argmin(D[med], axis=0))
    assert model.inertia_ == pytest.approx(total_deviation(D, med), rel=1e-12)


def census_like(n):
    """Census-like rows (tests/census_like.py: 30 nominal + 10 continuous columns, 5 % of
    the cells missing), without the identifier and the class."""
    from census_like import make
    return make(n, 0).drop(columns=["person_id", "income"])


def test_kmedoids_inertia_is_the_true_loss_on_census_like_data():
    """Most rows have a missing value, so most rows are at a positive distance from
    themselves under heom: inertia_ is the loss of metric_.pairwise, medoids included, and
    FasterPAM's result is a local optimum of that loss (hdist 0.1 counted a medoid at 0
    from itself: inertia_ 1679.45 where pairwise gives 1681.45, and swapping one medoid
    lowered the true loss to 1681.08)."""
    X = census_like(400)
    km = KMedoids(8, random_state=0).fit(X)
    D = km.metric_.pairwise(X)
    med = km.medoid_indices_
    assert (np.diag(D)[med] > 0).any()
    loss = D[med].min(axis=0).sum()
    assert km.inertia_ == pytest.approx(loss, rel=1e-12)
    np.testing.assert_array_equal(km.labels_, np.argmin(D[med], axis=0))
    best = min(D[np.r_[med[:i], j, med[i + 1:]]].min(axis=0).sum()
               for i in range(8) for j in range(len(X)) if j not in med)
    assert best >= loss - 1e-9 * loss


def test_fasterpam_result_is_swap_optimal_and_tiles_agree(monkeypatch):
    rng = np.random.default_rng(3)
    X = mixed_frame(rng, 60)
    a = KMedoids(4, metric="add", random_state=1).fit(X)
    D = a.metric_.pairwise(X)
    td = a.inertia_
    med = list(a.medoid_indices_)
    for i in range(4):
        for c in range(60):
            if c in med:
                continue
            trial = med[:i] + [c] + med[i + 1:]
            assert total_deviation(D, trial) >= td - 1e-9 * td
    monkeypatch.setattr(KMedoids, "FULL_MATRIX_ENTRIES", 0)
    monkeypatch.setattr(KMedoids, "TILE", 7)
    b = KMedoids(4, metric="add", random_state=1).fit(X)
    np.testing.assert_array_equal(a.medoid_indices_, b.medoid_indices_)
    assert a.inertia_ == b.inertia_
    c = KMedoids(4, metric="add", random_state=1, n_jobs=2).fit(X)
    np.testing.assert_array_equal(a.labels_, c.labels_)


def real_table(name):
    """A real dataset without its class, and its numeric columns declared continuous."""
    df, schema = read_dataset(name)
    df = df.drop(columns=schema["class"])
    return df, {"continuous": [c for c in df.columns if df[c].dtype.kind == "f"]}


@pytest.mark.needs_data
@pytest.mark.parametrize("name,seeds,ks", [("Glass", range(8), (3, 6, 9)),
                                           ("iris", range(8), (3, 6, 9)),
                                           ("Zoo", range(2), (3, 9)),
                                           ("credit-a", range(2), (3, 9)),
                                           ("german", range(2), (3, 9))])
def test_fasterpam_is_swap_optimal_on_real_data(name, seeds, ks):
    """At convergence no single swap (medoid slot i given to a non-medoid row j) lowers the
    loss by more than 1e-12 of it (docs/metrics.md section 11), every swap evaluated from
    the metric's own distances.  A candidate whose change was negative by rounding alone
    used to end the search, often in its first pass: Glass, heom, k = 9, random_state=7
    stopped at inertia_ 45.0252 where one swap gives 45.0025 (22 of Glass's 96 fits here
    and 1 of iris's were left one swap short)."""
    X, kinds = real_table(name)
    w = np.random.default_rng(0).integers(1, 4, len(X)).astype(float)
    for metric in ("heom", "gower"):
        D = None
        for weights in (None, w):
            for seed in seeds:
                for k in ks:
                    km = KMedoids(k, metric=metric, metric_params=kinds,
                                  random_state=seed).fit(X, sample_weight=weights)
                    if D is None:
                        D = km.metric_.pairwise(X)
                    med = km.medoid_indices_
                    loss = loss_of(D, med, weights)
                    assert km.inertia_ == pytest.approx(loss, rel=1e-12)
                    L = swap_losses(D, med, weights)
                    i, j = np.unravel_index(np.argmin(L), L.shape)
                    assert L[i, j] >= loss - 1e-12 * loss, \
                        "%s k=%d seed=%d: medoid %d -> row %d gives %r < %r" % (
                            metric, k, seed, med[i], j, L[i, j], loss)


def test_alternate_medoids_are_cluster_medoids():
    rng = np.random.default_rng(5)
    X = mixed_frame(rng, 80)
    m = KMedoids(3, method="alternate", random_state=2).fit(X)
    D = m.metric_.pairwise(X)
    for c, med in enumerate(m.medoid_indices_):
        members = np.flatnonzero(m.labels_ == c)
        sums = D[np.ix_(members, members)].sum(axis=1)
        assert D[med, members].sum() == pytest.approx(sums.min(), rel=1e-12)


def test_kmedoids_sampled_mode_and_centers():
    rng = np.random.default_rng(8)
    X = mixed_frame(rng, 90)
    m = KMedoids(3, max_exact=40, sample_size=30, n_init=3, random_state=4).fit(X)
    D = m.metric_.pairwise(X)
    med = m.medoid_indices_
    assert len(set(med)) == 3
    np.testing.assert_array_equal(m.labels_, np.argmin(D[med], axis=0))
    assert m.inertia_ == pytest.approx(total_deviation(D, med), rel=1e-12)
    # centers are the medoid rows, decoded
    got = m.cluster_centers_
    want = X.iloc[med].reset_index(drop=True)
    pd.testing.assert_frame_equal(got.astype(object).where(got.notna(), None),
                                  want.astype(object).where(want.notna(), None))
    np.testing.assert_array_equal(m.predict(X), m.labels_)
    np.testing.assert_allclose(m.transform(X), D[med].T, rtol=1e-12)


@pytest.mark.needs_data
def test_kmedoids_class_metric_needs_y_and_validation():
    df, schema = read_dataset("credit-a")
    y = df.pop(schema["class"])
    X = df.iloc[:150]
    m = KMedoids(2, metric="hvdm", random_state=0).fit(X, y.iloc[:150])
    assert set(np.unique(m.labels_)) == {0, 1}
    with pytest.raises(ValueError, match="class labels"):
        KMedoids(2, metric="hvdm").fit(X)
    with pytest.raises(ValueError, match="method"):
        KMedoids(2, method="pam").fit(X)
    with pytest.raises(ValueError, match="distinct row indices"):
        KMedoids(2, init=np.array([3, 3])).fit(X)
    with pytest.raises(ValueError, match="row indices"):
        KMedoids(2, init=np.array([0.5, 1.0])).fit(X)
    ok = KMedoids(2, init=np.array([0, 100]), random_state=0).fit(X)
    assert ok.inertia_ > 0


@pytest.mark.needs_data
def test_real_data_kmodes_and_kmedoids_on_credit_a():
    df, schema = read_dataset("credit-a")
    df = df.drop(columns=schema["class"])
    nominal = df.select_dtypes(exclude="float").astype(object)
    km = KModes(2, metric="hds", n_init=2, random_state=0).fit(nominal)
    check_consistent(km, nominal)
    kmd = KMedoids(2, metric="hds", random_state=0).fit(df)
    D = kmd.metric_.pairwise(df.iloc[kmd.medoid_indices_], df)
    assert kmd.inertia_ == pytest.approx(D.min(axis=0).sum(), rel=1e-12)


def test_serial_threshold_does_not_change_results(monkeypatch):
    rng = np.random.default_rng(4)
    X = mixed_frame(rng, 200)
    a = KPrototypes(3, random_state=0, n_init=2, n_jobs=2).fit(X)
    monkeypatch.setattr(_kernels.plan, "SERIAL_PAIRS", 0)
    b = KPrototypes(3, random_state=0, n_init=2, n_jobs=2).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == b.inertia_


@pytest.mark.needs_data
def test_kprototypes_class_metric_with_embedded_values(monkeypatch):
    """VDM values kept as probability rows (no table): centers still minimize the cost."""
    import hdist._core.statistics as est
    df, schema = read_dataset("credit-a")
    y = df.pop(schema["class"]).iloc[:200]
    X = df.iloc[:200]
    monkeypatch.setattr(est, "TABLE_BUDGET", 1)
    kp = KPrototypes(2, metric="hvdm", n_init=2, random_state=0).fit(X, y)
    assert any(c.block == "e" for c in kp.metric_.plan_.components)
    check_consistent(kp, X)
    assert_centers_optimal(kp, X, ("A4", "A6"), 2, rel=1e-9)


def test_scikit_learn_estimator_checks():
    """scikit-learn's estimator checks (the checks feed continuous numbers, which KModes
    refuses unless told to read them as categories, and then its clustering of
    continuous blobs is not expected to pass check_clustering)."""
    from sklearn.base import clone
    from sklearn_checks import failed_checks
    # the seeding draws rows in proportion to their weight, so weighted rows (shuffled
    # by the check) and repeated rows start from different centers, as with
    # scikit-learn's KMeans, which lists this check as an expected failure too; from
    # the same initial centers they agree (tests/test_sample_weight.py; KMedoids, whose
    # visiting order is random too: tests/test_pam.py)
    seeded = {"check_sample_weight_equivalence_on_dense_data":
              "random seeding differs between weighted and repeated rows"}
    for est, expected in ((KPrototypes(3, random_state=0), seeded),
                          (KMedoids(3, random_state=0), seeded),
                          (KModes(3, random_state=0, metric_params={"nominal": "all"}),
                           {"check_clustering": "nominal reading of continuous blobs",
                            **seeded})):
        assert not failed_checks(est, expected)
        assert clone(est).get_params() == est.get_params()


def test_lazy_public_names():
    assert hdist.KModes is KModes and hdist.cluster.KMedoids is KMedoids


def test_without_scikit_learn():
    """The estimators work, with the same parameter protocol, when scikit-learn is absent."""
    import os
    import subprocess
    import sys
    code = (
        "import sys; sys.modules['sklearn'] = None\n"
        "import numpy as np, hdist\n"
        "from hdist.cluster import KModes, NotFittedError\n"
        "X = np.array([['a', 'x'], ['a', 'x'], ['b', 'y'], ['b', 'z']], dtype=object)\n"
        "km = KModes(2, n_init=3, random_state=0)\n"
        "assert km.get_params()['n_clusters'] == 2 and 'KModes(' in repr(km)\n"
        "try:\n    km.predict(X)\nexcept NotFittedError:\n    pass\n"
        "else:\n    raise SystemExit('no error before fit')\n"
        "labels = km.set_params(n_init=2).fit(X).labels_\n"
        "assert labels[0] == labels[1] != labels[2] == labels[3], labels\n"
        "assert 'sklearn' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n"
        "print('ok')\n")
    root = str(ROOT)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=root, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# ----------------------------------------------------------------------------------------
# KModes initialisations: Huang (1998) and Cao, Liang & Bai (2009), by hand

HAND = pd.DataFrame([list(r) for r in ("axp", "axq", "ayp", "byq", "bzp", "czr", "axp")],
                    columns=["a1", "a2", "a3"])


def mismatches(table):
    """Distances [len(idx), n] of rows ``idx`` of ``table`` to every row: mismatches."""
    V = table.to_numpy()
    return lambda idx: np.array([(V != V[i]).sum(axis=1) for i in idx], dtype=float)


def test_cao_initialisation_by_hand():
    from hdist._estimators.cluster import cao_seeds
    # value frequencies: a1 a4 b2 c1, a2 x3 y2 z2, a3 p4 q2 r1, so n m Dens(row) is
    # 11 9 10 6 8 4 11.  First: the densest, row 0 (row 6, its duplicate, ties later).
    # Second: Dens x d(., row 0) = 9 10 18 16 12 0 for rows 1..6 -> row 3.
    # Third: d to the nearer of rows 0 and 3 = 1 1 . 2 3 0 -> scores 9 10 . 16 12 0 -> row 4
    codes = np.stack([pd.factorize(HAND[c], sort=True)[0] for c in HAND.columns], axis=1)
    assert cao_seeds(codes, 3, mismatches(HAND)).tolist() == [0, 3, 4]
    assert cao_seeds(codes, 2, mismatches(HAND)).tolist() == [0, 3]
    # a missing value (code -1) shares nothing: row 0 loses 4/21, row 6 becomes the densest
    miss = codes.copy()
    miss[0, 0] = -1
    assert cao_seeds(miss, 1, mismatches(HAND)).tolist() == [6]
    # row weights count as repeated rows: row 5 three times makes c, z, r frequent
    w = np.array([1, 1, 1, 1, 1, 3, 1.0])
    rep = np.r_[np.arange(7), 5, 5]
    assert cao_seeds(codes, 3, mismatches(HAND), w).tolist() == \
        [rep[i] for i in cao_seeds(codes[rep], 3, lambda idx: mismatches(HAND)(rep[idx])
                                   [:, rep])]
    # the estimator starts from these rows, deterministically, in one run
    km = KModes(3, init="cao").fit(HAND)
    ref = KModes(3, init=HAND.iloc[[0, 3, 4]]).fit(HAND)
    np.testing.assert_array_equal(km.labels_, ref.labels_)
    assert km.inertia_ == ref.inertia_


def test_huang_initialisation_by_hand(monkeypatch):
    from hdist._estimators import cluster
    codes = np.stack([pd.factorize(HAND[c], sort=True)[0] for c in HAND.columns], axis=1)
    # step 3 from given synthetic modes: Q1 = (a, x, p) -> row 0 (distance 0); Q2 = (a, x,
    # p) again -> rows 0 (taken) and 6 (equal to row 0) are passed over, row 1 (distance
    # 1, ties with row 2: the smaller index); Q3 = (c, z, q) -> row 5 (distance 1)
    modes = np.array([[0, 0, 0], [0, 0, 0], [2, 2, 1]])
    monkeypatch.setattr(cluster, "huang_modes", lambda *a, **k: modes)
    V = HAND.to_numpy()
    cats = [sorted(set(HAND[c])) for c in HAND.columns]
    to_modes = lambda m: np.array([(V != np.array([cats[a][v] for a, v in enumerate(r)]))
                                   .sum(axis=1) for r in m], dtype=float)
    got = cluster.huang_seeds(codes, cats, 3, np.random.default_rng(0), to_modes)
    assert got.tolist() == [0, 1, 5]
    monkeypatch.undo()
    # steps 1-2: each attribute's values are drawn with probability proportional to their
    # frequencies, never a missing or unseen value
    miss = codes.copy()
    miss[1, 2] = -1
    drawn = cluster.huang_modes(miss, [3, 3, 3], 60_000, np.random.default_rng(1))
    for a in range(3):
        obs = miss[:, a][miss[:, a] >= 0]
        want = np.bincount(obs, minlength=3) / obs.size
        np.testing.assert_allclose(np.bincount(drawn[:, a], minlength=3) / 60_000, want,
                                   atol=0.01)
    # the estimator: initial rows are data rows, distinct, reproducible
    a = KModes(3, init="huang", n_init=1, random_state=4).fit(HAND)
    b = KModes(3, init="huang", n_init=1, random_state=4).fit(HAND)
    np.testing.assert_array_equal(a.labels_, b.labels_)


def test_cao_initialisation_weights_equal_repeated_rows():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({c: rng.choice(list("uvw"), size=40).astype(object) for c in "abcd"})
    X.loc[rng.random(40) < 0.1, "b"] = None
    sw = rng.integers(0, 4, size=40)
    rows = np.repeat(np.arange(40), sw)
    a = KModes(4, init="cao").fit(X, sample_weight=sw)
    b = KModes(4, init="cao").fit(X.iloc[rows].reset_index(drop=True))
    np.testing.assert_array_equal(a.labels_[rows], b.labels_)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-12)
