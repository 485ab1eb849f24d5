"""The command line's own error: a failure reported as one line, exit status 1."""

from __future__ import annotations

__all__ = ["CLIError"]


class CLIError(Exception):
    """A failure to report as one line (no traceback) with exit status 1."""
