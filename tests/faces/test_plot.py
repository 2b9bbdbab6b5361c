"""hdist.plot: each figure renders to a non-trivial PNG (Agg) and draws the numbers the
metric computes."""
import numpy as np
import pytest

import hdist
from hdist.datasets import load_credit_a

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from hdist import plot  # noqa: E402
from datadir import ROOT


@pytest.fixture(scope="module")
def fitted():
    X, y = load_credit_a()
    return hdist.Metric("hvdm").fit(X, y), X, y


def rendered(ax, path):
    ax.figure.savefig(path, dpi=60)
    plt.close(ax.figure)
    img = mpimg.imread(path)
    assert path.stat().st_size > 5_000
    assert img.std() > 0.05                       # not a blank canvas
    return img


def test_explain_bars_are_the_terms(fitted, tmp_path):
    m, X, _ = fitted
    x, y = X.iloc[0], X.iloc[5]
    e = m.explain(x, y)
    ax = plot.explain(m, x, y)
    widths = {t.get_text().replace(" (skipped)", ""): b.get_width()
              for t, b in zip(ax.get_yticklabels(), ax.patches)}
    assert widths == pytest.approx(e.to_dict(), rel=1e-12)
    bars = [b.get_width() for b in ax.patches]
    assert bars == sorted(bars, reverse=True)
    assert ("%.4g" % e.distance) in ax.get_title()
    rendered(ax, tmp_path / "explain.png")


def test_explain_marks_skipped_attributes(tmp_path):
    X, _ = load_credit_a()
    g = hdist.Metric("gower").fit(X)
    row = X.iloc[int(np.flatnonzero(X.isna().any(axis=1).to_numpy())[0])]
    e = g.explain(row, X.iloc[1])
    assert e.skipped.any()
    ax = plot.explain(g, row, X.iloc[1], sort=False)
    names = [t.get_text() for t in ax.get_yticklabels()]     # top to bottom
    assert names == [c + (" (skipped)" if s else "") for c, s in zip(e.columns, e.skipped)]
    rendered(ax, tmp_path / "skipped.png")


def test_neighbor_distances_histograms(fitted, tmp_path):
    m, X, _ = fitted
    d, _ = m.kneighbors(k=5, exclude_self=True)
    ax = plot.neighbor_distances(d, ranks=[1, 3, 5], bins=20)
    assert len(ax.patches) == 3
    assert [t.get_text() for t in ax.get_legend().get_texts()] == \
        ["neighbor 1", "neighbor 3", "neighbor 5"]
    # each step outline encloses the histogram of its rank
    edges = np.histogram_bin_edges(d[:, [0, 2, 4]], bins=20)
    counts, _ = np.histogram(d[:, 0], bins=edges)
    top = ax.patches[0].get_xy()[:, 1]
    assert top.max() == counts.max()
    rendered(ax, tmp_path / "hist.png")
    ax = plot.neighbor_distances(d[:, 0])
    assert len(ax.patches) == 1
    plt.close(ax.figure)


def test_neighbor_distances_errors():
    with pytest.raises(ValueError, match="ranks must be between 1 and 2"):
        plot.neighbor_distances(np.ones((4, 2)), ranks=[3])
    with pytest.raises(ValueError, match="finite"):
        plot.neighbor_distances([[np.nan]])
    with pytest.raises(ValueError, match="non-empty"):
        plot.neighbor_distances(np.zeros((0, 3)))


def test_value_distances_heatmap(fitted, tmp_path):
    m, _, _ = fitted
    table = m.value_distances("A6")
    ax = plot.value_distances(m, "A6")
    np.testing.assert_array_equal(ax.images[0].get_array(), table.to_numpy())
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == table.size and texts[1] == format(table.iloc[0, 1], ".2f")
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(v) for v in table.index]
    rendered(ax, tmp_path / "heat.png")
    with pytest.raises(ValueError, match="continuous"):
        plot.value_distances(m, "A2")


def test_drawing_on_a_given_axes(fitted):
    m, X, _ = fitted
    fig, axes = plt.subplots(1, 2)
    assert plot.value_distances(m, 0, ax=axes[0], annotate=False) is axes[0]
    assert not axes[0].texts
    assert plot.explain(m, X.iloc[0], X.iloc[1], ax=axes[1]) is axes[1]
    plt.close(fig)


def test_matplotlib_is_not_imported_by_hdist():
    import subprocess
    import sys
    code = "import hdist, hdist.plot, sys; print('matplotlib' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=str(ROOT))
    assert r.stdout.strip() == "False", r.stderr


def test_prototypes_are_drawn_at_their_values(tmp_path):
    X, y = load_credit_a()
    clf = hdist.PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    cont_name = next(n for n, k in zip(clf.metric_.schema_.names_, clf.metric_.kinds_)
                     if k == "continuous")
    nom_name = next(n for n, k in zip(clf.metric_.schema_.names_, clf.metric_.kinds_)
                    if k == "nominal")
    ax = plot.prototypes(clf, X, y, (cont_name, nom_name))
    pts = ax.collections[-1].get_offsets()
    assert len(pts) == len(clf.prototypes_)
    np.testing.assert_allclose(pts[:, 0], clf.prototypes_[cont_name].to_numpy(float))
    cats = list(clf.metric_.schema_.categories_[list(X.columns).index(nom_name)])
    assert [cats[int(v)] for v in pts[:, 1]] == list(clf.prototypes_[nom_name])
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(c) for c in cats]
    assert len(ax.collections) == len(clf.classes_) + 1
    rendered(ax, tmp_path / "prototypes.png")
    with pytest.raises(ValueError, match="no column named 'nope'"):
        plot.prototypes(clf, attributes=("nope", 0))
    with pytest.raises(ValueError, match="not fitted"):
        plot.prototypes(hdist.PrototypeClassifier())


def test_explain_takes_a_fitted_estimator(tmp_path):
    """An estimator stands for its fitted metric; a PrototypeClassifier compares a row with
    the prototype that wins it; anything else is refused with a TypeError naming it."""
    X, y = load_credit_a()
    clf = hdist.KNeighborsClassifier(metric="hvdm").fit(X, y)
    ax = plot.explain(clf, X.iloc[0], X.iloc[5])
    bars = sorted(b.get_width() for b in ax.patches)
    assert bars == pytest.approx(sorted(clf.metric_.explain(X.iloc[0], X.iloc[5]).terms),
                                 rel=1e-12)
    assert "hvdm" in ax.get_title()
    rendered(ax, tmp_path / "clf.png")
    proto = hdist.PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    e = proto.explain(X.iloc[[3]])
    ax = plot.explain(proto, X.iloc[3])
    assert sorted(b.get_width() for b in ax.patches) == pytest.approx(sorted(e.terms.terms))
    plt.close(ax.figure)
    with pytest.raises(TypeError, match="needs the second row y"):
        plot.explain(clf, X.iloc[0])
    with pytest.raises(TypeError, match="KNeighborsClassifier that is not fitted"):
        plot.explain(hdist.KNeighborsClassifier(), X.iloc[0], X.iloc[1])
    with pytest.raises(TypeError, match="got str"):
        plot.explain("hvdm", X.iloc[0], X.iloc[1])
