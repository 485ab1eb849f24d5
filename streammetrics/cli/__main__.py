"""``python -m streammetrics.cli``: the ``streammetrics`` command."""

import sys

from .commands import main

sys.exit(main())
