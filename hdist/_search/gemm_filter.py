"""Matrix-product candidate filter for exact p = 2 k-NN and radius search.

For ``p = 2`` every term of HEOM/HVDM-like metrics is a squared Euclidean distance in a
small embedding: a scaled continuous value, a one-hot code (overlap: ``½‖e_v − e_w‖²``
times ``w``), a row of class probabilities (VDM N2/N3), a class-posterior vector.  With
``ẽ`` the embedding less a centre (0 when missing) and ``s = ‖ẽ‖²``, presence ``p`` and
absence ``q = 1 − p``, penalty ``A`` (the term when the other value is missing) and
both-missing term ``B``, one attribute contributes, under the "one"/"max"/"symbol"
policies,

    s_x + s_y − 2 ẽ_x·ẽ_y + q_y · (p_x (A_x − s_x) + q_x B) + q_x · p_y (A_y − s_y),

so the reduced distance of all pairs of a tile is one matrix product of the centred
embeddings (plus their squared norms) and two sparse additions: for each attribute a
query misses, one reference-side column ``g = p_y (A_y − s_y)`` added to that query's
estimates, and for each attribute a reference row misses, the query's
``h = p_x (A_x − s_x) + q_x B``.  The latter is added only to the pairs whose estimate
with a lower bound of it passes the threshold: the product keeps the length of the data
without missing values.  When the query's ``h`` are all >= 0 the bound is, in float32,
the ``h`` of the row's first two missing attributes (exact for the many rows missing at
most two of the first 24 attributes), or of one and the others' number times the
smallest ``h``: two entries of a 32-entry table per query indexed by codes per row
(``miss_codes``).  Otherwise it is the sum of the query's negative ``h``.  The fused
float32 search's own product kernel adds those two entries and the query's columns to
its sums before storing them (on AVX-512 in registers, from the table rounded down to
bfloat16 where the CPU has AVX512_BF16: one permutation and one dot product per 16 rows).
Each embedding is projected on the span of its reference values first (C class
probabilities span C − 1 dimensions), which shortens the product without changing it.

That estimate is only a *filter*: a pair is computed exactly by the brute-force kernel's
``pair_reduced`` unless its estimate, minus a bound on the rounding error of both
computations, already exceeds the query's current k-th distance (or the radius).  The
neighbors and distances returned are therefore exactly the brute force ones, whatever
the BLAS, its threads or the tile sizes.  While a query's k-NN heap is not yet full (a
tile of at least 256 reference rows, normally its first; k, plus one with
``exclude_self``, at most 16) it is first offered the rows with the smallest estimates of
64 interleaved groups of the tile: its k-th distance is then near its final value early,
instead of dropping row after row through the tile with a pair computed exactly at each
drop (k = 5 against 20 000 mixed rows: 45 rows enter a query's heap in index order, 16
with the seeds).
"""
from __future__ import annotations

import math
import threading

import numpy as np

from .._core.plan import IGNORE, TableComponent

#: largest augmented dimension for which the filter is used
MAX_DIM = 512
#: entries of a feature matrix beyond this magnitude risk overflow in the product
MAX_ABS = 1e100
#: the same for float32 products (squares of features stay far below float32's max)
MAX_ABS32 = 1e15
_U = 2.0 ** -53

_controller = None


def _blas_limit(n_threads):
    """Context limiting BLAS threads (threadpoolctl when installed, else a no-op)."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        import contextlib
        return contextlib.nullcontext()
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=n_threads, user_api="blas")


def eligible(plan):
    """True when the plan's terms are all squared Euclidean (p = 2) embeddable."""
    if plan.pmode != 2 or plan.has_ignore:
        return False
    for a in plan.t_attr:
        if getattr(plan.components[a], "embedding", None) is None:
            return False
    if plan.me and not np.all(plan.e_q == 2):
        return False
    return True


