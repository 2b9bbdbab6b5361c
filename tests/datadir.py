"""Where the test suite finds the real datasets (CSV + schema JSON).

``$HDIST_DATA`` when set, else the ``shared/data`` folder beside the repository.  Set to
the empty string (``HDIST_DATA=``), it means "no data folder": the fallback beside the
repository is not looked at, as in a clone or an installed wheel that has none.

A test that reads the folder is marked ``@pytest.mark.needs_data``: without a folder it
is skipped (conftest.py), and an unmarked test that reads it fails with
:class:`NoDataFolder`, whose message says so."""
import os
from pathlib import Path

#: the tests folder (its subfolders hold the tests of each layer) and the repository
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
_ROOT = ROOT


class NoDataFolder(FileNotFoundError):
    """The real datasets are not here (no ``$HDIST_DATA``, no ``shared/data`` beside the
    repository)."""


def find_data_dir():
    """The data folder, or None when there is none (``HDIST_DATA`` empty or naming no
    folder; unset and no ``shared/data`` beside the repository)."""
    env = os.environ.get("HDIST_DATA")
    if env is not None:
        return Path(env) if env and Path(env).is_dir() else None
    beside = _ROOT.parent / "shared" / "data"
    return beside if beside.is_dir() else None


def missing_reason():
    """Why there is no data folder (the reason a ``needs_data`` test is skipped for), or
    None when there is one."""
    if find_data_dir() is not None:
        return None
    env = os.environ.get("HDIST_DATA")
    if env:
        return "HDIST_DATA=%s is not a folder" % env
    return ("needs the real datasets: set HDIST_DATA to their folder (CSV files with "
            "schema JSON; the project keeps them in shared/data beside the repository)")


def data_dir() -> Path:
    d = find_data_dir()
    if d is None:
        raise NoDataFolder("no data folder: %s; a test that reads it is marked "
                           "@pytest.mark.needs_data" % missing_reason())
    return d


def __getattr__(name):
    """``DATA_DIR``, resolved when first read, so that modules importing this one load
    without the data folder (wheel jobs) as long as no test reads a dataset."""
    if name == "DATA_DIR":
        return data_dir()
    raise AttributeError(name)
