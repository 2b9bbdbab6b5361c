"""The search layer: a fitted metric and what finds neighbours under it.

:class:`~hdist.Metric` (``metric``: parameters, fit, encoding, pairwise distances, the
explanation of one distance), the index (``index``: :class:`~hdist.NeighborsIndex`, over
``rowindex``: the rows, the ``"auto"`` rule of ``choice`` and one searcher), the search
structures (``searchers``: one :class:`~hdist._search.searchers.Searcher` per algorithm,
registered by name; the inverted lists' partition in ``ivf``, the ball tree's triangle
rule in ``triangle``, the matrix-product filter's Python side in ``gemm_filter``), the
memory guards (``memory``), ``Explanation`` (``explain``), scores (``scoring``), the
fitted state of a Metric (``fitted``), the argument checks they share (``checks``) and
the k-NN votes and weights the estimators share (``votes``).  Modules here import
``hdist._core`` and ``hdist._kernels`` only (and each other, downward).
"""
