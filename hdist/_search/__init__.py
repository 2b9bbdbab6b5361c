"""The search layer: a fitted metric and what finds neighbours under it.

:class:`~hdist.Metric` (``metric``: fit, pairwise distances, k-NN and radius queries),
the index (``index``: :class:`~hdist.NeighborsIndex`), the choice of algorithm and the
KD-tree a Metric builds (``choice``), the matrix-product filter's Python side
(``gemm_filter``) and the k-NN votes and weights the estimators share (``votes``).
Modules here import ``hdist._core`` and ``hdist._kernels`` only (and each other).
"""
