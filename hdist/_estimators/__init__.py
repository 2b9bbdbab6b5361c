"""The estimator layer: scikit-learn estimators built on the search layer.

k-NN classification, regression and transformation (``neighbors``), imputation
(``impute``), prototype rules (``prototypes``), clustering (``cluster``) and the exact
Euclidean embedding (``embedding``).  The public modules ``hdist.neighbors``,
``hdist.impute``, ... show them.  Modules here import ``hdist._search``, ``hdist._core``
and ``hdist._kernels`` (and each other).
"""
