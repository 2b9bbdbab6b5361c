"""Type stubs of :mod:`hdist.metrics` (the metric registry and :class:`Metric`)."""
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence, overload

import numpy as np
import numpy.typing as npt

from ._core.plan import Plan, Rows
from ._core.schema import Schema

Float64Array = npt.NDArray[np.float64]
IntpArray = npt.NDArray[np.intp]
ObjectArray = npt.NDArray[np.object_]
#: any table hdist reads: pandas / polars DataFrame, pyarrow Table, numpy 2-D or structured
#: array, list of rows
Table = Any

POLICIES: tuple[str, str, str, str]
NA_VALUES: tuple[str, ...]

class ColumnKindWarning(UserWarning):
    columns: list[tuple[str, str]]
    def __init__(self, columns: Sequence[tuple[str, str]]) -> None: ...

@dataclass(frozen=True)
class MetricInfo:
    name: str
    continuous: str | None
    nominal: str
    defaults: dict[str, Any]
    params: frozenset[str]
    needs_y: bool
    doc: str
    aliases: tuple[str, ...] = ...

METRICS: dict[str, MetricInfo]
PARAM_CHECKS: dict[str, Callable[[Metric], None]]
_CONT_EXTRA: dict[str, Any]
_NOM_EXTRA: dict[str, Any]

class FitState:
    plan: Plan
    train: Rows
    y: npt.NDArray[Any] | None
    unseen: list[dict[Any, int]] | None
    lock: Any
    def __init__(self, plan: Plan, train: Rows, y: npt.NDArray[Any] | None,
                 unseen: list[dict[Any, int]] | None = None) -> None: ...
    def crows(self) -> Any: ...

def balanced_accuracy(y_true: Any, y_pred: Any) -> float: ...
def get_metric(name: str, **params: Any) -> Metric: ...

class Metric:
    name: str
    params: dict[str, Any]
    schema_: Schema
    plan_: Plan
    train_: Rows
    n_features_in_: int
    n_train_: int
    search_: dict[str, Any]
    feature_names_in_: ObjectArray
    kinds_: list[str]
    weights_: Float64Array
    classes_: npt.NDArray[Any]
    delta_: dict[str, float]
    vdm_probabilities_: dict[str, Float64Array]
    value_tables_: dict[str, Float64Array]
    def __init__(self, name: str = "heom", **params: Any) -> None: ...
    @property
    def info(self) -> MetricInfo: ...
    def get_params(self, deep: bool = True) -> dict[str, Any]: ...
    def effective_params(self) -> dict[str, Any]: ...
    def set_params(self, **params: Any) -> Metric: ...
    def check_params(self) -> tuple[Any, ...]: ...
    def fit(self, X: Table, y: Any = None, sample_weight: Any = None, *,
            progress: Progress = None) -> Metric: ...
    def fit_summary(self, X: Table, y: Any, W: Any) -> Metric: ...
    def check_fitted(self) -> None: ...
    def without_training_rows(self) -> Metric: ...
    def encode(self, X: Table, unseen: list[dict[Any, int]] | None = None,
               what: str = "X") -> Rows: ...
    def pairwise(self, X: Table, Y: Table | None = None, *, out: Float64Array | None = None,
                 n_jobs: int | None = None, reduced: bool = False,
                 progress: Any = None,
                 device: str = "cpu") -> Float64Array: ...
    @overload
    def kneighbors(self, Q: Table | None = None, k: int = 5, *, exclude_self: bool = False,
                   return_distance: Literal[True] = True,
                   n_jobs: int | None = None,
                   progress: Any = None,
                   device: str = "cpu") -> tuple[Float64Array, IntpArray]: ...
    @overload
    def kneighbors(self, Q: Table | None = None, k: int = 5, *, exclude_self: bool = False,
                   return_distance: Literal[False],
                   n_jobs: int | None = None, progress: Any = None,
                   device: str = "cpu") -> IntpArray: ...
    @overload
    def radius_neighbors(self, Q: Table | None = None, r: float = 1.0, *,
                         exclude_self: bool = False, return_distance: Literal[True] = True,
                         n_jobs: int | None = None,
                         progress: Any = None,
                         device: str = "cpu") -> tuple[ObjectArray, ObjectArray]: ...
    @overload
    def radius_neighbors(self, Q: Table | None = None, r: float = 1.0, *,
                         exclude_self: bool = False, return_distance: Literal[False],
                         n_jobs: int | None = None, progress: Any = None,
                         device: str = "cpu") -> ObjectArray: ...
    def value_distances(self, attribute: str | int) -> Any: ...
    def explain(self, x: Any, y: Any) -> Explanation: ...

@dataclass
class Explanation:
    columns: list[str]
    terms: Float64Array
    skipped: npt.NDArray[np.bool_]
    reduced: float
    distance: float
    p: float
    def to_dict(self) -> dict[str, float]: ...
    def to_frame(self) -> Any: ...
