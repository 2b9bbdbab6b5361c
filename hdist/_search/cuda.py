"""Exact k-NN, radius search and pairwise matrices on a CUDA device (``device="cuda"``).

The reference rows are uploaded once, attribute-major, and kept on the device; queries
stream in blocks.  For each block the device computes every pair's reduced distance with
the CPU's per-attribute terms (``hdist/_kernels/terms.h``, compiled for the device from
``hdist/_kernels/cuda/knn.cu``: float64, no fused multiply-adds, the CPU's order) and keeps
each query's ``K`` smallest (reduced distance, index) on the device (per-thread heaps,
merged per block, then per query), so no queries x rows matrix is written.

The host then finishes as the CPU's searches do: the true distance of each candidate with
the CPU's own functions (``finalize_array``, and the CPU's pair function for a reduced
distance outside the range where the root is trusted), the order by (true distance,
index), the k-th place decided on the distance returned.  A query's candidates are
certified complete (:func:`_certified`): every row the device left out has a true
distance above the k-th (or, without tie lists, equal to it and a larger index); a query
that is not is asked again with a larger ``K``, and past :data:`K_MAX` computed by the
CPU's kernel.  Results are therefore the CPU's bit for bit.

Backends: CuPy (kernels compiled by NVRTC at first use; CuPy caches them per device
architecture) or, with ``HDIST_CUDA_EMULATE=1``, the emulated device: the same kernel
source compiled by the host's C compiler (``hdist/_kernels/cuda/emulate.h`` runs a grid's
blocks and threads as loops) over NumPy arrays, driven by this same code.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import tempfile
import threading
import time

import numpy as np

from .._core import progress as _progress
from .searchers import Found, Searcher, register

__all__ = ["CudaSearcher", "CudaUnavailableError", "device_source", "nvrtc_options",
           "emulated", "KERNELS", "K_MAX"]

#: the kernels of ``knn.cu`` the driver launches
KERNELS = ("hd_knn_scan", "hd_knn_merge", "hd_radius_scan", "hd_pairwise")
#: the most candidates kept per query on the device; a query that needs more (a tie
#: group larger than this at its k-th distance) is finished by the CPU's kernel
K_MAX = 3072
#: dynamic shared memory of one block of hd_knn_scan (bytes): its threads' heaps
SHARED_BYTES = 48 * 1024
#: most threads per block
THREADS = 128
#: chunks of reference rows a k-NN scan splits the rows into (each chunk one block per
#: query, its heaps merged on the device), and the same for radius and pairwise scans
KNN_CHUNKS = 16
SCAN_CHUNKS = 64
#: GPU blocks a k-NN launch aims at (queries x chunks): enough to fill a large GPU
KNN_BLOCKS = 16384

_KERNEL_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "_kernels")
_CUDA_DIR = os.path.join(_KERNEL_DIR, "cuda")
#: the sources the device code is made of (their text keys the emulated library's cache)
_SOURCES = (os.path.join(_CUDA_DIR, "knn.cu"), os.path.join(_CUDA_DIR, "emulate.h"),
            os.path.join(_CUDA_DIR, "launch.h"), os.path.join(_KERNEL_DIR, "terms.h"),
            os.path.join(_KERNEL_DIR, "pw.h"))

# the kernels' plan header (knn.cu's HD_H_* order)
_H_NAMES = ("mc", "mo", "mt", "me", "pm", "ign", "n", "D",
            "c_inv", "c_w", "c_both", "o_w", "o_miss", "o_rw", "t_tab", "t_miss", "t_rw",
            "e_miss", "e_rw", "t_off", "t_V", "e_off", "c_ign", "o_ign", "t_ign", "e_q",
            "e_ign")
_H = {name: i for i, name in enumerate(_H_NAMES)}
# a true distance is taken from finalize only inside this range of reduced distances
# (hdist._kernels.SAFE_RANGE; p = 2 and general p); outside, the CPU's pair function
_SAFE_LO, _SAFE_HI = 1e-280, 1e280


class CudaUnavailableError(RuntimeError):
    """``device="cuda"`` was asked where it cannot run: the message names what is missing
    (CuPy, or a GPU and its driver).  A metric the device does not serve is a
    ``ValueError`` instead (:meth:`CudaSearcher.refusal`).

    Raised where the rows are first uploaded: by ``fit`` of :class:`hdist.NeighborsIndex`
    and of the estimators, and by the first search (or ``pairwise``) of a
    :class:`hdist.Metric` with ``device="cuda"``.

    See Also
    --------
    hdist.NeighborsIndex : its ``device`` parameter.
    hdist.Metric.kneighbors : its ``device`` keyword.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0], "job": ["clerk", "clerk", "manager"]})
    >>> try:
    ...     index = hdist.NeighborsIndex("heom", device="cuda").fit(X)
    ... except hdist.CudaUnavailableError:      # no CuPy or no GPU here
    ...     index = hdist.NeighborsIndex("heom").fit(X)   # the same neighbors, on the CPU
    >>> index.kneighbors(X, 2)[1].tolist()
    [[0, 1], [1, 0], [2, 1]]
    """


def emulated():
    """True when ``HDIST_CUDA_EMULATE`` asks for the emulated device (``1``, ``yes``,
    ``true``)."""
    return os.environ.get("HDIST_CUDA_EMULATE", "").strip().lower() in ("1", "yes", "true")


def device_source():
    """``(source, name)`` of the device code for NVRTC (it includes ``terms.h`` and
    ``pw.h`` through the include path of :func:`nvrtc_options`).  The source ends with a
    comment holding a digest of every file it is made of, so that a cache keyed by the
    source's text (CuPy's) compiles again when an included header changes."""
    h = hashlib.sha256()
    for path in _SOURCES:
        with open(path, "rb") as f:
            h.update(f.read())
    with open(os.path.join(_CUDA_DIR, "knn.cu")) as f:
        src = f.read()
    return src + "\n/* hdist device sources: sha256 %s */\n" % h.hexdigest(), "knn.cu"


def nvrtc_options(arch=None, code16=False):
    """NVRTC's options for the device code: no fused multiply-adds (``--fmad=false``),
    functions without a qualifier on the device (``-default-device``), the kernels' folder
    on the include path, ``--gpu-architecture=arch`` when given (CuPy adds its own), and
    ``-DHD_CODE16`` for the variant that reads 16-bit nominal codes."""
    opts = ["--fmad=false", "-default-device", "-I" + _KERNEL_DIR]
    if code16:
        opts.append("-DHD_CODE16")
    if arch:
        opts.insert(0, "--gpu-architecture=" + arch)
    return opts


# -- the plan and the rows as the kernels read them --------------------------------------

def tile_pmode(plan):
    """The kind of p of the tile kernel and the device: 0 inf, 1, 2, 3 other, 4 p = 0.5,
    5 p = 3, 6 p = 4."""
    pm = int(plan.pmode)
    if pm == 3:
        p = float(plan.p)
        pm = 4 if p == 0.5 else (5 if p == 3.0 else (6 if p == 4.0 else 3))
    return pm


def _plan_arrays(plan, n, D):
    """The plan packed for the kernels: ``(H, PD, PI, PB)``."""
    H = np.zeros(len(_H_NAMES), dtype=np.int64)
    H[_H["mc"]], H[_H["mo"]], H[_H["mt"]], H[_H["me"]] = plan.mc, plan.mo, plan.mt, plan.me
    H[_H["pm"]] = tile_pmode(plan)
    H[_H["ign"]] = int(plan.has_ignore)
    H[_H["n"]], H[_H["D"]] = n, D
    parts = {np.float64: [np.array([float(plan.p), float(plan.w_all), float(plan.w_max),
                                    np.inf])],
             np.int64: [], np.uint8: []}
    sizes = {np.float64: 4, np.int64: 0, np.uint8: 0}
    spec = (("c_inv", "c_inv", np.float64), ("c_w", "c_rw", np.float64),
            ("c_both", "c_both", np.float64), ("o_w", "o_w", np.float64),
            ("o_miss", "o_miss", np.float64), ("o_rw", "o_rw", np.float64),
            ("t_tab", "t_tab", np.float64), ("t_miss", "t_miss", np.float64),
            ("t_rw", "t_rw", np.float64), ("e_miss", "e_miss", np.float64),
            ("e_rw", "e_rw", np.float64), ("t_off", "t_off", np.int64),
            ("t_V", "t_V", np.int64), ("e_off", "e_off", np.int64),
            ("c_ign", "c_ign", np.uint8), ("o_ign", "o_ign", np.uint8),
            ("t_ign", "t_ign", np.uint8), ("e_q", "e_q", np.uint8), ("e_ign", "e_ign", np.uint8))
    for key, attr, dtype in spec:
        a = getattr(plan, attr, None)
        a = np.zeros(0, dtype=dtype) if a is None else np.asarray(a).astype(dtype).ravel()
        H[_H[key]] = sizes[dtype]
        parts[dtype].append(a)
        sizes[dtype] += a.size
    packed = []
    for dtype in (np.float64, np.int64, np.uint8):
        a = np.concatenate(parts[dtype]) if parts[dtype] else np.zeros(0, dtype=dtype)
        packed.append(a if a.size else np.zeros(1, dtype=dtype))
    return (H,) + tuple(packed)


def _nonempty(a, dtype):
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.size else np.zeros(1, dtype=dtype)


#: the largest nominal code the 16-bit variant reads
CODE16_MAX = 32767


def fits_code16(rows):
    """Whether every nominal code of ``rows`` fits the 16-bit variant."""
    return all(a.size == 0 or int(a.max()) <= CODE16_MAX for a in (rows.o, rows.t))


def _attr_major(rows, code16):
    """Reference rows attribute-major: ``(c, cpen, o, t, e)``, the codes 16-bit with
    ``code16``."""
    ct = np.int16 if code16 else np.int32
    return (_nonempty(rows.c.T, np.float64), _nonempty(rows.cpen.T, np.float64),
            _nonempty(rows.o.T, ct), _nonempty(rows.t.T, ct),
            _nonempty(rows.e.T, np.float64))


def _row_major(rows):
    """Query rows row-major: ``(c, cpen, o, t, e)``."""
    return (_nonempty(rows.c, np.float64), _nonempty(rows.cpen, np.float64),
            _nonempty(rows.o, np.int32), _nonempty(rows.t, np.int32),
            _nonempty(rows.e, np.float64))


# -- backends ------------------------------------------------------------------------

_emu_lock = threading.Lock()
_emu_libs = {}
#: the emulated device runs one grid at a time: the grid position (emulate.h's threadIdx,
#: blockIdx, ...) is one set of variables of the library
_emu_run_lock = threading.Lock()


def _emu_flags(compiler_type):
    if compiler_type == "msvc":
        return ["/O2", "/fp:precise"]
    return ["-O2", "-fno-fast-math", "-ffp-contract=off", "-fPIC"]


def _emu_library(code16):
    """The emulated device's kernels (``launch.h``; ``code16``: the variant of 16-bit
    codes), compiled with the host's C compiler at first use into a cache folder
    (``HDIST_CUDA_CACHE``, else ``~/.cache/hdist/cuda``) keyed by the sources' text."""
    with _emu_lock:
        if code16 in _emu_libs:
            return _emu_libs[code16]
        try:
            from setuptools._distutils.ccompiler import new_compiler
            from setuptools._distutils.sysconfig import customize_compiler
        except ImportError:
            raise CudaUnavailableError(
                "the emulated device (HDIST_CUDA_EMULATE=1) compiles its kernels with the "
                "host's C compiler through setuptools, which is not installed (pip install "
                "setuptools; the test extra has it)") from None
        cc = new_compiler()
        customize_compiler(cc)
        flags = _emu_flags(cc.compiler_type)
        macros = [("HD_CODE16", "1")] if code16 else []
        h = hashlib.sha256()
        for path in _SOURCES:
            with open(path, "rb") as f:
                h.update(f.read())
        h.update(repr((flags, macros, sys.platform, cc.compiler_type)).encode())
        folder = os.environ.get("HDIST_CUDA_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "hdist", "cuda")
        try:
            os.makedirs(folder, exist_ok=True)
            if not os.access(folder, os.W_OK):
                raise OSError("not writable")
        except OSError:     # a read-only home: a folder of this user's in the temporary one
            folder = os.path.join(tempfile.gettempdir(), "hdist-cuda-%s" % os.getuid()
                                  if hasattr(os, "getuid") else "hdist-cuda")
            os.makedirs(folder, exist_ok=True)
        ext = ".dll" if sys.platform == "win32" else ".so"
        path = os.path.join(folder, "emulated-%s%s" % (h.hexdigest()[:16], ext))
        if not os.path.exists(path):
            with tempfile.TemporaryDirectory(dir=folder) as tmp:
                src = os.path.join(tmp, "emulated.c")
                with open(src, "w") as f:
                    f.write('#include "launch.h"\n')
                objs = cc.compile([src], output_dir=tmp, macros=macros,
                                  include_dirs=[_KERNEL_DIR, _CUDA_DIR], extra_postargs=flags)
                out = os.path.join(tmp, "lib" + ext)
                cc.link_shared_object(objs, out)
                os.replace(out, path)
        _emu_libs[code16] = ctypes.CDLL(path)
        return _emu_libs[code16]


class _Emulated:
    """The emulated device: NumPy arrays as device memory, the kernels run by
    ``launch.h``'s loops."""

    name = "emulated"
    out_of_memory = (MemoryError,)

    def __init__(self, code16=False):
        self.lib = _emu_library(code16)
        self._seconds = 0.0

    def describe(self):
        return "emulated device (HDIST_CUDA_EMULATE=1)"

    def put(self, a):
        return np.ascontiguousarray(a)

    def empty(self, shape, dtype):
        return np.empty(shape, dtype=dtype)

    def zeros(self, shape, dtype):
        return np.zeros(shape, dtype=dtype)

    def get(self, a):
        return np.asarray(a)

    def free_bytes(self):
        return 1 << 33

    def launch(self, kernel, grid, block, shared, args):
        fn = getattr(self.lib, "hd_emu_" + kernel[3:])
        cargs = [ctypes.c_longlong(grid[0]), ctypes.c_longlong(grid[1]),
                 ctypes.c_longlong(block), ctypes.c_longlong(shared)]
        for a in args:
            if isinstance(a, np.ndarray):
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, (float, np.floating)):
                cargs.append(ctypes.c_double(a))
            else:
                cargs.append(ctypes.c_longlong(int(a)))
        with _emu_run_lock:
            t0 = time.perf_counter()
            rc = fn(*cargs)
            self._seconds += time.perf_counter() - t0
        if rc != 0:
            raise MemoryError("the emulated device could not allocate its shared memory")

    def kernel_seconds(self):
        """Seconds the kernels ran since the last call (and reset the count)."""
        t, self._seconds = self._seconds, 0.0
        return t


