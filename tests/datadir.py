"""Where the test suite finds the real datasets (CSV + schema JSON).

``$HDIST_DATA`` when set, else the ``shared/data`` folder beside the repository."""
import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    for d in (os.environ.get("HDIST_DATA"), _ROOT.parent / "shared" / "data"):
        if d and Path(d).is_dir():
            return Path(d)
    raise FileNotFoundError("no data folder: set HDIST_DATA or put shared/data beside "
                            "the repository")


DATA_DIR = data_dir()
