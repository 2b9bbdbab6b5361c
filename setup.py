"""Build script for the compiled parts of hdist.

OpenMP is required: a build without it fails unless ``HDIST_ALLOW_NO_OPENMP=1``
is set.  ``HDIST_DEBUG=1`` builds with Cython bounds checks, ``-O0 -g``.
``HDIST_SANITIZE=1`` adds AddressSanitizer and UndefinedBehaviorSanitizer (gcc/clang).
``HDIST_MODULES=pam,trees`` builds only the modules named (a development rebuild).
On Linux the modules are linked without their debugging information (a quarter of the
size; symbol names stay, so profilers still name the functions) unless
``HDIST_KEEP_DEBUG=1`` (or one of the two above) is set.
"""
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.modified import newer_group

DEBUG = os.environ.get("HDIST_DEBUG", "0") == "1"
SANITIZE = os.environ.get("HDIST_SANITIZE", "0") == "1"
ALLOW_NO_OPENMP = os.environ.get("HDIST_ALLOW_NO_OPENMP", "0") == "1"
KEEP_DEBUG = DEBUG or SANITIZE or os.environ.get("HDIST_KEEP_DEBUG", "0") == "1"

#: the compiled modules (hdist/_kernels/<name>.pyx), their C headers and included sources
KDIR = os.path.join("hdist", "_kernels")
MODULES = ["plan", "tiles", "gemm", "pam", "trees"]
if os.environ.get("HDIST_MODULES"):
    # a development rebuild of some modules only (``HDIST_MODULES=pam,trees``)
    MODULES = [m for m in MODULES if m in os.environ["HDIST_MODULES"].split(",")]
HEADERS = ["tile.h", "tile_types.h", "tile_body.h", "terms.h", "gemm_body.h", "scan_body.h",
           "pw.h", "gemm_scan.h", "openmp.h", os.path.join("isa", "tile_variant.h")]
INCLUDED = ["plan.pxd", "tiles.pxd", "ctile.pxd", "gemm_search.pxi", "gemm_filter.pxi",
            "gemm_missing.pxi", "tree_query.pxi", "tree_split.pxi", "lists.pxi"]
#: the C files of a module's instruction-set variants (hdist/_kernels/isa/, tile_types.h),
#: compiled beside the module's own
VARIANTS = {"tiles": ["tile_avx2.c", "tile_avx512.c"],
            "gemm": ["gemm_avx2.c", "gemm_avx512.c", "gemm_avx512bf.c"]}


def _openmp_flags(compiler_type):
    """Compile and link flags that enable OpenMP for this compiler."""
    if compiler_type == "msvc":
        return ["/openmp"], []
    if sys.platform == "darwin":
        # Apple clang needs libomp (Homebrew); honour a prefix given by the environment.
        prefix = os.environ.get("LIBOMP_PREFIX") or "/opt/homebrew/opt/libomp"
        if not os.path.isdir(prefix):
            prefix = "/usr/local/opt/libomp"
        return (["-Xpreprocessor", "-fopenmp", f"-I{prefix}/include"],
                [f"-L{prefix}/lib", "-lomp"])
    return ["-fopenmp"], ["-fopenmp"]


