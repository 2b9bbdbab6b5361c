"""Type stubs of the public namespace of :mod:`hdist` (several names load lazily)."""
from typing import Any

from . import cli as cli
from . import cluster as cluster
from . import dask as dask
from . import datasets as datasets
from . import discretize as discretize
from . import embedding as embedding
from . import impute as impute
from . import neighbors as neighbors
from . import plot as plot
from . import prototypes as prototypes
from ._core.config import show_config as show_config
from ._search.index import NeighborsIndex as NeighborsIndex
from ._search.cuda import CudaUnavailableError as CudaUnavailableError
from ._core.information import entropy as entropy
from ._core.information import mutual_information as mutual_information
from ._version import __version__ as __version__
from .cluster import KMedoids as KMedoids
from .cluster import KModes as KModes
from .cluster import KPrototypes as KPrototypes
from .datasets import list_datasets as list_datasets
from .embedding import Embedding as Embedding
from .impute import KNNImputer as KNNImputer
from .datasets import load_dataset as load_dataset
from .metrics import METRICS as METRICS
from .metrics import Explanation as Explanation
from .metrics import Metric as Metric
from .metrics import get_metric as get_metric
from .neighbors import KNeighborsClassifier as KNeighborsClassifier
from .neighbors import KNeighborsRegressor as KNeighborsRegressor
from .neighbors import KNeighborsTransformer as KNeighborsTransformer
from .neighbors import NearestNeighbors as NearestNeighbors
from .prototypes import PrototypeClassifier as PrototypeClassifier

__all__: list[str]

def __getattr__(name: str) -> Any: ...