def _attributes(plan, rows, coded=False):
    """Per attribute: (E [n, d] with zeros where missing, present [n], A [n], B, vals,
    codes); None when the rows have unseen overlap values or the embedding would exceed
    ``MAX_DIM`` columns (checked before anything is allocated: a wide one-hot costs more
    than it saves).  For nominal attributes ``vals`` holds the embedding of each value and
    ``codes`` each row's (``E = vals[codes]``, -1 where missing; with ``coded`` E is left
    out, None: the query side looks the values up); None for the others."""
    n = rows.n
    dim = plan.mc + 2 * plan.m + 2 + sum(plan.components[a].n_values for a in plan.o_attr) \
        + sum(np.shape(plan.components[a].embedding)[1] for a in plan.t_attr) + plan.D
    if dim > MAX_DIM:
        return None
    out = []
    for k in range(plan.mc):
        # from the training minimum before the (inexact) scaling, so that a column of large
        # values with a small spread keeps its digits
        v = (rows.c[:, k] - plan.c_elo[k]) * (plan.c_inv[k] * np.sqrt(plan.c_rw[k]))
        pres = ~np.isnan(v)
        out.append((np.where(pres, v, 0.0)[:, None], pres, rows.cpen[:, k], plan.c_both[k],
                    None, None))
    for k, a in enumerate(plan.o_attr):
        V = plan.components[a].n_values
        codes = rows.o[:, k]
        if (codes >= V).any():
            return None  # unseen values: equality of two unseen values has no embedding
        out.append(_coded(np.eye(V) * np.sqrt(plan.weights[a] / 2.0), codes, plan.o_miss[k],
                          coded))
    for k, a in enumerate(plan.t_attr):
        emb = np.asarray(plan.components[a].embedding, dtype=np.float64)
        codes = np.minimum(rows.t[:, k], emb.shape[0] - 1)
        out.append(_coded(emb * np.sqrt(plan.weights[a]), codes, plan.t_miss[k], coded))
    return out + _embedded_attributes(plan, rows)


def _embedded_attributes(plan, rows):
    """The tuples of :func:`_attributes` for the attributes embedded as vectors."""
    n = rows.n
    out = []
    for k in range(plan.me):
        lo, hi = plan.e_off[k], plan.e_off[k + 1]
        E = rows.e[:, lo:hi] * np.sqrt(plan.e_rw[k])
        pres = ~np.isnan(E[:, 0]) if hi > lo else np.ones(n, bool)
        E = np.where(pres[:, None], E, 0.0)
        out.append((E, pres, np.full(n, plan.e_miss[k]), plan.e_miss[k], None, None))
    return out


#: an embedding is projected on the span of its reference values when every row lies
#: within this distance of that span (far below float32's rounding of the product)
SPAN_TOL = 1e-9


def _span(E, c):
    """An orthonormal basis ``[d, r]`` of the span of the rows of ``E`` less their mean
    (r < d; the class-probability vectors of C classes span C - 1 dimensions) and the
    centre ``c`` moved onto that affine span, or ``(None, c)`` when that saves nothing or
    the embedding is too large for the tolerance to be negligible."""
    if E.shape[1] < 2 or len(E) == 0:
        return None, c
    mean = E.mean(axis=0)
    U = E - mean
    if np.abs(U).max(initial=0) > 1e6:
        return None, c
    _, sv, Vt = np.linalg.svd(U, full_matrices=False)
    r = int(np.count_nonzero(sv > 1e-10 * max(sv[0], 1e-300))) if sv.size else 0
    if r >= E.shape[1]:
        return None, c
    B = Vt[:r].T
    c = mean + B @ (B.T @ (c - mean))
    if not _in_span(E - c, B):
        return None, c
    return B, c


def _in_span(U, B):
    """True when every row of ``U`` lies within ``SPAN_TOL`` of the span of ``B``."""
    res = U - (U @ B) @ B.T
    return bool(np.all(np.einsum("ij,ij->i", res, res) <= SPAN_TOL ** 2))


def _coded(vals, codes, miss, coded):
    """The tuple of :func:`_attributes` for a nominal attribute: value ``v`` embedded as
    ``vals[v]``, code -1 missing (penalty and both-missing term ``miss``)."""
    pres = codes >= 0
    at = (None, pres, float(miss), miss, vals, codes)
    return at if coded else (_embedded(at),) + at[1:]


def _embedded(at):
    """An attribute's ``E`` (zeros where missing) from its tuple of :func:`_attributes`,
    looked up from its values' embeddings when the tuple leaves it out."""
    E, pres, _, _, vals, codes = at
    if E is None:
        E = vals[np.maximum(codes, 0)]
        E[~pres] = 0.0
    return E


