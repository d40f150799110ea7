"""The proxy root made private, and one made by an earlier release tightened (ADR 0043).

Proxies show a family's photos: the proxy root is its user's alone (folders 0700,
files 0600), or also the read group's (0750 with the setgid bit, 0640, of that group).
A new root is made so (``make_proxy_root``), and what is made below it follows its
folder (``publishing.make_folders``, ``publishing.proxy_file_mode``). A root made before this
(0755 folders, 0644 proxies) is tightened once: ``tighten_proxy_root`` walks it only
when the root's own mode or group is not the one the settings give, and sets the root's
own last, so a walk cut short is done again at the next start and a tightened root
costs one ``lstat``.

The walk changes only what the proxy layout names (``layout.is_layout_folder``,
``parse_proxy_name``, ``is_staging_name``, the marker), as the sweep deletes only those:
anything else under the root (another program's files, a stray original) is left as it
is. It follows no link: folders are opened with ``O_NOFOLLOW`` relative to the one
above, and modes are set relative to the folder's descriptor (``core.filemodes.apply``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from safelight.core.filemodes import FileModes, Tightened, apply, make_folder
from safelight.library.proxystore.layout import (
    PROXY_ROOT_MARKER,
    is_layout_folder,
    is_staging_name,
    parse_proxy_name,
)

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def make_proxy_root(root: Path, modes: FileModes) -> bool:
    """Make ``root`` with its modes if it is missing; False if it existed."""
    return make_folder(root, modes.folder, modes.gid)


def is_settled(root: Path, modes: FileModes) -> bool:
    """The root's own mode and group are the settings' (it was made or tightened so)."""
    st = os.lstat(root)
    return stat.S_IMODE(st.st_mode) == modes.folder and (
        modes.gid is None or st.st_gid == modes.gid
    )


def tighten_proxy_root(root: Path, modes: FileModes) -> Tightened:
    """Give every folder and file of the layout under ``root`` the modes (and group) of
    ``modes``, the root last; nothing when the root is settled already. Blocking: run it
    in a thread."""
    tightened = Tightened()
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or is_settled(root, modes):
        return tightened
    fd = os.open(root, _FOLDER_FLAGS)
    try:
        _walk(fd, "", modes, tightened)
    finally:
        os.close(fd)
    apply(root, os.lstat(root), modes.folder, modes.gid, tightened)
    return tightened


def _walk(fd: int, relative: str, modes: FileModes, tightened: Tightened) -> None:
    with os.scandir(fd) as entries:
        listed = list(entries)
    for entry in listed:
        name = f"{relative}/{entry.name}" if relative else entry.name
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # deleted meanwhile (a sweep, a purge)
        if stat.S_ISDIR(st.st_mode) and is_layout_folder(name):
            apply(entry.name, st, modes.folder, modes.gid, tightened, dir_fd=fd)
            try:
                below = os.open(entry.name, _FOLDER_FLAGS, dir_fd=fd)
            except OSError:
                continue  # gone, swapped for a link, or not ours to enter: not walked
            try:
                _walk(below, name, modes, tightened)
            finally:
                os.close(below)
        elif stat.S_ISREG(st.st_mode) and _is_ours(name):
            apply(entry.name, st, modes.file, modes.gid, tightened, dir_fd=fd)


def _is_ours(relative: str) -> bool:
    return (
        relative == PROXY_ROOT_MARKER
        or parse_proxy_name(relative) is not None
        or is_staging_name(relative)
    )
