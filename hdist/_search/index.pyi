"""Type stubs of :mod:`hdist._search.index` (:class:`NeighborsIndex`)."""
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from .._core.plan import Plan, Rows
from .rowindex import RowIndex
from ..metrics import Metric, Table

Float64Array = npt.NDArray[np.float64]
IntpArray = npt.NDArray[np.intp]
ObjectArray = npt.NDArray[np.object_]

ALGORITHMS: tuple[str, ...]
ALGORITHM_PARAMS: tuple[str, ...]

def algorithms() -> tuple[str, ...]: ...

def auto_algorithm(plan: Plan, n_rows: int, pilot: Any = None, race: Any = None) -> str: ...
def ball_tree_refusal(plan: Plan, rows: Rows, names: list[str] | None = None) -> str | None: ...

class Recall(float):
    k: int
    k_asked: int
    note: str
    def __new__(cls, value: float, k: int, k_asked: int, note: str = "") -> Recall: ...

class NeighborsIndex(RowIndex):
    metric: str | Metric
    algorithm: str
    leaf_size: int
    metric_params: dict[str, Any] | None
    n_lists: int | None
    n_probe: int | None
    target_recall: float | None
    random_state: int
    device: str
    metric_: Metric
    algorithm_: str
    n_distance_evaluations_: IntpArray
    search_: dict[str, Any]
    def __init__(self, metric: str | Metric = "heom",
                 algorithm: str = "auto",
                 leaf_size: int = 32, metric_params: dict[str, Any] | None = None,
                 n_lists: int | None = None, n_probe: int | None = None,
                 target_recall: float | None = None, random_state: int = 0, *,
                 device: Literal["cpu", "cuda"] = "cpu") -> None: ...
    def fit(self, X: Table | None = None, y: Any = None, sample_weight: Any = None, *,
            progress: Progress = None) -> NeighborsIndex: ...
    @property
    def build_time_(self) -> float: ...
    @property
    def n_train_(self) -> int: ...
    @property
    def depth_(self) -> int: ...
    @property
    def n_nodes_(self) -> int: ...
    @property
    def tree_nbytes_(self) -> int: ...
    @property
    def data_nbytes_(self) -> int: ...
    @property
    def n_lists_(self) -> int: ...
    @property
    def n_probe_(self) -> int: ...
    @n_probe_.setter
    def n_probe_(self, value: int) -> None: ...
    @property
    def list_sizes_(self) -> IntpArray: ...
    @property
    def centres_(self) -> IntpArray: ...
    def recall(self, Q: Table | None = None, k: int = 10, n_probe: int | None = None,
               n_jobs: int | None = None) -> Recall: ...
    def insert(self, X: Table) -> IntpArray: ...
    def balanced_depth(self, n: int | None = None) -> int: ...
    @overload
    def kneighbors(self, Q: Table | None = None, k: int = 5, *, exclude_self: bool = False,
                   return_distance: Literal[True] = True,
                   n_jobs: int | None = None,
                   progress: Any = None,
                   n_probe: int | None = None) -> tuple[Float64Array, IntpArray]: ...
    @overload
    def kneighbors(self, Q: Table | None = None, k: int = 5, *, exclude_self: bool = False,
                   return_distance: Literal[False],
                   n_jobs: int | None = None, progress: Any = None,
                   n_probe: int | None = None) -> IntpArray: ...
    @overload
    def radius_neighbors(self, Q: Table | None = None, r: float = 1.0, *,
                         exclude_self: bool = False, return_distance: Literal[True] = True,
                         n_jobs: int | None = None,
                         progress: Any = None) -> tuple[ObjectArray, ObjectArray]: ...
    @overload
    def radius_neighbors(self, Q: Table | None = None, r: float = 1.0, *,
                         exclude_self: bool = False, return_distance: Literal[False],
                         n_jobs: int | None = None, progress: Any = None) -> ObjectArray: ...

def check_algorithm_params(algorithm: str,
                           params: dict[str, Any] | None) -> dict[str, Any]: ...
def make_index(metric: str | Metric, algorithm: str = "auto", leaf_size: int = 30,
               algorithm_params: dict[str, Any] | None = None,
               device: str = "cpu") -> NeighborsIndex: ...
