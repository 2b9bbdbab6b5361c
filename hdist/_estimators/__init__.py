"""The estimator layer: scikit-learn estimators built on the search layer.

k-NN classification, regression and transformation (``neighbors``), imputation
(``impute``), prototype rules (``prototypes``), clustering (``cluster``) and the exact
Euclidean embedding (``embedding``).  The public modules ``hdist.neighbors``,
``hdist.impute``, ... show them.  Modules here import ``hdist._search``, ``hdist._core``
and ``hdist._kernels`` (and each other).  A metric is named through
``hdist._search.resolve.resolve_metric``, fitted once per ``fit`` and handed, fitted, to
the index; rows an estimator encodes itself (prototypes, centers) are measured through
``hdist._search.operations`` (``distances``, ``nearest``), never the kernels' row views.
"""
