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
"""What a command stopped by Ctrl-C before it could say anything else says."""
INTERRUPTED_LINE = f"safelight: {INTERRUPTED}"
"""Its whole line: not an error (the user asked for it), so without ``error:``."""


EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 work failed (run: the crawl failed); 2 invalid input or settings "
    "(bad path, unknown kind or id, malformed JSON, a database migrated by a newer "
    "safelight); 3 database unavailable; 70 internal error (a bug, or a migration file "
    "changed after it was applied); 130 interrupted (run stopped by Ctrl-C or SIGTERM: running "
    "items were released and the next run continues; worker: a second signal). A worker "
    "stopped by one signal releases its items and exits 0."
)


def interrupted() -> None:
    """End the process as a Ctrl-C ends a command: one line on stderr, exit 130."""
    try:
        sys.stderr.write(f"{INTERRUPTED_LINE}\n")
        sys.stderr.flush()
    finally:
        raise SystemExit(EXIT_INTERRUPTED)
