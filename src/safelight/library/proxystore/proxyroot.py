"""A proxy root belongs to one database.

The proxy sweep deletes every file of the proxy layout that no row of *its* database
names. Two databases sharing one proxy root (the embedded one of ``safelight demo``,
later a server, with one home) would each sweep the other's proxies away. So the first
Worker to use a proxy root writes a marker at its top naming its database (the
cluster's system identifier and the database's name); a Worker of another database
refuses to write there or sweep it, with an error naming both.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from safelight.library.catalogue.database import DatabaseIdentity
from safelight.library.proxystore.layout import PROXY_ROOT_MARKER
from safelight.library.proxystore.publishing import proxy_file_mode


class ProxyRootTaken(ValueError):
    """The proxy root's marker names another database (or cannot be read)."""


def claim_proxy_root(root: Path, identity: DatabaseIdentity) -> None:
    """Mark ``root`` as ``identity``'s on first use; raise :class:`ProxyRootTaken` if it
    is another database's. Blocking (a few file operations): run it in a thread."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)  # the guard made it with its modes
    marker = root / PROXY_ROOT_MARKER
    body = json.dumps(
        {"system_identifier": identity.system_identifier, "database": identity.database}
    )
    found = _read(marker)
    if found is None:
        # Written beside it and linked into place: a second Worker starting at the same
        # moment either sees no marker or a whole one, and link() fails if it lost.
        fd, temp = tempfile.mkstemp(dir=root, prefix=f"{PROXY_ROOT_MARKER}.", suffix=".tmp")
        try:
            with open(fd, "w", encoding="utf-8") as out:
                os.fchmod(out.fileno(), proxy_file_mode(root))
                out.write(body + "\n")
                out.flush()
                os.fsync(out.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(temp, marker)
        finally:
            os.unlink(temp)
        found = _read(marker)
    if found != identity:
        theirs = (
            "no database safelight can name" if found in (None, _UNREADABLE) else (found.describe())
        )
        raise ProxyRootTaken(
            f"the proxy root {root} belongs to {theirs} (see {marker}), but this is "
            f"{identity.describe()}: give each database a proxy root of its own "
            "(SAFELIGHT_PROXY_ROOT, or another SAFELIGHT_HOME)"
        )


_UNREADABLE = DatabaseIdentity("?", "?")


def read_marker(root: Path) -> DatabaseIdentity | None:
    """The database ``root``'s marker names; None if it has none, and an identity no
    database has if it cannot be read."""
    return _read(root / PROXY_ROOT_MARKER)


def _read(marker: Path) -> DatabaseIdentity | None:
    """The marker's identity; None if there is none. A marker that is not ours to read
    (a link, garbage) is an identity nobody has."""
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return _UNREADABLE
    with open(fd, encoding="utf-8") as source:
        try:
            data = json.loads(source.read(4096))
            return DatabaseIdentity(str(data["system_identifier"]), str(data["database"]))
        except (ValueError, KeyError, TypeError):
            return _UNREADABLE
