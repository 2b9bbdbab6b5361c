"""Search over the encoded rows of a fitted Plan: the rows, the ``"auto"`` rule
(:mod:`hdist._search.choice`) and the one :class:`~hdist._search.searchers.Searcher` it
picked, with what each search found and cost.

:class:`RowIndex` is what :class:`hdist.NeighborsIndex` builds on (it adds the metric,
the encoding of tables and the public methods) and what a fitted :class:`hdist.Metric`
searches its training rows with (:meth:`hdist.Metric.kneighbors`): one search path for
both, so that they run the same algorithm on the same rows.  Its searches return their
results with the record of the path taken (:func:`search_record`); nothing is read back
from a shared object afterwards.
"""
from __future__ import annotations

import threading

import numpy as np

from .._core import progress as _progress
from . import choice as _choice
from . import cuda as _cuda  # noqa: F401  (registers the "cuda" searcher; imports no CuPy)
from .checks import _tallies
from .choice import AUTO_MIN_ROWS, Probe, auto_choice, k_rule, needs_pilot
from .memory import knn_guard, radius_guard
from .searchers import LEAF_SIZE, SEARCHERS, BruteForce, KDTree

#: ``device=`` value -> the searcher that searches on it (None: the one ``algorithm``
#: names); a device other than the CPU searches by brute force
DEVICES = {"cpu": None, "cuda": "cuda"}


def device_algorithm(algorithm, device):
    """The searcher ``algorithm`` names on ``device``: ``algorithm`` itself on the CPU;
    on another device (:data:`DEVICES`) that device's searcher, which ``algorithm`` must
    allow (``"auto"``, ``"brute"`` or the searcher's own name).

    Raises
    ------
    ValueError
        ``device`` is not a key of :data:`DEVICES`, or ``algorithm`` names another
        search structure than brute force with a device other than the CPU.
    """
    if not isinstance(device, str) or device not in DEVICES:
        raise ValueError("device must be one of %s, got %r" % (tuple(DEVICES), device))
    name = DEVICES[device]
    if name is None:
        return algorithm
    if algorithm not in ("auto", "brute", name):
        raise ValueError("device=%r searches by brute force on the device: algorithm must "
                         "be 'auto' or 'brute' with it, got algorithm=%r"
                         % (device, algorithm))
    return name


def search_record(algo, why, threads, found=None):
    """The ``search_`` attribute of a Metric or NeighborsIndex after a search:
    ``algorithm`` ("brute", "kd_tree", "ball_tree", "ivf"), ``path`` (the path the
    searcher took: for brute force "filter" when the matrix-product filter ran and
    "direct" for the tile kernel alone), ``threads``, and ``why`` in words (the
    algorithm's reason, then the path's where the searcher has several), with the
    searcher's own entries (``found.extra``).  ``found``: the
    :class:`~hdist._search.searchers.Found` of the search (None: none ran).  A k-NN call
    adds ``phases`` (seconds per phase of :data:`hdist._core.progress.PHASES`, and
    ``total``)."""
    path = "direct" if algo == "brute" else algo
    if found is not None:
        path = found.path
        if found.why and found.path != algo:
            why = why + "; " + found.why
    rec = {"algorithm": algo, "path": path, "threads": int(threads), "why": why}
    if found is not None:
        rec.update(found.extra)
    return rec


def _concat(found):
    """The evaluations of the searches ``found``, one after the other."""
    if not found:
        return np.zeros(0, dtype=np.intp)
    return np.concatenate([f.evaluations for f in found])