def _reference(plan, R, cache, project=True):
    """The reference side, computed once per reference set (kept in ``cache``): per
    attribute the embedding's centre and (``project``) a basis of its span, the
    attributes missing somewhere in ``R`` (``miss``), per row the positions in ``miss``
    of those it misses (``rptr``/``ridx``, compressed rows).  Returns ``(ref, feats)``,
    ``feats`` the rows' features (:func:`_features`) when this call made them, else
    None: they are the largest arrays here and searches read them in their own
    precision (the cache's per-precision entries), so the cache does not keep them;
    ``(None, None)`` when the plan or rows do not allow it."""
    key = "ref" if project else "ref-full"
    ref = cache.get(key)
    if ref is not None:
        return ref, None
    # the nominal attributes' embeddings are looked up one attribute at a time, when
    # needed: all of them at once would take as much memory as the features
    attrs = _attributes(plan, R, coded=True)
    if attrs is None:
        return None, None
    centres, bases, vtab = [], [], {}
    for a, (E, pres, _, _, vals, codes) in enumerate(attrs):
        if E is not None:
            P = E[pres]
        else:
            # a nominal attribute's distinct values held by the rows: the same extremes
            # and the same span as one embedding per row, from a few rows
            P = vals[np.bincount(codes[pres], minlength=len(vals)) > 0]
        c = 0.5 * (P.min(axis=0) + P.max(axis=0)) if len(P) else np.zeros(P.shape[1])
        basis, c = _span(P, c) if project else (None, c)
        centres.append(c)
        bases.append(basis)
        if vals is not None:
            vtab[a] = _value_table(vals, c, basis)
    miss = tuple(i for i, at in enumerate(attrs) if not at[1].all())
    n = R.n
    absent = np.column_stack([~attrs[a][1] for a in miss] + [np.zeros(n, bool)])
    rptr = np.zeros(n + 1, dtype=np.intp)
    np.cumsum(absent.sum(axis=1), out=rptr[1:])
    ridx = np.nonzero(absent)[1].astype(np.intp)
    del absent
    # checked and coded once for every search of these rows (read-only from here, so
    # RefMissing keeps them without a copy)
    rptr.flags.writeable = ridx.flags.writeable = False
    from .._kernels import RefMissing
    refmiss = RefMissing(rptr, ridx, len(miss)) if ridx.size else None
    ref = {"centres": centres, "bases": bases, "miss": miss, "rptr": rptr, "ridx": ridx,
           "vtab": vtab, "refmiss": refmiss}
    _coded_tables(plan, ref, attrs)
    feats = _features(attrs, ref, n)
    cache[key] = ref
    return ref, feats


def _features(attrs, ref, n):
    """The reference rows' features in float64 against ``ref``'s centres and bases:
    ``Y = [-2 ẽ per attribute, 1, Σ s]`` and the missing-query columns ``g [m, n]``
    (``attrs``: :func:`_attributes` of the ``n`` rows, emptied as it is read)."""
    widths = [(E if E is not None else vals).shape[1] if b is None else b.shape[1]
              for (E, _, _, _, vals, _), b in zip(attrs, ref["bases"])]
    # Y is filled in place: the rows' features are the largest arrays here
    Y = np.empty((n, sum(widths) + 2))
    g = np.empty((len(attrs), n))
    Y[:, -2] = 1.0
    ssum = np.zeros(n)      # Σ s, summed contiguously and written to Y once
    x = 0
    for a, (c, basis) in enumerate(zip(ref["centres"], ref["bases"])):
        pres, A, codes = attrs[a][1], attrs[a][2], attrs[a][5]
        if a in ref["vtab"]:
            # a nominal attribute: its rows' ẽ and s looked up in the values' table (the
            # query side's too), whose last row is a missing value's (0, 0)
            Ev, sv, _ = ref["vtab"][a]
            at = np.where(pres, codes, len(Ev) - 1)
            attrs[a] = None
            Et, s = Ev.take(at, axis=0), sv.take(at)     # (take: numpy's fast gather)
        else:                       # continuous or embedded: E is given
            E = attrs[a][0]
            attrs[a] = None         # each embedding goes once its columns are written
            Et = _centred(E, pres, c, basis)
            del E
            s = np.einsum("ij,ij->i", Et, Et)
        for col in range(widths[a]):    # column by column: faster strided writes
            np.multiply(Et[:, col], -2.0, out=Y[:, x + col])
        del Et
        x += widths[a]
        ssum += s
        g[a] = np.where(pres, A - s, 0.0)
    Y[:, -1] = ssum
    return Y, g


