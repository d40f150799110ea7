"""The exit codes, and the line a Ctrl-C ends with.

A leaf: it imports nothing, so that the entry point (``safelight.__main__``) can answer
a Ctrl-C that lands while the rest of safelight is still being imported.
"""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_WORK_FAILED = 1
EXIT_USAGE = 2
EXIT_DATABASE = 3
EXIT_INTERNAL = 70  # EX_SOFTWARE of sysexits.h: a bug in safelight
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C

ERROR_PREFIX = "safelight: error: "
"""How every error line of the CLI starts (``cli.failures``; a Ctrl-C's line here)."""
INTERRUPTED = "interrupted"
"""The error of a command stopped by Ctrl-C before it could say anything else."""


def interrupted() -> None:
    """End the process as a Ctrl-C ends a command: one line on stderr, exit 130."""
    try:
        sys.stderr.write(f"{ERROR_PREFIX}{INTERRUPTED}\n")
        sys.stderr.flush()
    finally:
        raise SystemExit(EXIT_INTERRUPTED)
