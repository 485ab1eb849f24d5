"""``python -m streammetrics``: the ``streammetrics`` command."""

import sys

from .cli.commands import main

sys.exit(main())