def _centred(E, pres, c, B):
    """``ẽ``: the embedding less its centre, in the basis ``B`` (None: as it is), 0 where
    the value is missing."""
    Et = np.where(pres[:, None], E - c, 0.0)
    return Et if B is None else Et @ B


def _value_table(vals, c, basis):
    """A nominal attribute's ``ẽ`` and ``s`` per value, and whether the value lies on the
    span ``basis`` (None: no projection), with a last row for a missing value (0, 0,
    True): the query side looks its rows up instead of projecting each."""
    nv = len(vals)
    Et = _centred(vals, np.ones(nv, bool), c, basis)
    if basis is None:
        ok = np.ones(nv, bool)
    else:
        res = (vals - c) - Et @ basis.T
        ok = np.einsum("ij,ij->i", res, res) <= SPAN_TOL ** 2
    Et = np.vstack([Et, np.zeros((1, Et.shape[1]))])
    return Et, np.append(np.einsum("ij,ij->i", Et[:nv], Et[:nv]), 0.0), np.append(ok, True)


def _coded_tables(plan, ref, attrs):
    """The value tables of the nominal attributes the query side looks up, concatenated
    for :func:`hdist._kernels.query_coded` (kept in ``ref``): their number and total
    width, and per attribute its table of ``ẽ`` rows (the missing value's last), ``s``,
    ``ok``, the term against a missing value and its column of ``H`` (-1: none); also
    ``hpos``, the column of ``H`` of every attribute of ``ref["miss"]``."""
    tabs = ref.get("coded")
    if tabs is None:
        pos = [a for a in range(plan.mc, len(attrs)) if attrs[a][4] is not None]
        mc, mo = plan.mc, plan.mo
        if pos != list(range(mc, mc + mo + plan.mt)):
            raise AssertionError("the looked-up attributes must be the nominal ones, after "
                                 "the continuous ones")
        hpos = {a: h for h, a in enumerate(ref["miss"])}
        Ev = [ref["vtab"][a][0] for a in pos]
        sv = [ref["vtab"][a][1] for a in pos]
        ok = [ref["vtab"][a][2] for a in pos]
        tabs = {
            "n": len(pos),
            "ev": np.concatenate([E.ravel() for E in Ev] + [np.zeros(0)]),
            "ev_off": np.cumsum([0] + [E.size for E in Ev]).astype(np.intp),
            "width": np.array([E.shape[1] for E in Ev], dtype=np.intp),
            "cols": sum(E.shape[1] for E in Ev),
            "sv": np.concatenate(sv + [np.zeros(0)]).astype(np.float64),
            "ok": np.concatenate(ok + [np.zeros(0, bool)]).astype(np.uint8),
            "sv_off": np.cumsum([0] + [len(v) for v in sv]).astype(np.intp),
            "miss": np.array([float(attrs[a][3]) for a in pos], dtype=np.float64),
            "hcol": np.array([hpos.get(a, -1) for a in pos], dtype=np.intp),
            "hpos": hpos,
            # the continuous attributes' H columns, centres, scales and both-missing
            # terms, the overlap attributes'
            # numbers of values and the last embedding row of each table attribute (the
            # unseen values')
            "c_hcol": np.array([hpos.get(a, -1) for a in range(mc)], dtype=np.intp),
            "c_centre": np.array([ref["centres"][a][0] for a in range(mc)], dtype=np.float64),
            "c_scale": np.ascontiguousarray(plan.c_inv * np.sqrt(plan.c_rw), dtype=np.float64),
            "c_both": np.ascontiguousarray(plan.c_both, dtype=np.float64),
            "o_V": np.array([plan.components[a].n_values for a in plan.o_attr], dtype=np.intc),
            "t_last": np.array([np.shape(plan.components[a].embedding)[0] - 1
                                for a in plan.t_attr], dtype=np.intc),
        }
        ref["coded"] = tabs
    return tabs