class _Cupy:
    """A CUDA GPU through CuPy; the kernels compiled by NVRTC at first use."""

    name = "cuda"

    def __init__(self, code16=False):
        try:
            import cupy
        except ImportError as e:
            raise CudaUnavailableError(
                "device='cuda' needs CuPy, which is not installed (pip install "
                "'hdist[cuda]', which brings cupy-cuda12x); HDIST_CUDA_EMULATE=1 runs the "
                "emulated device instead") from e
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:      # no driver: CUDARuntimeError
            raise CudaUnavailableError(
                "device='cuda' found no CUDA driver or GPU (%s)" % (e,)) from e
        if count < 1:
            raise CudaUnavailableError("device='cuda' found no CUDA GPU")
        self.cp = cupy
        self.out_of_memory = (cupy.cuda.memory.OutOfMemoryError, MemoryError)
        src, name = device_source()
        self.module = cupy.RawModule(code=src, options=tuple(nvrtc_options(code16=code16)),
                                     name_expressions=None)
        self._fns = {}
        self._events = []

    def describe(self):
        cp = self.cp
        dev = cp.cuda.Device()
        props = cp.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        return "%s (compute capability %s, driver %d)" % (
            name, dev.compute_capability, cp.cuda.runtime.driverGetVersion())

    def put(self, a):
        return self.cp.asarray(np.ascontiguousarray(a))

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype=dtype)

    def zeros(self, shape, dtype):
        return self.cp.zeros(shape, dtype=dtype)

    def get(self, a):
        return self.cp.asnumpy(a)

    def free_bytes(self):
        free, _total = self.cp.cuda.runtime.memGetInfo()
        return int(free)

    def launch(self, kernel, grid, block, shared, args):
        fn = self._fns.get(kernel)
        if fn is None:
            fn = self._fns[kernel] = self.module.get_function(kernel)
        cargs = []
        for a in args:
            if isinstance(a, (float, np.floating)):
                cargs.append(np.float64(a))
            elif isinstance(a, (int, np.integer)):
                cargs.append(np.int64(a))
            else:
                cargs.append(a)
        start, stop = self.cp.cuda.Event(), self.cp.cuda.Event()
        start.record()
        fn((int(grid[0]), int(grid[1])), (int(block),), tuple(cargs), shared_mem=int(shared))
        stop.record()
        self._events.append((start, stop))

    def kernel_seconds(self):
        """Seconds the kernels ran since the last call (waits for them; resets the
        count)."""
        events, self._events = self._events, []
        if not events:
            return 0.0
        events[-1][1].synchronize()
        return sum(self.cp.cuda.get_elapsed_time(a, b) for a, b in events) / 1000.0


