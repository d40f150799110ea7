"""Where backups of the catalogue are kept: ``<home>/backups/``, named by the UTC time
they were made, the newest N kept (ADR 0061).

Every backup is written under a temporary name beside its own (a dot file, ``.partial``)
and renamed into place once whole and on disk, so a backup that fails or is killed
leaves no file with a backup's name, and rotation counts only whole ones. The folder
is 0700 and every file 0600 whatever the read group (``SAFELIGHT_READ_GROUP``): a
backup holds the users' password hashes and token digests.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, TypeVar

from safelight.core.filemodes import (
    OWNER_FILE,
    OWNER_FOLDER,
    FileModes,
    make_folder,
    tighten_folder,
)
from safelight.db.backup import Connection, write_backup
from safelight.db.backupfile import Manifest

T = TypeVar("T")

FOLDER = "backups"
PREFIX = "safelight-backup-"
SUFFIX = ".zip"
PARTIAL = ".partial"
_NAME = re.compile(r"^safelight-backup-\d{8}T\d{6}Z\.zip$")
STALE_PARTIAL = timedelta(days=1)
"""A temporary file this old is one a killed backup left: the next rotation removes it
(a younger one may be a backup being written now, by another process)."""


def folder_of(home: Path) -> Path:
    return home.expanduser().resolve() / FOLDER


def name_at(now: datetime) -> str:
    """``safelight-backup-20261203T021500Z.zip``: sorts by time as text."""
    return f"{PREFIX}{now.astimezone(UTC):%Y%m%dT%H%M%SZ}{SUFFIX}"


def make_backups_folder(home: Path) -> Path:
    """The home's backups folder, made (and the home, if missing) or tightened to 0700."""
    home = home.expanduser().resolve()
    if not home.is_dir():
        make_folder(home, FileModes.of_process().home, None)
    folder = folder_of(home)
    if not make_folder(folder, OWNER_FOLDER, None):
        tighten_folder(folder, OWNER_FOLDER, None)
    return folder


def backups_in(folder: Path) -> list[Path]:
    """The whole backups in ``folder``, oldest first."""
    try:
        names = [entry.name for entry in os.scandir(folder) if entry.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return []
    return [folder / name for name in sorted(names) if _NAME.match(name)]


def rotate(folder: Path, keep: int, now: datetime) -> list[Path]:
    """Remove all but the newest ``keep`` backups, and what killed backups left; return
    the backups removed."""
    kept = backups_in(folder)
    removed = kept[:-keep] if keep > 0 else kept
    for path in removed:
        path.unlink(missing_ok=True)
    cutoff = (now - STALE_PARTIAL).timestamp()
    for entry in os.scandir(folder):
        if (
            entry.name.startswith(".")
            and entry.name.endswith(PARTIAL)
            and entry.is_file(follow_symlinks=False)
            and entry.stat(follow_symlinks=False).st_mtime < cutoff
        ):
            os.unlink(entry.path)
    return removed


async def write_atomically(path: Path, write: Callable[[IO[bytes]], Awaitable[T]]) -> T:
    """Run ``write`` on a new private file beside ``path`` and rename it to ``path`` once
    it returned and the file is on disk; on any failure remove it, and raise."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}{PARTIAL}")
    out = await asyncio.to_thread(_create_private, temporary)
    try:
        with out:
            result = await write(out)
            out.flush()
            await asyncio.to_thread(os.fsync, out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    await asyncio.to_thread(_sync_folder, path.parent)
    return result


def _create_private(path: Path) -> IO[bytes]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, OWNER_FILE)
    try:
        os.fchmod(fd, OWNER_FILE)  # exactly, whatever the umask
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


async def back_up_into_home(
    conn: Connection, home: Path, keep: int, now: datetime
) -> tuple[Path, Manifest, list[Path]]:
    """A backup of the database of ``conn`` (autocommit) into the home's backups folder,
    then the rotation: the backup, its manifest and the backups removed."""
    folder = await asyncio.to_thread(make_backups_folder, home)
    path = folder / name_at(now)

    async def write(out: IO[bytes]) -> Manifest:
        return await write_backup(conn, out, now)

    manifest = await write_atomically(path, write)
    return path, manifest, await asyncio.to_thread(rotate, folder, keep, now)