def _queries(plan, Q, ref):
    """The query side against ``ref``: ``X = [ẽ per attribute, Σ s, 1]``,
    ``H = p (A - s) + q B`` per attribute of ref["miss"] (float64, [n, len(miss)]) and, per row,
    the attributes it misses (``qptr``, ``qidx``: the rows of ``g`` its estimates
    add); None when the rows do not allow it, "off-span" when a value lies off the span
    ``ref`` projects on.  The continuous attributes are computed by
    :func:`hdist._kernels.query_continuous`, the nominal attributes' values looked up in
    their tables by :func:`hdist._kernels.query_coded`: one pass over the rows each."""
    from .._kernels import miss_lists, query_coded, query_continuous
    n, mc, mo, mt = Q.n, plan.mc, plan.mo, plan.mt
    tabs = ref["coded"]
    if mo and (Q.o >= tabs["o_V"]).any():
        return None  # unseen values: equality of two unseen values has no embedding
    nc = tabs["n"]
    rest = _embedded_attributes(plan, Q)     # the others: embedded, computed here
    first = mc + nc
    widths = [E.shape[1] if ref["bases"][first + r] is None
              else ref["bases"][first + r].shape[1] for r, (E, *_) in enumerate(rest)]
    K = mc + tabs["cols"] + sum(widths) + 2
    X = np.empty((n, K))
    const = np.zeros(n)
    miss = ref["miss"]
    hpos = tabs["hpos"]       # attribute -> its column of H
    H = np.empty((n, len(miss)))
    absent = np.zeros((n, first + len(rest)), dtype=np.uint8)
    if mc:
        # the continuous attributes as one block (one column each, never projected),
        # from the training minimum before the (inexact) scaling, so that a column of
        # large values with a small spread keeps its digits
        query_continuous(np.ascontiguousarray(Q.c), np.ascontiguousarray(Q.cpen),
                         plan.c_elo, tabs["c_scale"], tabs["c_centre"], tabs["c_both"],
                         tabs["c_hcol"], X, const, H, absent)
    if nc:
        codes = np.empty((n, nc), dtype=np.int32)
        codes[:, :mo] = Q.o
        codes[:, mo:] = np.minimum(Q.t, tabs["t_last"])
        if not query_coded(codes, tabs["ev"], tabs["ev_off"], tabs["width"], tabs["sv"],
                           tabs["ok"], tabs["sv_off"], tabs["miss"], tabs["hcol"], X, mc,
                           const, H, absent, mc):
            return "off-span"
    x = mc + tabs["cols"]
    for r, (w, (E, pres, A, B, _, _)) in enumerate(zip(widths, rest)):
        a = first + r
        c, basis = ref["centres"][a], ref["bases"][a]
        if basis is not None and not _in_span(E[pres] - c, basis):
            return "off-span"
        Et = _centred(E, pres, c, basis)
        s = np.einsum("ij,ij->i", Et, Et)
        X[:, x:x + w] = Et
        x += w
        const += s
        if a in hpos:
            H[:, hpos[a]] = np.where(pres, A - s, B)
        absent[:, a] = ~pres
    X[:, -2] = const
    X[:, -1] = 1.0
    qptr, qidx = miss_lists(absent)
    return X, H, qptr, qidx


class _Filter:
    """Everything a filtered search needs: features of both sides in the product's
    precision, their norms (the rounding margin) and the missing-query columns."""

    def __init__(self, Xg, nx, Yg, ny_chunk, g, gmin, qptr, qidx, eps, r_chunk, H, rptr,
                 ridx, hc, Yp=None, refmiss=None):
        self.Xg, self.nx, self.Yg, self.ny_chunk = Xg, nx, Yg, ny_chunk
        self.g, self.gmin, self.qptr, self.qidx = g, gmin, qptr, qidx
        self.eps, self.r_chunk = eps, r_chunk
        self.H, self.rptr, self.ridx, self.hc = H, rptr, ridx, hc
        self.Yp = Yp      # float32 only: Yg as panels (hdist._kernels.gemm_panels)
        self.refmiss = refmiss      # rptr/ridx checked and coded (RefMissing), or None

    def extra(self, refmiss=False):
        """The keyword arguments of ``gemm_select`` / ``gemm_radius_select``; with
        ``refmiss``, of ``GemmKnnSelect``, which takes the reference rows' missing
        attributes as checked and coded once (``refmiss=``) instead of ``rptr``/``ridx``."""
        kw = {}
        if self.qidx.size:
            kw.update(gy=self.g, qptr=self.qptr, qidx=self.qidx, gmin=self.gmin)
        if self.ridx.size:
            kw.update(hq=self.H, hc=self.hc)
            if refmiss and self.refmiss is not None:
                kw.update(refmiss=self.refmiss)
            else:
                kw.update(rptr=self.rptr, ridx=self.ridx)
        return kw


