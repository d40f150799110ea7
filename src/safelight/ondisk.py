"""At the start of a long-running command (``worker``, ``run``, ``serve``, ``demo``):
safelight's files private (ADR 0043).

A home or a proxy root made by an earlier release (0755 folders, 0644 proxies) is
tightened to the settings' modes (``core.filemodes``), with one warning line saying
what changed, from what to what; a home and a proxy root that are private already cost
an ``lstat`` each. The CLI calls this once per process, before the command's work.

What is tightened: the home itself (what safelight keeps in it is private by its own
mode: the data folder and socket folder are the server's 0700, the lock files 0600,
the demo library 0700 since it was first generated; the copy of the PostgreSQL
binaries stays 0755 for the server's user as root, and holds nothing else), and the
proxy root's layout (``library.proxystore.proxymodes``). Never a storage root: the demo library is
one, a folder of originals, and is left as it is.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from safelight.core.filemodes import Tightened, tighten_folder
from safelight.db.database import Database
from safelight.handlers.guards import tighten_proxy_root_if_ours, tightening_line
from safelight.settings import Settings

_log = logging.getLogger(__name__)


async def make_private(database: Database, settings: Settings) -> list[tuple[str, Path, Tightened]]:
    """Tighten the home and the proxy root; log one line if anything changed, and
    return what did."""
    modes = settings.file_modes()
    parts: list[tuple[str, Path, Tightened]] = []
    home = settings.home.expanduser().resolve()
    if home.is_dir():
        tightened = await asyncio.to_thread(tighten_folder, home, modes.home, modes.gid)
        if tightened:
            parts.append(("the home", home, tightened))
    tightened = await tighten_proxy_root_if_ours(database.pool, settings, modes)
    if tightened:
        parts.append(("the proxy root", settings.proxies, tightened))
    if parts:
        _log.warning("%s", tightening_line(parts))
    return parts
