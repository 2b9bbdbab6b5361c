"""Sphinx configuration of hdist's documentation.

Build (from the repository root, after ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The gallery (docs/examples/*.py) runs at build time on the bundled datasets; nothing is
downloaded.  Cross-references to hdist's own objects are checked (``nitpicky``); those to
other projects' objects are not resolved (no inventories are fetched at build time).
"""
import os
import sys

import hdist

project = "hdist"
author = "hdist developers"
copyright = "hdist developers"
version = release = hdist.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
# pages that other pages include, and build outputs
exclude_patterns = ["_build", "_*.md", "**/_*.md", "examples/*", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.md5",
                    "auto_examples/*.codeobj.json"]

# --- cross-references: hdist's own are checked, other projects' are left as text --------
nitpicky = True
nitpick_ignore_regex = [
    # any target outside hdist (numpy, pandas, scikit-learn, Python, ...): no inventories
    (r"py:.*", r"(?!hdist\b).*"),
    # hdist's private modules and names (``hdist._core...``) have no pages
    (r"py:.*", r"hdist\.(\w+\.)*_\w+.*"),
    # numpydoc's type words ("array-like of shape (n, m)", "optional", ...)
    (r"py:.*", r"(array-like|array_like|optional|default|shape|of|or|callable|iterable|"
               r"sequence|mapping|dict-like|scalar|None|int|float|str|bool|\(.*|.*\)|"
               r"n_\w+|\d+)"),
]

# --- autodoc / autosummary / numpydoc ----------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True}
autodoc_typehints = "none"
autodoc_member_order = "groupwise"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

# --- Markdown pages ---------------------------------------------------------------------
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# --- the gallery --------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 1,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "reference_url": {"hdist": None},
    "doc_module": ("hdist",),
    "backreferences_dir": None,
}
os.environ.setdefault("MPLBACKEND", "Agg")

# --- code blocks run by the doctest builder (-b doctest) ---------------------------------
# the flags of the test suite's doctests (tests/faces/test_docstrings.py)
import doctest  # noqa: E402

doctest_default_flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
doctest_global_setup = """
import numpy as np
import pandas as pd
import hdist
"""

# --- HTML -------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "hdist %s" % release
html_static_path = ["_static"]
html_css_files = ["hdist.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "install": []}
html_show_sourcelink = False

# --- link check: pages and anchors inside the site only ----------------------------------
linkcheck_ignore = [r"https?://.*"]
linkcheck_anchors = True

sys.path.insert(0, os.path.abspath("."))


def _canonical(target):
    """``hdist.Metric.fit`` -> ``hdist.metrics.Metric.fit``: where a name served by another
    module (``hdist.Metric``) is documented (its defining public module)."""
    import importlib
    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            top = getattr(obj, parts[cut])
        except AttributeError:
            return None
        module = getattr(top, "__module__", None)
        qual = getattr(top, "__qualname__", None)
        if not module or not qual or not module.startswith("hdist"):
            return None
        return ".".join([module, qual] + parts[cut + 1:])
    return None


#: data served by a second module, which has no ``__module__`` to follow
_DATA_ALIASES = {"hdist.METRICS": "hdist.metrics.METRICS"}


def _skip_member(app, what, name, obj, skip, options):
    # the set_*_request methods scikit-learn adds to every estimator (metadata routing)
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _resolve_alias(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target.startswith("hdist."):
        return None
    canonical = _DATA_ALIASES.get(target) or _canonical(target)
    if not canonical or canonical == target:
        return None
    return env.domains["py"].resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                          canonical, node, contnode)


def setup(app):
    app.connect("missing-reference", _resolve_alias)
    app.connect("autodoc-skip-member", _skip_member)