def _prepare(plan, Q, R, cache, r_chunk, dtype=np.float32):
    """:func:`_prepare_rows`; the reference side's entries of ``cache`` are built under
    the cache's lock, by one thread while the others wait: threads sharing a fitted
    metric would each build the features of every reference row at once (the largest
    arrays of the filter; with IVDM's class-probability vectors, several times the
    rows), multiplying the peak of memory by the threads."""
    key = ("Y", np.dtype(dtype).str, r_chunk, dtype == np.float32)
    if cache.get("ref" if dtype == np.float32 else "ref-full") is not None and \
            cache.get(key) is not None:
        return _prepare_rows(plan, Q, R, cache, r_chunk, dtype)
    with cache.setdefault("lock", threading.RLock()):
        return _prepare_rows(plan, Q, R, cache, r_chunk, dtype)


def _prepare_rows(plan, Q, R, cache, r_chunk, dtype=np.float32):
    """A :class:`_Filter` for queries ``Q`` against ``R``, or None when the plan, the rows
    or their magnitudes do not allow the filter.

    ``reduced(q, j) = X[q] · Y[j] + Σ g[a, j] + Σ H[q, t]``, the first sum over the
    attributes ``a`` missing in ``q``, the second over those ``t`` missing in ``j``:
    with ``ẽ`` an attribute's embedding less its centre (0 when missing), ``s = ‖ẽ‖²``,
    ``p``/``q`` presence/absence, ``A`` the term against a missing value and ``B`` the
    term of two missing values, one attribute contributes
    ``s_x + s_y - 2 ẽ_x·ẽ_y + q_y (p_x (A_x - s_x) + q_x B) + q_x p_y (A_y - s_y)``:
    the product carries the first three terms, the fourth (which only reference rows
    missing that attribute need) is ``H[q, a]``, and the last, which only queries missing
    that attribute need, is a column of ``g`` added to their estimates.

    The rounding margin ``eps nx[q] ny[j]`` is that of the whole sum of products of the
    augmented vectors ``[X, H, 1 per attribute q misses]`` and
    ``[Y, 1 per attribute j misses, g]``, whichever way it is split between the product
    and the additions (every partial sum rounds with the same relative bound)."""
    if not eligible(plan):
        return None
    # the projection on the reference values' span is exact only up to SPAN_TOL: the
    # float64 product (for magnitudes float32 cannot hold) goes without it
    project = dtype == np.float32
    ref, feats = _reference(plan, R, cache, project)
    if ref is None:
        return None
    side = _queries(plan, Q, ref)
    if isinstance(side, str):      # a query value off the span: no projection
        project = False
        ref, feats = _reference(plan, R, cache, project)
        side = _queries(plan, Q, ref)
    if side is None:
        return None
    X, H, qptr, qidx = side
    key = ("Y", np.dtype(dtype).str, r_chunk, project)
    fr = cache.get(key)
    if fr is None:
        if feats is None:           # made by an earlier call, not kept: made again
            feats = _features(_attributes(plan, R, coded=True), ref, R.n)
        Y, g = feats
        del feats
        if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(g))):
            return None
        ymax = max(np.abs(Y).max(initial=0), np.abs(g).max(initial=0))
        if dtype == np.float32 and ymax > MAX_ABS32:
            return _prepare(plan, Q, R, cache, r_chunk, np.float64)
        ny = np.sqrt(np.einsum("ij,ij->i", Y, Y) + np.diff(ref["rptr"])
                     + np.einsum("ij,ij->j", g, g))
        from .._kernels import aligned_empty, gemm_panels
        # float32: the columns on a cache line's boundary, as the panels (the product
        # loads 16 of a column's entries at once); float64 keeps g itself (no copy)
        if dtype == np.float32:
            gg = aligned_empty(g.shape, dtype)
            gg[...] = g
        else:
            gg = np.ascontiguousarray(g, dtype=dtype)
        starts = np.arange(0, R.n, r_chunk)
        # per chunk of reference rows, the smallest of each added column as stored
        gmin = np.ascontiguousarray(np.minimum.reduceat(gg, starts, axis=1).astype(np.float64)
                                    if R.n and len(g) else np.zeros((len(g), 0)))
        Yg = Y.astype(dtype, copy=False)
        del Y, g                # before the panels: the peak of memory is here
        # float32: also the panels the fused k-NN search reads
        fr = (Yg, gg, gmin, np.maximum.reduceat(ny, starts) if R.n else ny, ymax,
              np.diff(ref["rptr"]).astype(dtype),
              gemm_panels(Yg) if dtype == np.float32 else None)
        cache[key] = fr
    Yg, gg, gmin, ny_chunk, ymax, hc, Yp = fr
    from .._kernels import query_norms
    xmax, nx2 = query_norms(X, H, qptr)
    if not math.isfinite(xmax):
        return None
    if max(xmax, ymax) > MAX_ABS:
        return None
    if dtype == np.float32 and max(xmax, ymax) > MAX_ABS32:
        return _prepare(plan, Q, R, cache, r_chunk, np.float64)
    dim = X.shape[1] + H.shape[1] + plan.m   # the product's terms, the added H and g
    if dtype == np.float32:
        # rounding of the inputs to float32 (2 u), the float32 product of dim terms
        # (dim u) and the kernel's float64 sum; doubled for safety.  Underflowing products
        # lose relative accuracy: an absolute slack covers them.
        eps = 4.0 * (dim + 8) * 2.0 ** -24
    else:
        eps = 8.0 * (dim + plan.m + 16) * _U
    nx = np.sqrt(nx2) + 1e-30 / eps
    return _Filter(np.ascontiguousarray(X, dtype=dtype), nx, Yg, ny_chunk, gg, gmin, qptr,
                   qidx, eps, r_chunk, H, ref["rptr"], ref["ridx"], hc, Yp, ref["refmiss"])


