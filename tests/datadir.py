"""Where the test suite finds the real datasets (CSV + schema JSON).

``$HDIST_DATA`` when set, else the ``shared/data`` folder beside the repository."""
import os
from pathlib import Path

#: the tests folder (its subfolders hold the tests of each layer) and the repository
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
_ROOT = ROOT


def data_dir() -> Path:
    for d in (os.environ.get("HDIST_DATA"), _ROOT.parent / "shared" / "data"):
        if d and Path(d).is_dir():
            return Path(d)
    raise FileNotFoundError("no data folder: set HDIST_DATA or put shared/data beside "
                            "the repository")


def __getattr__(name):
    """``DATA_DIR``, resolved when first read, so that modules importing this one load
    without the data folder (wheel jobs) as long as no test reads a dataset."""
    if name == "DATA_DIR":
        return data_dir()
    raise AttributeError(name)
