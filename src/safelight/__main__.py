"""``python -m safelight``, and the ``safelight`` console script.

Light on purpose: it imports nothing of safelight's before it can answer a Ctrl-C, so
that one landing while the rest loads (half a second of imports) ends as a Ctrl-C
anywhere else does: one line and exit 130, never a traceback. The commands turn their
own Ctrl-C into the same line (``cli.failures``); this catches the edges.
"""

from __future__ import annotations

from collections.abc import Sequence

from safelight.cli.exits import interrupted


def main(argv: Sequence[str] | None = None) -> None:
    try:
        from safelight.cli.main import main as run_cli

        run_cli(argv)
    except KeyboardInterrupt:
        interrupted()


if __name__ == "__main__":
    main()