def _in_threads(nq, n_threads, run):
    """``run(q0, q1, stop)`` over chunks of the ``nq`` queries, one Python thread per
    chunk (each keeps BLAS single-threaded: BLAS's own thread pool and OpenMP's would
    otherwise fight over the cores between tiles); returns the chunks' results in order."""
    stop = threading.Event()   # set when the caller is interrupted
    n_chunks = min(n_threads, max(1, nq // 16))
    bounds = np.linspace(0, nq, n_chunks + 1).astype(np.intp)
    with _blas_limit(1):
        if n_chunks == 1:
            return [run(0, nq, stop)]
        from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
        with ThreadPoolExecutor(n_chunks) as ex:
            futs = [ex.submit(run, bounds[c], bounds[c + 1], stop) for c in range(n_chunks)]
            try:
                # wait in short slices: a SIGINT that lands on a worker thread is
                # handled (KeyboardInterrupt) only when this thread runs Python again
                pending = futs
                while pending:
                    done, pending = wait(pending, timeout=0.05, return_when=FIRST_EXCEPTION)
                    for f in done:
                        f.result()
            except BaseException:
                stop.set()      # the workers end at their next tile
                raise
            return [f.result() for f in futs]


def _tiles(F, nr, q0, q1, q_block, r_tile, stop):
    """The product tiles of queries [q0, q1): yields ``(a0, r0, G)``."""
    r_tile = max(F.r_chunk, (r_tile // F.r_chunk) * F.r_chunk)
    buf = np.empty(min(q_block, max(1, q1 - q0)) * min(r_tile, max(1, nr)), dtype=F.Xg.dtype)
    for a0 in range(q0, q1, q_block):
        a1 = min(q1, a0 + q_block)
        Xb = F.Xg[a0:a1]
        for r0 in range(0, nr, r_tile):
            if stop.is_set():
                return
            r1 = min(nr, r0 + r_tile)
            G = buf[: (a1 - a0) * (r1 - r0)].reshape(a1 - a0, r1 - r0)
            np.matmul(Xb, F.Yg[r0:r1].T, out=G)
            yield a0, r0, G


def knn(plan, Q, R, cQ, cR, k, n_threads, exclude_self=False, q_block=None, r_tile=None,
        r_chunk=64, dtype=np.float32, cache=None, ties=False):
    """Exact k-NN through the GEMM filter; None when the plan or data do not allow it.

    In float32 the products are computed by our own kernel, 8 queries against ``r_tile``
    (default ``GEMM_BLOCK_ROWS``, 2048) reference rows at a time, each block of estimates
    selected while it is in the cache; threads take chunks of ``q_block`` queries
    (default: half a thread's share, a quarter when the reference features fit in the
    caches, at most 512, each chunk one pass over the reference features).  In float64
    (features too large for float32) BLAS computes ``q_block`` (default 512) x ``r_tile``
    (default 512) tiles which stay in a core's L2 cache between the product and the
    selection.

    ``cache`` (a dict kept by the caller for a fixed reference set ``R``) keeps the
    reference side's features between calls.  ``ties``: the lists also hold every other
    row at the k-th distance (``hdist._kernels.TieLists.widen``), found by the same pass,
    or (a tally, ``hdist._kernels.plan.tie_lists``) only their count per class or target."""
    from .._core.progress import phase
    from .._kernels import GemmKnnSelect, finish_heaps
    from .._kernels.plan import tie_lists
    with phase("tables"):
        F = _prepare(plan, Q, R, {} if cache is None else cache, r_chunk, dtype)
        if F is None:
            return None
        nq, nr = Q.n, R.n
        HD = np.full((nq, k), np.inf)
        HI = np.full((nq, k), nr, dtype=np.intp)
        cplan = plan.cplan
        tl = tie_lists(ties, nq)
        # the arguments are checked once; each tile then costs one short call, the GIL
        # released while its rows are selected
        # the fused search makes the queries' tables of the reference-missing terms in
        # its threads, chunk by chunk
        sel = GemmKnnSelect(cplan, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD, HI, F.eps,
                            F.Xg.dtype, exclude_self, 0, ties=tl, fused=F.Yp is not None,
                            **F.extra(refmiss=True))
    if F.Yp is not None:
        with phase("kernel"):
            sel.search(F.Xg, F.Yp, n_threads, q_block or 0, r_tile or 0)
    else:
        select = sel.tile
        q_block = q_block or 512
        r_tile = r_tile or 512

        def run(q0, q1, stop):
            # chunks touch disjoint heap rows, so they run in parallel threads
            for a0, r0, G in _tiles(F, nr, q0, q1, q_block, r_tile, stop):
                select(G, a0, r0)

        with phase("kernel"):
            _in_threads(nq, n_threads, run)
    with phase("heaps"):
        finish_heaps(cplan, HD, HI)
        return tl.widen(HD, HI) if tl is not None else (HD, HI)


def radius(plan, Q, R, cQ, cR, r, n_threads, exclude_self=False, self_offset=0,
           q_block=512, r_tile=512, r_chunk=64, dtype=np.float32, cache=None):
    """Exact radius search through the GEMM filter: the reference rows within true
    distance ``r`` (inclusive) of each query, sorted by (distance, index), as two lists
    of arrays — bit-identical to the direct kernel's; None when the filter does not
    apply (or cannot pay: ``r`` infinite).  Each block of ``q_block`` queries' hits are
    sorted into their lists when the block ends, so the memory peaks near the result's
    size (16 bytes a hit)."""
    if math.isinf(r):
        return None
    F = _prepare(plan, Q, R, {} if cache is None else cache, r_chunk, dtype)
    if F is None:
        return None
    from .._kernels import gemm_radius_lists, gemm_radius_select
    nq, nr = Q.n, R.n
    cplan = plan.cplan
    extra = F.extra()
    if "hq" in extra and F.Xg.dtype == np.float32 and F.H.shape[1] > 0:
        # the per-row codes of the reference rows' missing attributes (made once per
        # reference set) and the queries' tables, as the k-NN search uses them
        extra["ab"], extra["tab"] = F.refmiss.ab, F.refmiss.tables(F.H)

    def run(q0, q1, stop):
        # each block of queries' hits (24 bytes each) become its sorted lists (16 bytes
        # a hit) as soon as its last tile is done, so that the hits of all queries never
        # wait, whole, beside their lists: the peak stays near the size of the result
        dl, il, block = [], [], []

        def lists(a0):
            hits = [np.concatenate(z) for z in zip(*block)] if block else \
                [np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0)]
            block.clear()
            hits[0] -= a0
            d_, i_ = gemm_radius_lists(*hits, min(q1, a0 + q_block) - a0, 1)
            dl.extend(d_)
            il.extend(i_)
        cur = None
        for a0, r0, G in _tiles(F, nr, q0, q1, q_block, r_tile, stop):
            if a0 != cur and cur is not None:
                lists(cur)
            cur = a0
            block.append(gemm_radius_select(cplan, cQ, cR, G, F.nx,
                                            F.ny_chunk[r0 // F.r_chunk:], a0, r0, F.r_chunk,
                                            r, F.eps, exclude_self, self_offset, **extra))
        if cur is not None:
            lists(cur)
        while len(dl) < q1 - q0:        # no reference rows: no tiles
            dl.append(np.zeros(0))
            il.append(np.zeros(0, np.intp))
        return dl, il

    parts = _in_threads(nq, n_threads, run)
    return [d for p in parts for d in p[0]], [i for p in parts for i in p[1]]
