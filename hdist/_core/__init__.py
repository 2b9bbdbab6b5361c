"""The core layer: what a fitted metric is made of, below any search.

The column schema and the encoding of tables (``schema``), the one table of presets
(``presets``), the Plan the kernels read (``plan``), the per-attribute statistics learned
in ``fit`` (``statistics``, ``posteriors``, ``cooccurrence``, ``information``,
``discretize``), and the settings every layer reads (``config``, ``threads``,
``progress``).  Modules here import the kernels (``hdist._kernels``) and each other only.
"""
