"""``python -m streammetrics``: the ``streammetrics`` command."""

import sys

from .cli.commands import main

if __name__ == "__main__":  # (not on import: pytest's doctest collection imports it)
    sys.exit(main())