def backend(code16=False):
    """The device ``device="cuda"`` runs on: the emulated one under
    ``HDIST_CUDA_EMULATE=1``, else a GPU through CuPy (:class:`CudaUnavailableError`
    naming what is missing); ``code16``: its kernels that read 16-bit nominal codes."""
    return _Emulated(code16) if emulated() else _Cupy(code16)


# -- certification of a query's candidates -----------------------------------------------

def _certified(cplan, pmode, S, J, T, Jt, n, k, ties):
    """Which queries' candidates hold their exact answer.

    ``S``/``J`` ``[q, K]``: the device's K smallest (reduced distance, index), ascending,
    ``(inf, n)`` past the rows it has; ``T``/``Jt``: the candidates' true distances and
    indices sorted by (true, index).  With ``s`` the last candidate's reduced distance
    (inside the trusted range, so the rows left out have true distances at least
    ``finalize(s)``, finalize being monotone): certified when ``finalize(s)`` exceeds the
    k-th true distance ``T_k``; or, without tie lists, when it equals ``T_k``, the next
    larger reduced value already finalizes above ``T_k``, and the last candidate's index is
    at least the k-th's (a row left out at ``T_k`` then comes after the k-th)."""
    nq, K = S.shape
    cnt = (J < n).sum(axis=1)
    last = np.maximum(cnt - 1, 0)
    s_last = S[np.arange(nq), last].copy()
    j_last = J[np.arange(nq), last]
    from .._kernels import finalize_array
    f_last = finalize_array(cplan, np.ascontiguousarray(s_last))
    Tk = T[:, k - 1]
    ok_range = np.ones(nq, dtype=bool) if pmode < 2 else \
        (s_last >= 10 * _SAFE_LO) & (s_last <= _SAFE_HI / 10)
    ok = ok_range & (f_last > Tk)
    if not ties:
        f_up = finalize_array(cplan, np.ascontiguousarray(np.nextafter(s_last, np.inf)))
        ok |= ok_range & (f_last == Tk) & (f_up > Tk) & (j_last >= Jt[:, k - 1])
    return ok


