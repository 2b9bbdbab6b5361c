"""Type stubs of the compiled kernels (the modules of ``hdist/_kernels/``, gathered by
its ``__init__``).

The kernels see only arrays: a :class:`CPlan` (the C view of a fitted metric's
:class:`hdist._core.plan.Plan`) and :class:`CRows` (the C view of encoded rows).
"""
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

Float64Array = npt.NDArray[np.float64]
IntpArray = npt.NDArray[np.intp]

#: below this many pairs a call runs on one thread (every kernel; results never depend on
#: the thread count)
SERIAL_PAIRS: int
SAFE_RANGE: tuple[float, float]
TILE_ROWS: int
ATTR_MAJOR_BYTES: int
REGION_PAIRS: int
THREAD_REGION_PAIRS: int
STREAM_BYTES: int
GEMM_MAX_CHUNK: int

def openmp_enabled() -> bool: ...
def omp_max_threads() -> int: ...
def isa_variants() -> list[str]: ...
def isa() -> str: ...
def set_isa(name: str) -> str: ...
def bf16_bounds() -> bool: ...
def bf16_bounds_available() -> bool: ...
def set_bf16_bounds(on: bool) -> None: ...

class CPlan:
    def __init__(self, plan: Any) -> None: ...

class CRows:
    def __init__(self, rows: Any) -> None: ...
    @property
    def n(self) -> int: ...

def knn(
    plan: CPlan,
    Q: CRows,
    R: CRows,
    k: int,
    n_threads: int,
    tile: int = 256,
    block: int = 0,
    exclude_self: bool = False,
    self_offset: int = 0,
    strategy: Literal["queries", "references"] | None = None,
    ties: bool | TieLists | Any = False,
    chunk: int = 0,
) -> tuple[Float64Array, IntpArray]: ...

class TieLists:
    def __init__(
        self,
        n: int,
        codes: IntpArray | None = None,
        n_classes: int = 0,
        values: Float64Array | None = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    @property
    def is_tally(self) -> bool: ...
    def like(self, n: int) -> TieLists: ...
    def tally(self) -> tuple[npt.NDArray[np.int64], Float64Array]: ...
    def widen(self, D: Float64Array, I: IntpArray) -> tuple[Float64Array, IntpArray]: ...

def finish_heaps(plan: CPlan, D: Float64Array, I: IntpArray) -> None: ...
def gemm_select(
    plan: CPlan,
    Q: CRows,
    R: CRows,
    G: npt.NDArray[np.float32] | Float64Array,
    nx: Float64Array,
    ny_max: Float64Array,
    q0: int,
    r0: int,
    r_chunk: int,
    HD: Float64Array,
    HI: IntpArray,
    eps: float,
    n_threads: int,
    exclude_self: bool = False,
    self_offset: int = 0,
    gy: npt.NDArray[np.float32] | Float64Array | None = None,
    qptr: IntpArray | None = None,
    qidx: IntpArray | None = None,
    gmin: Float64Array | None = None,
    hq: Float64Array | None = None,
    rptr: IntpArray | None = None,
    ridx: IntpArray | None = None,
    hc: npt.NDArray[np.float32] | Float64Array | None = None,
) -> None: ...
class GemmKnnSelect:
    def __init__(
        self,
        plan: CPlan,
        Q: CRows,
        R: CRows,
        nx: Float64Array,
        ny_max: Float64Array,
        r_chunk: int,
        HD: Float64Array,
        HI: IntpArray,
        eps: float,
        dtype: Any,
        exclude_self: bool = False,
        self_offset: int = 0,
        gy: npt.NDArray[np.float32] | Float64Array | None = None,
        qptr: IntpArray | None = None,
        qidx: IntpArray | None = None,
        gmin: Float64Array | None = None,
        hq: Float64Array | None = None,
        rptr: IntpArray | None = None,
        ridx: IntpArray | None = None,
        hc: npt.NDArray[np.float32] | Float64Array | None = None,
        ties: TieLists | None = None,
        refmiss: RefMissing | None = None,
        fused: bool = False,
    ) -> None: ...
    def search(
        self,
        X: npt.NDArray[np.float32],
        Yp: npt.NDArray[np.float32],
        n_threads: int,
        q_chunk: int = 0,
        r_block: int = 0,
    ) -> None: ...
    def tile(self, G: npt.NDArray[np.float32] | Float64Array, q0: int, r0: int) -> None: ...

GEMM_BLOCK_ROWS: int
GEMM_REGION_PAIRS: int
GEMM_MAX_QUERY_CHUNK: int
GEMM_CACHED_PANELS: int

def aligned_empty(shape: int | tuple[int, ...], dtype: npt.DTypeLike) -> npt.NDArray[Any]: ...
def gemm_panels(
    Y: npt.NDArray[np.float32], height: int = 16, order: IntpArray | None = None
) -> npt.NDArray[np.float32]: ...
class RefMissing:
    rptr: IntpArray
    ridx: IntpArray
    ab: npt.NDArray[np.uint16]
    ncol: int
    def __init__(self, rptr: IntpArray, ridx: IntpArray, ncol: int) -> None: ...
    def tables(self, hq: Float64Array) -> npt.NDArray[np.float32]: ...

def miss_lists(absent: npt.NDArray[np.uint8]) -> tuple[IntpArray, IntpArray]: ...
def miss_codes(
    hq: Float64Array, hb: Float64Array | None, rptr: IntpArray, ridx: IntpArray
) -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.float32]]: ...
def gemm_products(
    X: npt.NDArray[np.float32],
    Yp: npt.NDArray[np.float32],
    ab: npt.NDArray[np.uint16] | None = ...,
    tab: npt.NDArray[np.float32] | None = ...,
    gy: npt.NDArray[np.float32] | None = ...,
    qptr: npt.NDArray[np.intp] | None = ...,
    qidx: npt.NDArray[np.intp] | None = ...,
    rows: npt.NDArray[np.uint8] | None = ...,
) -> npt.NDArray[np.float32]: ...
def query_continuous(
    c: Float64Array,
    cpen: Float64Array,
    elo: Float64Array,
    scale: Float64Array,
    centre: Float64Array,
    both: Float64Array,
    hcol: IntpArray,
    X: Float64Array,
    const: Float64Array,
    H: Float64Array,
    absent: npt.NDArray[np.uint8],
) -> None: ...
def query_norms(
    X: Float64Array, H: Float64Array, qptr: IntpArray
) -> tuple[float, Float64Array]: ...
def query_coded(
    codes: npt.NDArray[np.int32],
    ev: Float64Array,
    ev_off: IntpArray,
    width: IntpArray,
    sv: Float64Array,
    ok: npt.NDArray[np.uint8],
    sv_off: IntpArray,
    miss: Float64Array,
    hcol: IntpArray,
    X: Float64Array,
    x0: int,
    const: Float64Array,
    H: Float64Array,
    absent: npt.NDArray[np.uint8],
    a0: int,
) -> bool: ...

