"""``python -m hdist``: the command line (see :mod:`hdist.cli`)."""
from .cli import main

raise SystemExit(main())
