"""What one :meth:`hdist.Metric.fit` produced that queries read (:class:`FitState`), and
the checks of the training data that fit makes before it learns anything."""
from __future__ import annotations

import threading
import warnings

import numpy as np

from .._core.plan import IGNORE, ONE, SYMBOL
from .._core.schema import CONTINUOUS, _caller_level, encode_labels
from .._core.threads import built_once
from .rowindex import RowIndex
from .searchers import LEAF_SIZE


class FitState:
    """What one :meth:`Metric.fit` produced that queries read: the Plan, the encoded
    training rows, their class codes, and what is derived from those rows on first use
    (the kernels' view of them, the index the searches run on).

    ``fit`` builds a new object and replaces the old one whole; ``set_params`` drops it.
    A cache therefore never outlives the rows it was derived from, and an index or
    estimator holding a reference can tell whether the metric was re-fitted under it
    (:meth:`Metric._check_same_fit`).

    Threads share it: ``lock`` makes the kernels' view, the index and its search choice
    (with its KD-tree) be built once, however many threads ask at once; the
    matrix-product filter's entries in the brute-force searcher's cache are built by one
    thread under the cache's own lock (its ``"lock"`` entry; the others wait rather than
    each build a copy), published whole, and never changed afterwards."""

    def __init__(self, plan, train, y, unseen=None):
        self.plan, self.train, self.y = plan, train, y
        # codes of the values of the training rows the statistics did not see (rows of
        # sample_weight 0), per nominal column; None when there are none
        self.unseen = unseen
        self._crows = None
        self._index = None
        self.lock = threading.RLock()

    def crows(self):
        """The training rows as the kernels read them (built once)."""
        from .._kernels import CRows
        return built_once(self, "_crows", self.lock, lambda: CRows(self.train))

    def _search_index(self):
        """The index over the training rows that :meth:`Metric.kneighbors` and
        :meth:`Metric.radius_neighbors` search (built once): the ``"auto"`` rule of
        :class:`hdist.NeighborsIndex`, answering by brute force until the searches have
        covered ``AUTO_DECIDE_PAIRS`` pairs where the rule needs its pilot
        (:meth:`hdist._search.rowindex.RowIndex._index_rows`)."""
        def make():
            index = RowIndex("auto", LEAF_SIZE)
            index._index_rows(self.plan, self.train, self.plan.names, crows=self.crows(),
                              defer=True)
            return index
        return built_once(self, "_index", self.lock, make)

    def __getstate__(self):
        return {"plan": self.plan, "train": self.train, "y": self.y, "unseen": self.unseen}

    def __setstate__(self, st):
        self.__init__(st["plan"], st["train"], st["y"], st.get("unseen"))


def _check_empty_columns(schema, cont, nom, pol_c, pol_n):
    """A column with no observed training value (a cross-validation fold can lose a rare
    column) is fitted with a warning under the "one" and "ignore" policies, where every
    comparison with a missing value is defined without training statistics; any other
    policy needs them, and the column is refused."""
    ic = inom = 0
    for name, kind in zip(schema.names_, schema.kinds_):
        if kind == CONTINUOUS:
            empty, policy = bool(np.isnan(cont[:, ic]).all()), pol_c
            ic += 1
        else:
            empty, policy = bool((nom[:, inom] < 0).all()), pol_n
            inom += 1
        if not empty:
            continue
        if policy not in (ONE, IGNORE) and not (policy == SYMBOL and kind == CONTINUOUS):
            raise ValueError("column %r has no observed value in the training data; with "
                             "missing=%r it cannot be fitted (use missing 'one' or "
                             "'ignore' for it, or drop the column)" % (name, policy))
        warnings.warn("column %r has no observed value in the training data: every "
                      "training row is missing there (missing=%r)" % (name, policy),
                      UserWarning, stacklevel=_caller_level())


def _kept_labels(y, n, keep):
    """Class labels of all ``n`` rows -> (codes of the rows ``keep``, their classes, codes
    of all rows), the classes being those of the kept rows only; a row whose class no
    kept row has gets code -1.  Labels of every row are validated."""
    codes, classes = encode_labels(y, n)
    present = np.unique(codes[keep])
    remap = np.full(len(classes), -1, dtype=np.int64)
    remap[present] = np.arange(present.size)
    return remap[codes[keep]], [classes[i] for i in present], remap[codes]