def gemm_radius_select(
    plan: CPlan,
    Q: CRows,
    R: CRows,
    G: npt.NDArray[np.float32] | Float64Array,
    nx: Float64Array,
    ny_max: Float64Array,
    q0: int,
    r0: int,
    r_chunk: int,
    r: float,
    eps: float,
    exclude_self: bool = False,
    self_offset: int = 0,
    gy: npt.NDArray[np.float32] | Float64Array | None = None,
    qptr: IntpArray | None = None,
    qidx: IntpArray | None = None,
    gmin: Float64Array | None = None,
    hq: Float64Array | None = None,
    rptr: IntpArray | None = None,
    ridx: IntpArray | None = None,
    hc: npt.NDArray[np.float32] | Float64Array | None = None,
    ab: npt.NDArray[np.uint16] | None = None,
    tab: npt.NDArray[np.float32] | None = None,
) -> tuple[IntpArray, IntpArray, Float64Array]: ...
def gemm_radius_lists(
    qs: IntpArray, js: IntpArray, ds: Float64Array, nq: int, n_threads: int = 1
) -> tuple[list[Float64Array], list[IntpArray]]: ...
def pairwise(
    plan: CPlan,
    X: CRows,
    Y: CRows,
    out: Float64Array,
    n_threads: int,
    symmetric: bool = False,
    reduced: bool = False,
    chunk: int = 0,
) -> Float64Array: ...
def radius(
    plan: CPlan,
    Q: CRows,
    R: CRows,
    r: float,
    n_threads: int,
    exclude_self: bool = False,
    self_offset: int = 0,
    block: int = 0,
    chunk: int = 0,
) -> tuple[list[Float64Array], list[IntpArray]]: ...
def knn_lists(
    plan: CPlan,
    Q: CRows,
    store: dict[str, npt.NDArray[Any]],
    offsets: IntpArray,
    ids: IntpArray,
    probes: npt.NDArray[np.intp],
    k: int,
    n_threads: int,
    self_ids: IntpArray | None = None,
    ties: bool | TieLists | Any = False,
) -> tuple[Float64Array, IntpArray, IntpArray]: ...
def radius_lists(
    plan: CPlan,
    Q: CRows,
    store: dict[str, npt.NDArray[Any]],
    offsets: IntpArray,
    ids: IntpArray,
    probes: npt.NDArray[np.intp],
    r: float,
    n_threads: int,
    self_ids: IntpArray | None = None,
) -> tuple[list[Float64Array], list[IntpArray], IntpArray]: ...
def pair_terms(
    plan: CPlan, A: CRows, i: int, B: CRows, j: int
) -> tuple[
    Float64Array, Float64Array, Float64Array, Float64Array,
    npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.bool_],
    npt.NDArray[np.bool_], float,
]: ...
def finalize_array(plan: CPlan, s: Float64Array) -> Float64Array: ...
def reduced_radius(plan: CPlan, r: float) -> float: ...
def pam_assign(
    Dm: Float64Array,
    med: IntpArray,
    near: IntpArray,
    seco: IntpArray,
    dn: Float64Array,
    ds: Float64Array,
    w: Float64Array,
) -> float: ...
def pam_swaps(
    D: Float64Array,
    rows: IntpArray,
    cand: IntpArray,
    Dm: Float64Array,
    med: IntpArray,
    near: IntpArray,
    seco: IntpArray,
    dn: Float64Array,
    ds: Float64Array,
    w: Float64Array,
    state: IntpArray,
    loss: Float64Array,
    n_visit: int,
    n_threads: int,
) -> int: ...
