"""The public API is documented as scikit-learn documents its own: every public class and
function has its own numpydoc docstring with the sections a reader looks for, every
estimator parameter is described, and the Examples run (as doctests, here)."""
from __future__ import annotations

import doctest
import importlib
import inspect
import re

import pytest

#: the public modules; their ``__all__`` is the public API
PUBLIC_MODULES = ("hdist", "hdist.metrics", "hdist.neighbors", "hdist.cluster",
                  "hdist.impute", "hdist.prototypes", "hdist.embedding", "hdist.discretize",
                  "hdist.datasets", "hdist.dask", "hdist.plot")
#: modules that need an optional dependency
OPTIONAL = {"hdist.dask": "dask.dataframe", "hdist.plot": "matplotlib"}
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _public():
    """``{qualified name: object}`` of the public classes and functions defined by hdist
    (re-exported objects of other packages, constants and modules left out)."""
    out = {}
    for mod_name in PUBLIC_MODULES:
        if mod_name in OPTIONAL:
            try:
                importlib.import_module(OPTIONAL[mod_name])
            except ImportError:
                continue
        mod = importlib.import_module(mod_name)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("hdist"):
                continue
            out.setdefault("%s.%s" % (obj.__module__, obj.__qualname__), obj)
    return out


PUBLIC = _public()


def _sections(doc):
    """``{section title: body}`` of a numpydoc docstring."""
    doc = inspect.cleandoc(doc or "")
    parts = re.split(r"^(\w[\w ]*)\n-{3,}\n", doc, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _described(section):
    """Names given an entry in a Parameters / Attributes section (``a, b : ...`` names
    both)."""
    names = set()
    for line in section.splitlines():
        m = re.match(r"^([\w*][\w*, ]*?)\s*:(\s|$)", line)
        if m:
            names.update(n.strip().lstrip("*") for n in m.group(1).split(","))
    return names


def _init_params(cls):
    sig = inspect.signature(cls.__init__)
    return [p for p in sig.parameters if p != "self"
            and sig.parameters[p].kind not in (inspect.Parameter.VAR_POSITIONAL,
                                               inspect.Parameter.VAR_KEYWORD)]


def _is_estimator(cls):
    return hasattr(cls, "fit") and hasattr(cls, "get_params")


def test_the_public_api_is_found():
    names = {n.rsplit(".", 1)[1] for n in PUBLIC}
    assert {"Metric", "KNeighborsClassifier", "KModes", "KNNImputer", "PrototypeClassifier",
            "EqualWidth", "load_dataset"} <= names
    # classes say they belong to their public module (help, repr, pickles)
    for qual, obj in PUBLIC.items():
        assert not any(p.startswith("_") for p in obj.__module__.split(".")), qual


@pytest.mark.parametrize("qual", sorted(PUBLIC))
def test_own_docstring_with_sections(qual):
    obj = PUBLIC[qual]
    # its own docstring: a class whose docstring is not one literal shows a base class's
    assert obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__, qual
    sec = _sections(obj.__doc__)
    want = ["See Also", "Examples"]
    if inspect.isclass(obj):
        params = _init_params(obj)
        if params:
            want.append("Parameters")
        if _is_estimator(obj) or "Attributes" in sec:
            want.append("Attributes")
    else:
        params = list(inspect.signature(obj).parameters)
        if params:
            want.append("Parameters")
        want.append("Returns")
    if "Parameters" in want and "Parameters" not in sec and inspect.isclass(obj) and \
            "Attributes" in sec and set(params) <= _described(sec["Attributes"]):
        want.remove("Parameters")       # a dataclass: its fields are its attributes
    missing = [w for w in want if w not in sec]
    assert not missing, "%s lacks %s" % (qual, missing)
    if "Parameters" in want:
        undescribed = set(params) - _described(sec["Parameters"])
        assert not undescribed, "%s: parameters not described: %s" % (qual, undescribed)


def _doctests():
    finder = doctest.DocTestFinder(recurse=False)
    out = []
    for qual, obj in sorted(PUBLIC.items()):
        targets = [(qual, obj)]
        if inspect.isclass(obj):
            targets += [("%s.%s" % (qual, n), m) for n, m in vars(obj).items()
                        if not n.startswith("_") and inspect.isfunction(m)]
        for name, target in targets:
            for test in finder.find(target, name=name, globs={}):
                if test.examples:
                    out.append(test)
    return out


DOCTESTS = _doctests()


def test_estimators_have_examples_that_run():
    names = {t.name.rsplit(".", 1)[-1] for t in DOCTESTS}
    assert {"KNeighborsClassifier", "KMedoids", "KModes", "Metric", "explain",
            "rules_text"} <= names


@pytest.mark.parametrize("test", DOCTESTS, ids=lambda t: t.name)
def test_examples_run(test):
    if any("matplotlib" in ex.source for ex in test.examples):
        pytest.importorskip("matplotlib").use("Agg")
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def test_help_reads_like_scikit_learns():
    """help() of an estimator starts with its own summary and parameters, and the
    routing boilerplate offers ``sample_weight`` alone."""
    import pydoc
    import hdist
    text = pydoc.render_doc(hdist.KNeighborsClassifier, renderer=pydoc.plaintext)
    head = text[:text.index("Method resolution order")]
    assert "k-nearest-neighbor classification with an hdist metric" in head
    assert "n_neighbors : int, default=5" in head and "Examples" in head
    assert "Mixin class for all classifiers" not in head
    assert "progress : str, True, False, or None" not in text


def test_sections_written_into_a_docstring_line_up_on_every_python():
    """Python 3.13 strips a docstring's indentation when compiling, earlier versions keep
    it: the sections hdist writes into its docstrings (the neighbour estimators' shared
    parameters, the loaders', KModes' and KPrototypes') line up either way (appended
    indented text was one level deeper than a stripped docstring, and numpydoc sections
    were lost on 3.13)."""
    from hdist._core.config import extend_doc

    part = """
    Parameters
    ----------
    x : int
        A number.
    """
    kept = extend_doc("One line.\n\n    More text.\n    ", part)
    stripped = extend_doc("One line.\n\nMore text.\n", part)
    assert kept == stripped == ("One line.\n\nMore text.\n\nParameters\n----------\n"
                                "x : int\n    A number.\n")
    assert extend_doc(None, part) is None
    assert _sections(kept)["Parameters"].startswith("x : int")