# -- the searcher ----------------------------------------------------------------------

@register
class CudaSearcher(Searcher):
    """Brute-force search on a CUDA device, bit-identical to the CPU's.

    The rows are uploaded attribute-major by :meth:`build` and kept on the device; each
    search streams the queries in blocks (:attr:`block_rows` at most, fewer where device
    memory is short: a block that runs out of memory is split), selects on the device and
    finishes on the host (module docstring).

    Parameters
    ----------
    plan : hdist._core.plan.Plan
        The fitted metric's plan.
    rows : hdist._core.plan.Rows
        The encoded reference rows.
    leaf_size : int
        Unused (the searchers' common signature).
    crows : CRows, optional
        The kernels' view of ``rows`` where the caller has it (the searchers' common
        signature).
    block_rows : int, optional
        Most query rows per block (default 4096).
    threads_per_block : int, optional
        Most threads per block of the scan kernels (default 128).
    small_codes : bool, optional
        Upload the nominal codes as 16-bit integers where every code fits (default True;
        False: 32-bit).

    Attributes
    ----------
    code16_ : bool
        Whether the uploaded rows' codes are 16-bit.
    build_time_, upload_time_ : float
        Seconds of the last :meth:`build` and of its upload.
    """

    name = "cuda"
    exact = True

    @classmethod
    def refusal(cls, plan, rows=None, names=None):
        """Why the device cannot serve this plan exactly (None: it can): a general p
        (other than inf, 1, 2, 0.5, 3 and 4) needs ``pow`` for each term, which CUDA does
        not round as the host's C library does."""
        if tile_pmode(plan) == 3:
            return ("device='cuda' serves p = inf, 1, 2, 0.5, 3 and 4; p = %r needs pow() "
                    "for each term, which the GPU does not round as the CPU does"
                    % (float(plan.p),))
        return None

    #: what is made from the rows and not pickled (:meth:`_forget`): the device's copy
    _transient = ("_crows", "_d", "dev", "_cplan")

    def __init__(self, plan, rows, *, leaf_size=32, crows=None, block_rows=4096,
                 threads_per_block=THREADS, small_codes=True, **params):
        super().__init__(plan, rows, leaf_size=leaf_size, crows=crows, **params)
        reason = self.refusal(plan, rows)
        if reason:
            raise ValueError(reason)
        if int(block_rows) < 1:
            raise ValueError("block_rows must be >= 1, got %r" % (block_rows,))
        if not 1 <= int(threads_per_block) <= 1024:
            raise ValueError("threads_per_block must be in [1, 1024], got %r"
                             % (threads_per_block,))
        self.block_rows = int(block_rows)
        self.threads_per_block = int(threads_per_block)
        self.small_codes = bool(small_codes)
        self.code16_ = False
        self.dev = None
        self.build_time_ = 0.0
        self.upload_time_ = 0.0
        self._cplan = None
        self._d = None

    # -- state --------------------------------------------------------------------------
    @property
    def cplan(self):
        """The CPU's view of the plan (the host's finishing functions)."""
        if self._cplan is None:
            from .._kernels import CPlan
            self._cplan = getattr(self.plan, "cplan", None) or CPlan(self.plan)
        return self._cplan

    @property
    def nbytes(self):
        """Bytes the rows take on the device."""
        if self._d is None:
            return 0
        return int(sum(a.nbytes for a in self._d["rows"]) +
                   sum(a.nbytes for a in self._d["plan"]))

    depth = 0
    n_nodes = 0

    @property
    def device_name(self):
        """The device in words (its name, compute capability and driver)."""
        self._ensure()
        return self.dev.describe()

    def build(self, progress=None):
        """Upload the rows (attribute-major) and the plan to the device."""
        t0 = time.perf_counter()
        code16 = self.small_codes and fits_code16(self.rows)
        if self.dev is None or self.code16_ != code16:
            self.dev = backend(code16)
        self.code16_ = code16
        n, D = self.rows.n, self.rows.D
        t1 = time.perf_counter()
        self._d = {"plan": tuple(self.dev.put(a) for a in _plan_arrays(self.plan, n, D)),
                   "rows": tuple(self.dev.put(a) for a in _attr_major(self.rows, code16)),
                   "n": n}
        self.upload_time_ = time.perf_counter() - t1
        self.build_time_ = time.perf_counter() - t0
        report = _progress.reporter(progress, n, "cuda upload")
        if report is not None:
            report(n, n)

    def insert(self, rows, new, n_old):
        """Take the rows after an insertion (``rows``: all of them) and upload them again."""
        self.rows = rows
        self._forget()
        self.build()

    def _forget(self):
        """Drop the device's copy of the rows (uploaded again on use)."""
        super()._forget()
        self._d = None
        self.dev = None
        self._cplan = None

    def _ensure(self):
        """Upload the rows on first use (once, whatever the threads searching)."""
        if self._d is None:
            with self._lock:
                if self._d is None:
                    self.build()

    # -- launches -----------------------------------------------------------------------
    def _args(self, qd):
        return self._d["plan"] + self._d["rows"] + qd

    def _grid(self, chunk_target):
        """``(rows per chunk, chunks)`` for about ``chunk_target`` chunks of the reference
        rows (at least a block's threads' worth each)."""
        n = self._d["n"]
        T = self.threads_per_block
        chunk = max(T, -(-n // max(1, chunk_target)))
        return chunk, max(1, -(-n // chunk))

    def _knn_chunks(self, nqb, K, T):
        """Chunks of a k-NN scan of ``nqb`` queries: at most :data:`KNN_CHUNKS`, fewer
        where the block's queries alone make :data:`KNN_BLOCKS` GPU blocks, and few
        enough that each thread meets four times K rows (its heap's first K rows are
        computed in full; the later ones are mostly abandoned early)."""
        n = self._d["n"]
        return max(1, min(KNN_CHUNKS, KNN_BLOCKS // max(1, nqb), n // (4 * K * T)))

    def _blocks(self, nq, per_query_bytes):
        """Query rows per block: :attr:`block_rows` at most, within a quarter of the
        device's free memory."""
        room = max(1, self.dev.free_bytes() // 4)
        return max(1, min(self.block_rows, nq, room // max(1, per_query_bytes)))

    def _stream(self, nq, per_query_bytes, launch, finish):
        """The queries in blocks: ``launch(q0, q1)`` starts a block's work on the device
        and returns a handle, ``finish(handle)`` waits for it and finishes on the host --
        the previous block's, while the device runs the next one (on a GPU launches
        return at once: the host's work and the copies overlap the device's).  A block
        that runs out of device memory is split in halves (a single query that does not
        fit raises); Ctrl-C is honoured between blocks."""
        b = self._blocks(nq, per_query_bytes)
        q0 = 0
        pending = None
        while q0 < nq:
            q1 = min(nq, q0 + b)
            try:
                handle = launch(q0, q1)
            except self.dev.out_of_memory:
                if pending is not None:     # the memory of the block before, then again
                    finish(pending)
                    pending = None
                    continue
                if q1 - q0 == 1:
                    raise
                b = max(1, (q1 - q0) // 2)
                continue
            if pending is not None:
                finish(pending)
            pending = handle
            q0 = q1
        if pending is not None:
            finish(pending)

    def _knn_launch(self, qd, q0, nqb, K, excl):
        """Start the device's selection of the K smallest (reduced, index) of each query
        of a block; returns the device arrays that will hold them, ascending."""
        T = max(1, min(self.threads_per_block, SHARED_BYTES // (16 * K)))
        chunk, nchunks = self._grid(self._knn_chunks(nqb, K, T))
        bd = self.dev.empty((nqb, nchunks, K), np.float64)
        bj = self.dev.empty((nqb, nchunks, K), np.int64)
        od = self.dev.empty((nqb, K), np.float64)
        oj = self.dev.empty((nqb, K), np.int64)
        self.dev.launch("hd_knn_scan", (nqb, nchunks), T, T * K * 16,
                        self._args(qd) + (q0, 1 if excl else 0, 0, K, chunk, bd, bj))
        self.dev.launch("hd_knn_merge", (nqb, 1), 1, 0, (nchunks, K, bd, bj, od, oj))
        return od, oj

    def _knn_start(self, qall, nq, todo, K, excl):
        """Upload queries ``todo`` and start their selection (with ``excl`` each skips
        itself: the queries are reference rows, and a launch covers a run of consecutive
        ones, the kernel skipping row q0 + q)."""
        qd = tuple(self.dev.put(a) for a in _take(qall, todo, nq))
        if not excl:
            return [self._knn_launch(qd, 0, len(todo), K, False)]
        parts = []
        start = 0
        for stop in list(np.flatnonzero(np.diff(todo) != 1) + 1) + [len(todo)]:
            sub = tuple(a[start:stop] if a.shape[0] == len(todo) else a for a in qd)
            parts.append(self._knn_launch(sub, int(todo[start]), stop - start, K, True))
            start = stop
        return parts

    def _knn_collect(self, parts):
        """The candidates ``(S, J)`` of started selections, ``(inf, n)`` past the rows."""
        n = self._d["n"]
        S = np.concatenate([self.dev.get(od) for od, _ in parts])
        J = np.concatenate([self.dev.get(oj) for _, oj in parts])
        J[J > n] = n
        return S, J

    # -- the host's finishing -------------------------------------------------------------
    def _true(self, queries, qidx, S, J):
        """True distances of the candidates: query ``qidx[i]`` of ``queries`` and row
        ``J[i, c]`` with reduced distance ``S[i, c]`` (any shape, ``qidx`` broadcast
        against it), as the CPU's ``true_of``: finalized, or, outside the range where
        the root is trusted (p = 2 and other p), the CPU's pair function."""
        from .._kernels import CRows, finalize_array, pairwise
        S = np.asarray(S, dtype=np.float64)
        T = finalize_array(self.cplan, np.array(S).ravel()).reshape(S.shape)
        n = self._d["n"]
        if int(self.plan.pmode) >= 2:
            bad = (J < n) & ~((S >= _SAFE_LO) & (S <= _SAFE_HI))
            if bad.any():
                Q = np.broadcast_to(np.asarray(qidx).reshape(
                    (-1,) + (1,) * (S.ndim - 1)), S.shape)[bad]
                Jb = J[bad]
                Tb = np.empty(len(Jb))
                for q in np.unique(Q):
                    at = np.flatnonzero(Q == q)
                    out = np.empty((1, len(at)))
                    pairwise(self.cplan, CRows(queries.take([q])),
                             CRows(self.rows.take(Jb[at])), out, 1)
                    Tb[at] = out[0]
                T[bad] = Tb
        return T

    def knn(self, queries, k, threads, *, exclude_self=False, ties=False):
        """The k nearest reference rows of each query row (``exclude_self``: the queries
        are the indexed rows and each skips itself), sorted by (true distance, index);
        ``ties``: False, True (the rows tied with the k-th listed after it, in index
        order, padded with ``inf`` and index 0, as the CPU's ``TieLists.widen``) or a
        :class:`~hdist._search.votes.TieTally` (which counts them; lists of width k)."""
        self._ensure()
        n = self._d["n"]
        n_avail = n - (1 if exclude_self else 0)
        k = int(k)
        if k < 1 or k > n_avail:
            raise ValueError("k must be in [1, %d], got %d" % (n_avail, k))
        want_lists = ties is not False and ties is not None
        self.dev.kernel_seconds()
        nq = queries.n
        dist = np.empty((nq, k))
        ind = np.empty((nq, k), dtype=np.intp)
        tied = [None] * nq
        stats = {"rounds": 0, "host_queries": 0, "candidates": 0}
        K0 = min(n_avail, max(k + 8, k + k // 4))
        qall = _row_major(queries)

        def launch(q0, q1):
            todo = np.arange(q0, q1)
            if K0 > K_MAX:
                return todo, K0, None
            return todo, K0, self._knn_start(qall, nq, todo, K0, exclude_self)

        def finish(handle):
            todo, K, parts = handle
            while len(todo):
                if parts is None and K <= K_MAX:
                    try:
                        parts = self._knn_start(qall, nq, todo, K, exclude_self)
                    except self.dev.out_of_memory:
                        K = K_MAX + 1   # no room for more candidates: the CPU's kernel
                if parts is None:
                    for q in todo:
                        self._knn_host(queries, q, k, exclude_self, want_lists, dist, ind,
                                       tied)
                    stats["host_queries"] += len(todo)
                    break
                S, J = self._knn_collect(parts)
                parts = None
                stats["rounds"] += 1
                stats["candidates"] += int((J < n).sum())
                T = self._true(queries, todo, S, J)
                o1 = np.argsort(J, axis=1, kind="stable")
                T1 = np.take_along_axis(T, o1, axis=1)
                J1 = np.take_along_axis(J, o1, axis=1)
                o2 = np.argsort(T1, axis=1, kind="stable")
                Ts = np.take_along_axis(T1, o2, axis=1)
                Js = np.take_along_axis(J1, o2, axis=1)
                complete = (J < n).sum(axis=1) >= n_avail
                ok = complete | _certified(self.cplan, int(self.plan.pmode), S, J, Ts, Js, n,
                                           k, want_lists)
                done = np.flatnonzero(ok)
                dist[todo[done]] = Ts[done, :k]
                ind[todo[done]] = Js[done, :k]
                if want_lists:
                    at_k = (Ts[done, k:] == Ts[done, k - 1:k]) & (Js[done, k:] < n)
                    for i in np.flatnonzero(at_k.any(axis=1)):
                        tied[todo[done[i]]] = np.sort(Js[done[i], k:][at_k[i]])
                todo = todo[~ok]
                # more candidates (every row a candidate is always certified); past
                # K_MAX the CPU's kernel
                K = K_MAX + 1 if K >= K_MAX else min(n_avail, 4 * K, K_MAX)

        per_query = 16 * (KNN_CHUNKS * K0 + K0) + 8 * (queries.c.shape[1]
                                                        + queries.e.shape[1] + 2)
        self._stream(nq, per_query, launch, finish)
        found_extra = dict(stats, device=self.dev.name,
                           kernel_seconds=self.dev.kernel_seconds())
        if want_lists:
            w = max((len(t) for t in tied if t is not None), default=0)
            wd = np.full((nq, k + w), np.inf)
            wi = np.zeros((nq, k + w), dtype=np.intp)
            wd[:, :k], wi[:, :k] = dist, ind
            for q, t in enumerate(tied):
                if t is not None and len(t):
                    wd[q, k:k + len(t)] = dist[q, k - 1]
                    wi[q, k:k + len(t)] = t
            if ties is True:
                dist, ind = wd, wi
            else:
                ties.add_lists(wd, wi, k)
        return Found(dist, ind, np.full(nq, n_avail, dtype=np.intp), "cuda",
                     "device='cuda': every pair on the %s, the k smallest selected there"
                     % ("emulated device" if self.dev.name == "emulated" else "GPU"),
                     found_extra)

    def _knn_host(self, queries, q, k, exclude_self, want_lists, dist, ind, tied):
        """Query q by the CPU's kernel (a tie group at its k-th distance larger than
        K_MAX)."""
        from .._kernels import CRows, knn
        cq = CRows(queries.take([q]))
        d, i = knn(self.cplan, cq, CRows(self.rows), k, 1, exclude_self=exclude_self,
                   self_offset=int(q), ties=bool(want_lists))
        dist[q], ind[q] = d[0, :k], i[0, :k]
        if want_lists:
            extra = i[0, k:][np.isfinite(d[0, k:])]
            tied[q] = np.sort(extra)

    def radius(self, queries, r, threads, *, exclude_self=False, self_offset=0):
        """The reference rows within true distance ``r`` (inclusive) of each query row,
        sorted by (true distance, index): lists of arrays.  ``exclude_self``: query q
        skips reference row ``q + self_offset``."""
        from .._kernels import reduced_radius
        self._ensure()
        n = self._d["n"]
        nq = queries.n
        rred = float(reduced_radius(self.cplan, float(r)))
        self.dev.kernel_seconds()
        out_d = [None] * nq
        out_i = [None] * nq
        qall = _row_major(queries)
        chunk, nchunks = self._grid(SCAN_CHUNKS)
        T = self.threads_per_block
        cap0 = 64
        stats = {"rounds": 0}

        def run(q0, q1):
            todo = np.arange(q0, q1)
            cap = cap0
            while len(todo):
                sub = _take(qall, todo, nq)
                runs = np.flatnonzero(np.diff(todo) != 1) + 1
                hs = self.dev.empty((len(todo), cap), np.float64)
                hj = self.dev.empty((len(todo), cap), np.int64)
                cnt = self.dev.zeros(len(todo), np.uint32)
                start = 0
                for stop in list(runs) + [len(todo)]:
                    qd = tuple(self.dev.put(a[start:stop] if a.shape[0] == len(todo) else a)
                               for a in sub)
                    m = stop - start
                    hs_v, hj_v, cnt_v = _views(self.dev, hs, hj, cnt, start, stop)
                    self.dev.launch("hd_radius_scan", (m, nchunks), T, 0,
                                    self._args(qd) + (int(todo[start]),
                                                      1 if exclude_self else 0,
                                                      int(self_offset), rred, chunk, cap,
                                                      cnt_v, hs_v, hj_v))
                    start = stop
                stats["rounds"] += 1
                C = self.dev.get(cnt).astype(np.int64)
                HS, HJ = self.dev.get(hs), self.dev.get(hj)
                over = C > cap
                fit = np.flatnonzero(~over)
                hit = np.arange(cap)[None, :] < C[fit, None]
                qh = np.broadcast_to(todo[fit, None], hit.shape)[hit]
                jh = HJ[fit][hit]
                th = self._true(queries, qh, HS[fit][hit], jh)
                keep = th <= r
                qh, jh, th = qh[keep], jh[keep], th[keep]
                o = np.lexsort((jh, th, qh))
                qh, jh, th = qh[o], jh[o].astype(np.intp), th[o]
                cuts = np.searchsorted(qh, todo[fit], side="right")
                first = np.concatenate([[0], cuts[:-1]])
                for i, q in enumerate(todo[fit]):
                    out_d[q] = th[first[i]:cuts[i]]
                    out_i[q] = jh[first[i]:cuts[i]]
                todo = todo[over]
                if len(todo):
                    cap = int(C[over].max())

        # each block searched and finished at once (its room for hits is known after it)
        self._stream(nq, 16 * cap0 + 8 * (queries.c.shape[1] + queries.e.shape[1] + 2), run,
                     lambda handle: None)
        ev = np.full(nq, n, dtype=np.intp)
        if exclude_self:
            ev -= ((np.arange(nq) + self_offset >= 0)
                   & (np.arange(nq) + self_offset < n)).astype(np.intp)
        return Found(out_d, out_i, ev, "cuda",
                     "device='cuda': every pair on the %s, the rows within the radius "
                     "selected there" % ("emulated device" if self.dev.name == "emulated"
                                         else "GPU"),
                     dict(stats, device=self.dev.name,
                          kernel_seconds=self.dev.kernel_seconds()))

    def pairwise(self, queries, out=None, reduced=False):
        """The true distances of every query row to every reference row, ``[n_q, n]``
        (the CPU's ``pairwise`` bit for bit): reduced distances on the device, finished on
        the host; ``reduced=True``: the reduced distances ``Σ w d^p`` themselves."""
        self._ensure()
        n = self._d["n"]
        nq = queries.n
        if out is None:
            out = np.empty((nq, n))
        elif out.shape != (nq, n) or out.dtype != np.float64:
            raise ValueError("out must be a float64 array of shape (%d, %d), got %s %s"
                             % (nq, n, out.dtype, out.shape))
        qall = _row_major(queries)
        chunk, nchunks = self._grid(SCAN_CHUNKS)
        T = self.threads_per_block

        def launch(q0, q1):
            qd = tuple(self.dev.put(a[q0:q1] if a.shape[0] == nq else a) for a in qall)
            dm = self.dev.empty((q1 - q0, n), np.float64)
            self.dev.launch("hd_pairwise", (q1 - q0, nchunks), T, 0,
                            self._args(qd) + (chunk, dm))
            return q0, q1, dm

        def finish(handle):
            q0, q1, dm = handle
            S = self.dev.get(dm)
            if reduced:
                out[q0:q1] = S
                return
            J = np.broadcast_to(np.arange(n, dtype=np.int64), S.shape)
            out[q0:q1] = self._true(queries, np.arange(q0, q1), S, J)

        self._stream(nq, 8 * n, launch, finish)
        return out


def _take(qall, idx, nq):
    """The query arrays' rows ``idx`` (arrays of another length, the placeholders of
    empty blocks, as they are)."""
    return tuple(a[idx] if a.shape[0] == nq else a for a in qall)


def _views(dev, hs, hj, cnt, start, stop):
    """Rows ``start .. stop`` of the radius buffers (row slices of C-contiguous arrays:
    the device reads them in place)."""
    return hs[start:stop], hj[start:stop], cnt[start:stop]
