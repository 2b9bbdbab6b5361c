"""Build and runtime configuration report."""
from __future__ import annotations

import inspect
import platform
import sys
import textwrap


def config():
    """Dict of version, compiler, OpenMP and thread facts."""
    import numpy as np
    from .._version import __version__
    from .._kernels import bf16_bounds, isa, isa_variants, openmp_enabled, omp_max_threads
    from .threads import available_cpus, effective_n_jobs, forked, wait_policy
    import sysconfig
    return {
        "hdist": __version__,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "compiler": platform.python_compiler(),
        "cc": sysconfig.get_config_var("CC") or "",
        "openmp": bool(openmp_enabled()),
        "omp_max_threads": omp_max_threads(),
        "available_cpus": available_cpus(),
        "threads_used": effective_n_jobs(None),
        "forked": forked(),
        # OpenMP wait policy requested at import (OMP_WAIT_POLICY / GOMP_SPINCOUNT override)
        "omp_wait_policy": "%s (%s)" % (wait_policy() or ("unknown", "not set")),
        # instruction-set variant of the tile kernel (HDIST_ISA forces one)
        "isa": isa(),
        "isa_available": ", ".join(isa_variants()),
        # the filter's product adds bfloat16 bounds (AVX512_BF16; HDIST_BF16=0: not)
        "bf16_bounds": bf16_bounds(),
    }


def show_config(file=None):
    """Print hdist's version, compiler, OpenMP on/off and the default thread count.

    Parameters
    ----------
    file : file-like, optional
        Where to print (default ``sys.stdout``).

    Returns
    -------
    None

    See Also
    --------
    hdist.__version__ : the version alone.

    Examples
    --------
    >>> import hdist
    >>> hdist.show_config()  # doctest: +ELLIPSIS
    hdist ...
    """
    cfg = config()
    width = max(len(k) for k in cfg)
    for k, v in cfg.items():
        print("%-*s : %s" % (width, k, v), file=file or sys.stdout)
    return None


def extend_doc(doc, *parts):
    """``doc`` followed by ``parts`` (a blank line between), each without its common
    indentation: the same text whether the interpreter keeps a docstring's indentation or
    strips it (Python 3.13 and later strip it when compiling), so that sections written
    into a docstring line up with its own.  ``None`` (``python -OO``) stays ``None``."""
    if doc is None:
        return None
    text = inspect.cleandoc(doc)
    for part in parts:
        part = textwrap.dedent(part).strip("\n")
        text = text + "\n\n" + part if text else part
    return text + "\n"
