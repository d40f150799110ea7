"""Finding orphan proxy files: files under the proxy root that no proxy row names.

A crawl writes a proxy file before it inserts the row that names it, so a file without
a row may be one that is about to be named. The age floor protects it: only files
older than an hour are orphans. Age counts from the later of the file's mtime and
ctime, because a rename into place (which sets ctime) keeps the mtime of the temporary
file: a proxy whose temporary file was written long ago and renamed just now is young.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

ORPHAN_AGE_SECONDS = 3600.0
"""How old an unnamed file (or an empty folder) must be before the sweep deletes it."""


@dataclass(frozen=True, slots=True)
class SweepScan:
    old_files: list[str] = field(default_factory=list)
    """Regular files older than the floor, relative to the proxy root (posix)."""
    folders: list[str] = field(default_factory=list)
    """Every folder under the root, deepest first, relative to the root."""
    files_seen: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def age_seconds(st: os.stat_result, now_timestamp: float) -> float:
    return now_timestamp - max(st.st_mtime, st.st_ctime)


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
            if stat.S_ISDIR(st.st_mode):
                stack.append(child)
                folders.append(child)
            elif stat.S_ISREG(st.st_mode):
                seen += 1
                if age_seconds(st, now_timestamp) > ORPHAN_AGE_SECONDS:
                    scan.old_files.append(child)
    # Deepest first, so a folder emptied of empty folders is removed in the same pass.
    folders.sort(key=lambda f: f.count("/"), reverse=True)
    return SweepScan(
        old_files=scan.old_files, folders=folders, files_seen=seen, unreadable=scan.unreadable
    )


def is_old(path: Path, now_timestamp: float) -> bool:
    """Whether ``path`` (not followed) still exists and is older than the floor."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return age_seconds(st, now_timestamp) > ORPHAN_AGE_SECONDS
