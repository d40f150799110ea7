"""Finding orphan proxy files: files of the proxy layout that no proxy row names.

A crawl writes a proxy file before it inserts the row that names it, so a file without
a row may be one that is about to be named. The age floor protects it: only files
older than an hour are orphans. Age counts from the later of the file's mtime and
ctime, because a rename into place (which sets ctime) keeps the mtime of the temporary
file: a proxy whose temporary file was written long ago and renamed just now is young.

Only safelight's own names are candidates (``layout.parse_proxy_name``,
``layout.is_staging_name``, ``layout.is_layout_folder``). Anything else under the proxy
root (a file someone copied there, a link, a folder of another program, originals of a
misconfigured library) is listed as foreign, never descended into, and left alone.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from safelight.library.proxystore.layout import (
    PROXY_ROOT_MARKER,
    is_layout_folder,
    is_staging_name,
    parse_proxy_name,
)

ORPHAN_AGE_SECONDS = 3600.0
"""How old an unnamed file (or an empty folder) must be before the sweep deletes it."""


@dataclass(frozen=True, slots=True)
class SweepScan:
    old_files: list[str] = field(default_factory=list)
    """Files of the layout older than the floor, relative to the proxy root (posix)."""
    folders: list[str] = field(default_factory=list)
    """Every folder of the layout under the root, deepest first, relative to the root."""
    files_seen: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    foreign: list[tuple[str, str]] = field(default_factory=list)
    """Entries that are not safelight's (a folder ends with ``/``), with why: left alone."""


def age_seconds(st: os.stat_result, now_timestamp: float) -> float:
    return now_timestamp - max(st.st_mtime, st.st_ctime)


def is_young(st: os.stat_result, now_timestamp: float) -> bool:
    """Whether an entry is too young to be an orphan (``proxytree``'s ``keep``)."""
    return age_seconds(st, now_timestamp) <= ORPHAN_AGE_SECONDS


def scan_proxy_root(root: Path, now_timestamp: float) -> SweepScan:
    """List the proxy root (no symlink followed), iteratively; blocking: run in a thread."""
    scan = SweepScan()
    seen = 0
    stack = [""]
    folders: list[str] = []
    while stack:
        relative = stack.pop()
        try:
            with os.scandir(root / relative) as entries:
                listed = list(entries)
        except OSError as error:
            scan.unreadable.append((relative or ".", error.strerror or type(error).__name__))
            continue
        for entry in listed:
            child = f"{relative}/{entry.name}" if relative else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished since the listing
            if stat.S_ISLNK(st.st_mode):
                scan.foreign.append((child, "symbolic link: not followed"))
            elif stat.S_ISDIR(st.st_mode):
                if is_layout_folder(child):
                    stack.append(child)
                    folders.append(child)
                else:
                    scan.foreign.append((child + "/", "not a folder safelight makes"))
            elif not stat.S_ISREG(st.st_mode):
                scan.foreign.append((child, "not a regular file"))
            elif parse_proxy_name(child) is not None or is_staging_name(child):
                seen += 1
                if not is_young(st, now_timestamp):
                    scan.old_files.append(child)
            elif child != PROXY_ROOT_MARKER:
                scan.foreign.append((child, "not a file safelight makes"))
    # Deepest first, so a folder emptied of empty folders is removed in the same pass.
    folders.sort(key=lambda f: f.count("/"), reverse=True)
    return SweepScan(
        old_files=scan.old_files,
        folders=folders,
        files_seen=seen,
        unreadable=scan.unreadable,
        foreign=sorted(scan.foreign),
    )