def _check_openmp(compiler, cflags, lflags):
    """Compile and run a tiny OpenMP program; True when it works."""
    src = ("#include <omp.h>\n#include <stdio.h>\n"
           "int main(void){int n=0;\n#pragma omp parallel reduction(+:n)\nn+=1;\n"
           "printf(\"%d\", omp_get_max_threads()); return n > 0 ? 0 : 1;}\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "omp_check.c")
        with open(path, "w") as fh:
            fh.write(src)
        try:
            objs = compiler.compile([path], output_dir=tmp, extra_postargs=cflags)
            exe = os.path.join(tmp, "omp_check")
            compiler.link_executable(objs, exe, extra_postargs=lflags)
        except Exception:
            return False
        if platform.system() != "Windows":
            try:
                subprocess.run([exe], check=True, capture_output=True, timeout=60)
            except Exception:
                return False
    return True


#: each C file's compile time in seconds (gcc 12 -O3, one at a time on a 2-core machine
#: shared with other jobs): the longest start first, the others fill the workers around
#: them.  tiles and gemm compile each instruction-set variant of their kernels in a file
#: of its own (hdist/_kernels/isa/), so that no module holds one worker for most of the build.
COST = {"tile_avx512.c": 70, "tile_avx2.c": 43, "tiles.c": 42, "gemm.c": 20, "trees.c": 16,
        "plan.c": 9, "pam.c": 6, "gemm_avx512.c": 1.4, "gemm_avx2.c": 0.9,
        "gemm_avx512bf.c": 0.5}


class BuildExt(build_ext):
    """build_ext compiling the C files of every module at once, ``_jobs()`` at a time, the
    longest first, linking each module as soon as its files are compiled, and logging each
    file's compile time."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None and sys.platform != "win32":
            self.parallel = _jobs()

    def build_extensions(self):
        ctype = self.compiler.compiler_type
        omp_c, omp_l = _openmp_flags(ctype)
        have_omp = _check_openmp(self.compiler, omp_c, omp_l)
        if not have_omp:
            if not ALLOW_NO_OPENMP:
                raise RuntimeError(
                    "hdist: OpenMP was not found for compiler %r. Install an OpenMP runtime "
                    "(gcc: libgomp; macOS: brew install libomp) or set HDIST_ALLOW_NO_OPENMP=1 "
                    "to build a serial extension." % ctype)
            omp_c, omp_l = [], []
        if ctype == "msvc":
            opt = ["/Od", "/Zi"] if DEBUG else ["/O2"]
        else:
            opt = ["-O0", "-g"] if DEBUG else ["-O3"]
            # no fast-math (it deletes NaN tests); no contraction into fused multiply-add, so
            # that every path (brute force, trees, filters) rounds a distance identically on
            # every architecture and exact tie-breaking holds; no errno from sqrt and no
            # floating-point traps (the kernels read neither errno nor the exception flags;
            # no value changes), so that sqrt is one instruction and a conditional sum is
            # if-converted into a blend and vectorizes
            opt += ["-fno-fast-math", "-fno-strict-aliasing", "-ffp-contract=off",
                    "-fno-math-errno", "-fno-trapping-math"]
            if SANITIZE:
                opt += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]
        link = list(omp_l)
        if SANITIZE and ctype != "msvc":
            link += ["-fsanitize=address,undefined"]
        if not KEEP_DEBUG and ctype == "unix" and sys.platform.startswith("linux"):
            # Python's own flags compile with -g: 15 MB of modules, 3.5 MB without it
            link += ["-Wl,--strip-debug"]
        for ext in self.extensions:
            ext.extra_compile_args = opt + omp_c
            ext.extra_link_args = link
            ext.define_macros = list(ext.define_macros or []) + [
                ("HDIST_HAVE_OPENMP", "1" if omp_c else "0"),
                ("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
                # numpy's C API as of the oldest numpy pyproject.toml's dependencies allow:
                # modules built against numpy 2's headers import on it (numpy's default
                # target follows the oldest Python numpy supports: 1.25 from numpy 2.5)
                ("NPY_TARGET_VERSION", "NPY_1_25_API_VERSION"),
            ]
        self.check_extensions_list(self.extensions)
        self._compile_and_link([ext for ext in self.extensions if self._outdated(ext)])

    def _outdated(self, ext):
        """True when module ext is to be built: one of its sources or headers is newer than
        it (or missing), or the build is forced."""
        return self.force or newer_group(list(ext.sources) + list(ext.depends),
                                          self.get_ext_fullpath(ext.name), "newer")

    def _compile_one(self, ext, source):
        """Compile one C file of module ext with ext's flags: its object file's path, the
        seconds it took and the worker (thread) that compiled it."""
        start = time.perf_counter()
        macros = list(ext.define_macros) + [(name,) for name in ext.undef_macros]
        objects = self.compiler.compile([source], output_dir=self.build_temp, macros=macros,
                                        include_dirs=ext.include_dirs, debug=self.debug,
                                        extra_postargs=ext.extra_compile_args or [],
                                        depends=ext.depends)
        took = time.perf_counter() - start
        print("hdist: %s compiled in %.1f s" % (source, took), flush=True)
        return objects[0], took, threading.get_ident()

    def _link(self, ext, objects):
        """Link module ext from its object files, as distutils' build_extension does."""
        self.compiler.link_shared_object(
            list(objects) + list(ext.extra_objects or []), self.get_ext_fullpath(ext.name),
            libraries=self.get_libraries(ext), library_dirs=ext.library_dirs,
            runtime_library_dirs=ext.runtime_library_dirs,
            extra_postargs=ext.extra_link_args or [],
            export_symbols=self.get_export_symbols(ext), debug=self.debug,
            build_temp=self.build_temp,
            target_lang=ext.language or self.compiler.detect_language(ext.sources))

    def _compile_and_link(self, exts):
        """Compile the C files of the modules exts on a pool of ``self.parallel`` workers,
        the longest first (COST), and link each module, here, once its files are compiled.
        A file named by several modules is compiled once (every module has the same flags)."""
        jobs = _jobs() if self.parallel is True else max(1, int(self.parallel or 1))
        files = {}
        for ext in exts:
            if hasattr(ext, "_convert_pyx_sources_to_lang"):
                ext._convert_pyx_sources_to_lang()
            for source in ext.sources:
                files.setdefault(os.path.normpath(source), (ext, source))
        order = sorted(files, key=lambda f: -COST.get(os.path.basename(f), 0))
        start = time.perf_counter()
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            compiled = {f: pool.submit(self._compile_one, *files[f]) for f in order}
            waiting = {ext.name: (ext, [compiled[os.path.normpath(s)] for s in ext.sources])
                       for ext in exts}
            while waiting:
                wait([f for _, fs in waiting.values() for f in fs if not f.done()],
                     return_when=FIRST_COMPLETED)
                for name, (ext, fs) in list(waiting.items()):
                    if all(f.done() for f in fs):
                        del waiting[name]
                        with self._filter_build_errors(ext):
                            self._link(ext, [f.result()[0] for f in fs])
                            print("hdist: %s linked at %.1f s" % (
                                name, time.perf_counter() - start), flush=True)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        # the critical path: the longest time one worker spent compiling
        busy = {}
        for f in compiled.values():
            if not f.cancelled() and f.exception() is None:
                _, took, worker = f.result()
                busy[worker] = busy.get(worker, 0.0) + took
        if busy:
            print("hdist: %d C files compiled in %.1f s on %d workers (the busiest compiled "
                  "for %.1f s)" % (len(compiled), time.perf_counter() - start, jobs,
                                   max(busy.values())), flush=True)


#: the numpy and Cython versions the generated C files of this tree were made with
STAMP = os.path.join(KDIR, ".generated-with")


def _generator():
    import Cython
    return "numpy %s, Cython %s\n" % (np.__version__, Cython.__version__)


def _generated_by_another():
    """True when the C files beside the sources were generated with another numpy or
    Cython than this build's (or the stamp is missing): the code Cython writes for numpy's
    declarations follows numpy's version, and C generated for numpy 2.5 does not compile
    against the headers of 2.4.  Such files are generated again."""
    try:
        with open(STAMP, encoding="utf-8") as fh:
            return fh.read() != _generator()
    except OSError:
        return True


def _extensions():
    exts = []
    for name in MODULES:
        src = os.path.join(KDIR, name + ".pyx")
        if os.path.exists(src):
            variants = [os.path.join(KDIR, "isa", f) for f in VARIANTS.get(name, [])]
            exts.append(Extension("hdist._kernels." + name, [src] + variants,
                                  include_dirs=[np.get_include(), KDIR],
                                  depends=[os.path.join(KDIR, h) for h in HEADERS]
                                  + [os.path.join(KDIR, f) for f in INCLUDED]))
    # boundscheck and wraparound keep Cython's defaults (Python's rules) for the whole
    # module: the functions that index typed memoryviews in their loops turn both off
    # themselves (``@cython.boundscheck(HDIST_DEBUG)``, ``@cython.wraparound(False)``), so
    # that a Python object is never indexed without them (ci/check_object_indexing.py
    # checks the generated C); HDIST_DEBUG=1 turns the bounds checks back on there.
    directives = {
        "language_level": 3,
        "initializedcheck": DEBUG,
        "cdivision": True,
        "nonecheck": False,
        "embedsignature": True,
    }
    stale = _generated_by_another()
    out = cythonize(exts, compiler_directives=directives, nthreads=_jobs(),
                    compile_time_env={"HDIST_DEBUG": DEBUG},
                    force=DEBUG or SANITIZE or stale)
    if stale and exts:
        with open(STAMP, "w", encoding="utf-8") as fh:
            fh.write(_generator())
    return out


def _jobs():
    """Modules compiled at once: every CPU this process may use (``HDIST_BUILD_JOBS``
    overrides)."""
    env = os.environ.get("HDIST_BUILD_JOBS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildExt})