class RowIndex:
    """The rows of an index, the ``"auto"`` rule and the searcher it holds.

    Parameters
    ----------
    algorithm : str, default "auto"
        ``"auto"`` or a key of :data:`hdist._search.searchers.SEARCHERS`.
    leaf_size : int, default 32
        Rows per leaf of the tree searchers.
    device : {"cpu", "cuda"}, default "cpu"
        Where the searches run: ``"cuda"`` is the ``"cuda"`` searcher
        (:func:`device_algorithm`), chosen here once.

    Attributes
    ----------
    algorithm_ : str
        The algorithm in use.
    """

    def __init__(self, algorithm="auto", leaf_size=LEAF_SIZE, device="cpu"):
        self._asked = device_algorithm(algorithm, device)
        self.algorithm = algorithm
        self.device = device
        self.leaf_size = int(leaf_size)

    def _searcher_params(self):
        """The parameters of the searcher asked for (``algorithm``)."""
        return {}

    # -- indexing --------------------------------------------------------------------
    def _index_rows(self, plan, rows, names=None, progress=None, crows=None, defer=False):
        """Index the encoded ``rows`` of ``plan`` (``names``: the column names refusals
        name; ``crows``: their kernel view where the caller has it).  ``defer``: an
        ``"auto"`` rule that needs its pilot answers by brute force, undecided, until
        the searches have covered ``AUTO_DECIDE_PAIRS`` pairs (a fitted Metric's own
        searches: deciding never costs a small call more than answering it); else the
        rule decides and the searcher is built now."""
        self.__dict__.setdefault("_lock", threading.RLock())
        self._plan, self._rows, self._names = plan, rows, names
        self._brute = BruteForce(plan, rows, leaf_size=self.leaf_size, crows=crows)
        self._decision = None
        self._searched = 0
        self._k_choices = {}
        if defer and self._asked == "auto":
            self._searcher, self.algorithm_, self._why = self._brute, "brute", ""
            return
        self._build(self._choose(progress), progress)

    def _choose(self, progress=None):
        """The algorithm to build, with its reason in ``_why``."""
        plan, rows = self._plan, self._rows
        if self._asked == "auto":
            self._auto_n = rows.n
            self._probe = None
            algo, self._why = auto_choice(plan, rows.n, self._pilot, self._race)
            self._probe = None
            self._k_choices = {}
            return algo
        asked = self._asked
        what = "algorithm=%r" % asked if asked == self.algorithm else "device=%r" % (
            self.device,)
        reason = SEARCHERS[asked].refusal(plan, rows, self._names)
        if reason is not None:
            raise ValueError("%s is not exact here: %s" % (what, reason))
        self._why = "%s was asked for" % what
        return asked

    def _pilot(self):
        """Mean distance evaluations of KD-tree queries for a few indexed rows, on a tree
        over all of them: measured on the pilot's trees over a sample of the rows and
        extrapolated (:class:`hdist._search.choice.Probe`)."""
        self._probe = Probe(self._plan, self._rows, self._brute.crows())
        return self._probe.evaluations()

    def _race(self):
        """Seconds of the pilot's queries on the KD-tree (``Probe.race``) and by brute
        force over the indexed rows."""
        return self._probe.race(lambda q, k: self._brute.knn(q, k, 1))

    def _build(self, algo, progress=None):
        """Make and build the searcher of ``algo`` (brute force: the one kept for the
        rule)."""
        if algo == self._brute.name:
            searcher = self._brute
        else:
            params = self._searcher_params() if algo == self._asked else {}
            searcher = SEARCHERS[algo](self._plan, self._rows, leaf_size=self.leaf_size,
                                       crows=self._brute.crows(), **params)
        searcher.build(progress)
        self._searcher, self.algorithm_ = searcher, algo
        self._decision = (searcher, algo, self._why)

    def _decided(self, pairs):
        """``(searcher, algorithm, reason)`` for a search of ``pairs`` (query, row) pairs:
        the rule's choice, made here once where it was deferred (``_index_rows``)."""
        decision = self._decision
        if decision is not None:
            return decision
        with self._lock:        # one decision (and one tree) for threads that meet here
            if self._decision is not None:
                return self._decision
            plan, n = self._plan, self._rows.n
            if needs_pilot(plan, n):
                self._searched += int(pairs)
                limit = _choice.AUTO_DECIDE_PAIRS
                if self._searched < limit:
                    return self._brute, "brute", (
                        "brute force until the searches have covered %d pairs (%d so far),"
                        " when the rule's pilot decides" % (limit, self._searched))
            self._probe = None
            with _progress.phase("decide"):
                algo, why = auto_choice(plan, n, self._pilot, self._race)
            searcher = self._brute
            if algo == KDTree.name:
                with _progress.phase("build"):
                    probe = self._probe
                    if probe is not None and probe.full:
                        searcher = probe.tree
                    else:
                        searcher = KDTree(plan, self._rows, leaf_size=self.leaf_size,
                                          crows=self._brute.crows())
                        searcher.build()
            self._probe = None
            self._searcher, self.algorithm_, self._why = searcher, algo, why
            self._decision = (searcher, algo, why)
            return self._decision

    def _for_k(self, k, searcher, algo, why):
        """The decision for a k-NN search of ``k`` neighbors: as made, except that
        ``"auto"`` decides a k larger than its pilot's at that k
        (:func:`hdist._search.choice.k_rule`: brute force for k near the rows)."""
        if self._asked != "auto" or algo == self._brute.name:
            return searcher, algo, why
        rule = k_rule(self._plan, self._rows, self._brute.crows(), k,
                      lambda q, kk: self._brute.knn(q, kk, 1), self._k_choices)
        if rule is None or rule[0] == algo:
            return searcher, algo, why
        return self._brute, rule[0], rule[1]

    def _insert_rows(self, new):
        """Add the encoded rows ``new`` (the searcher may refuse them: a ValueError); the
        ``"auto"`` rule is revisited as the index grows (a pilot may build a KD-tree)."""
        searcher = self._searcher
        reason = type(searcher).refusal(self._plan, new, self._names)
        if reason is not None:
            raise ValueError("cannot insert these rows into a %s: %s"
                             % (searcher.label, reason))
        n_old = self._rows.n
        rows = self._rows.concat(new)
        self._rows = rows
        self._brute.insert(rows, new, n_old)
        if self._asked == "auto" and (rows.n >= 2 * self._auto_n or (
                self._auto_n < AUTO_MIN_ROWS <= rows.n)):
            self._build(self._choose())
        elif searcher is not self._brute:
            searcher.insert(rows, new, n_old)

    # -- searches ----------------------------------------------------------------------
    def _search_knn(self, rows, k, exclude_self, threads, progress=None, ties=False):
        """k-NN of encoded query ``rows`` (the indexed rows object itself for
        ``exclude_self``), by blocks when ``progress`` reports:
        ``(dist, ind, evaluations, record)``, ``record`` as :func:`search_record`."""
        searcher, algo, why = self._for_k(k, *self._decided(rows.n * self._rows.n))
        report = _progress.reporter(progress, rows.n, "kneighbors")
        with knn_guard(rows.n, k):
            if report is None or (exclude_self and _tallies(ties)):
                f = searcher.knn(rows, k, threads, exclude_self=bool(exclude_self),
                                 ties=ties)
                if report is not None:      # a tally's own rows: one block
                    report(rows.n, rows.n)
                return f.dist, f.ind, f.evaluations, search_record(algo, why, threads, f)
            found = []

            def search(part, kk):
                f = searcher.knn(part, kk, threads, ties=ties)
                found.append(f)
                return f.dist, f.ind
            d, i = _progress.knn_blocks(search, rows, k, bool(exclude_self), report, ties)
        last = found[-1] if found else None
        return d, i, _concat(found), search_record(algo, why, threads, last)

    def _search_radius(self, rows, r, exclude_self, threads, progress=None):
        """Radius lists of encoded query ``rows`` (``exclude_self``: query ``q`` skips
        indexed row ``q``), by blocks when ``progress`` reports:
        ``(dist_lists, ind_lists, evaluations, record)``."""
        searcher, algo, why = self._decided(rows.n * self._rows.n)
        report = _progress.reporter(progress, rows.n, "radius_neighbors")
        dl, il, found = [], [], []
        with radius_guard(rows.n, self._rows.n, r, il):
            if report is None:
                f = searcher.radius(rows, r, threads, exclude_self=bool(exclude_self))
                found.append(f)
                dl += list(f.dist)
                il += list(f.ind)
            else:
                for a, b in _progress.blocks(rows.n, report):
                    f = searcher.radius(rows.take(np.arange(a, b)), r, threads)
                    found.append(f)
                    d_, i_ = f.dist, f.ind
                    if exclude_self:        # the block's own rows are a..b-1
                        keep = [i != a + t for t, i in enumerate(i_)]
                        d_ = [d[m] for d, m in zip(d_, keep)]
                        i_ = [i[m] for i, m in zip(i_, keep)]
                    dl += list(d_)
                    il += list(i_)
        last = found[-1] if found else None
        return dl, il, _concat(found), search_record(algo, why, threads, last)

    def __getstate__(self):
        st = dict(self.__dict__)
        for key in ("_lock", "_decision", "_probe"):
            st.pop(key, None)
        return st

    def __setstate__(self, st):
        # every RowIndex has "_asked" from its construction; an index pickled before the
        # searchers existed kept its tree or lists itself ("_tree", "_lists") and had no
        # "_asked": no release wrote that state, so it is refused, not converted
        if "_asked" not in st or "_tree" in st or "_lists" in st:
            raise ValueError("%s: this index was pickled by an earlier, unreleased hdist; "
                             "fit it again" % type(self).__name__)
        self.__dict__.update(st)
        self._lock = threading.RLock()
        searcher = self.__dict__.get("_searcher")
        self._decision = None if searcher is None else (searcher, self.algorithm_,
                                                        self._why)
