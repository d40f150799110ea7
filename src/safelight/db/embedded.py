"""The embedded PostgreSQL a fresh machine falls back to, from the ``pgserver`` package.

It lives in ``<home>/pgdata`` and persists across runs. It listens only on a Unix
socket, so nothing on the network can reach it. ``pgserver`` keeps a list of the
processes using one data folder and stops the server when the last one exits.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

_log = logging.getLogger(__name__)


class EmbeddedDatabaseError(RuntimeError):
    pass


def start_embedded(
    home: Path, *, stop_on_exit: bool = True
) -> tuple[str, Any]:  # pragma: no mutate block
    """Start (or join) the embedded server under ``home`` and return its URL and handle.

    Keep the handle alive for as long as the database is in use: when the last
    handle in any process is dropped at exit, the server stops (``stop_on_exit``).
    """
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); harmless.
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:  # pragma: no cover - pgserver is a hard dependency
        raise EmbeddedDatabaseError(
            "no database URL was given and the embedded PostgreSQL (pgserver) is not installed"
        ) from exc
    pgdata = home / "pgdata"
    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(  # type: ignore[attr-defined]
                pgdata, cleanup_mode="stop" if stop_on_exit else None
            )
    except Exception as exc:
        log = pgdata / "log"
        raise EmbeddedDatabaseError(
            f"could not start the embedded PostgreSQL in {pgdata} ({exc}); see {log}"
        ) from exc
    url = server.get_uri()
    _log.info("using the embedded PostgreSQL in %s", pgdata)
    return url, server
