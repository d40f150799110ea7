"""Deleting (and reading) under the proxy root: through directory descriptors, never
through a link.

Every delete opens the proxy root (which an operator may reach through links of their
own: it is resolved once, in the settings), then each folder below it with
``O_NOFOLLOW | O_DIRECTORY`` relative to the folder above, and finally unlinks or
removes the last name relative to its folder's descriptor (``unlinkat``). So:

- a folder swapped for a symbolic link half-way fails its open (``ELOOP``/``ENOTDIR``)
  instead of sending the delete into whatever the link names;
- a last name that is a link, or anything but a regular file, is refused and left
  alone (``UnsafeProxyPath``); ``unlinkat`` itself never follows a link either, so a
  swap between the check and the unlink can at worst remove the link someone put in
  safelight's folder;
- callers pass only names of the layout (``layout.parse_proxy_name``,
  ``layout.is_staging_name``, ``layout.is_layout_folder``): this module trusts the name's
  shape and guards the way to it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from safelight.core.journal import side_effect

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeProxyPath(Exception):
    """A path under the proxy root that safelight will not delete through: a symbolic
    link on the way or at its end, or something that is not a file (or folder)."""

    def __init__(self, relative: str, reason: str) -> None:
        super().__init__(f"{relative}: {reason}")
        self.relative = relative
        self.reason = reason


Keep = Callable[[os.stat_result], bool]
"""Asked with the entry's own ``lstat`` right before it goes: True keeps it."""


@contextmanager
def _folder(root: Path, parts: Sequence[str], relative: str) -> Iterator[int]:
    """A descriptor of ``root/parts...``, each level opened without following a link.
    ``FileNotFoundError`` when a level is missing."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, part in enumerate(parts):
            try:
                below = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = "/".join(parts[: depth + 1])
                    raise UnsafeProxyPath(
                        relative, f"{where} is a symbolic link or not a folder: not followed"
                    ) from None
                raise
            os.close(fd)
            fd = below
        yield fd
    finally:
        os.close(fd)


def _split(relative: str) -> list[str]:
    parts = relative.split("/")
    if not relative or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a plain relative path: {relative!r}")
    return parts


def inspect(root: Path, relative: str) -> os.stat_result | None:
    """The ``lstat`` of ``root/relative``, reached without following a link; None if it
    is missing. Raises ``UnsafeProxyPath`` for a link at any level."""
    parts = _split(relative)
    try:
        with _folder(root, parts[:-1], relative) as fd:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeProxyPath(relative, "is a symbolic link: not followed")
    return st


@contextmanager
def open_file(root: Path, relative: str) -> Iterator[IO[bytes]]:
    """The regular file ``root/relative``, open for reading, reached without following a
    link at any level; ``UnsafeProxyPath`` for a link or anything but a regular file,
    ``FileNotFoundError`` when it is missing. (``O_NONBLOCK``: a FIFO put there does not
    hang the open; it is refused like any other non-file.)"""
    parts = _split(relative)
    with _folder(root, parts[:-1], relative) as folder:
        try:
            fd = os.open(
                parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder
            )
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise UnsafeProxyPath(relative, "is a symbolic link: not followed") from None
            raise
    with open(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeProxyPath(relative, "is not a regular file: not read")
        yield file


def link_file(root: Path, relative: str, new_name: str, ensure_alive: Callable[[], None]) -> None:
    """Give the regular file ``root/relative`` a second name, ``new_name``, in its own
    folder (a journalled ``write``, checked by ``ensure_alive``): ``linkat`` relative to
    the folder's descriptor, which never follows a link. Had the old name been swapped for
    something else between the check and the link, the new name would not be the file
    checked: it is then unlinked again and ``UnsafeProxyPath`` raised. ``OSError`` from
    ``link`` itself (``EPERM`` where the file system has no hard links) propagates."""
    parts = _split(relative)
    if "/" in new_name or new_name in ("", ".", ".."):
        raise ValueError(f"not a file name: {new_name!r}")
    with _folder(root, parts[:-1], relative) as fd:
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeProxyPath(relative, "is a symbolic link or not a file: not linked")
        target = root / "/".join([*parts[:-1], new_name])
        with side_effect("write", target, ensure_alive):
            os.link(parts[-1], new_name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        linked = os.stat(new_name, dir_fd=fd, follow_symlinks=False)
        if (linked.st_dev, linked.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(
            linked.st_mode
        ):
            with side_effect("delete", target, ensure_alive):
                os.unlink(new_name, dir_fd=fd)
            raise UnsafeProxyPath(relative, "changed while it was linked: not linked")


def delete_file(
    root: Path, relative: str, ensure_alive: Callable[[], None], *, keep: Keep | None = None
) -> bool:
    """Unlink the regular file ``root/relative`` (a journalled side effect, checked by
    ``ensure_alive``); False if it was missing or ``keep`` kept it.

    Raises ``UnsafeProxyPath`` for a link at any level or a name that is not a file.
    """
    return _remove(root, relative, ensure_alive, keep, _FILE)


def remove_folder(
    root: Path, relative: str, ensure_alive: Callable[[], None], *, keep: Keep | None = None
) -> bool:
    """Remove the empty folder ``root/relative`` (journalled); False if it is missing,
    not empty, or ``keep`` kept it. Raises ``UnsafeProxyPath`` for a link."""
    try:
        return _remove(root, relative, ensure_alive, keep, _FOLDER)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return False
        raise


@dataclass(frozen=True, slots=True)
class _Kind:
    action: str
    """The journal's name of the effect."""
    is_kind: Callable[[int], bool]
    refusal: str
    remove: Callable[..., None]


_FILE = _Kind("delete", stat.S_ISREG, "is not a regular file: not deleted", os.unlink)
_FOLDER = _Kind("rmdir", stat.S_ISDIR, "is not a folder: not removed", os.rmdir)


def _remove(
    root: Path, relative: str, ensure_alive: Callable[[], None], keep: Keep | None, kind: _Kind
) -> bool:
    parts = _split(relative)
    try:
        with _folder(root, parts[:-1], relative) as fd:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise UnsafeProxyPath(relative, "is a symbolic link: not deleted")
            if not kind.is_kind(st.st_mode):
                raise UnsafeProxyPath(relative, kind.refusal)
            if keep is not None and keep(st):
                return False
            with side_effect(kind.action, root / relative, ensure_alive):
                kind.remove(parts[-1], dir_fd=fd)
    except FileNotFoundError:
        return False
    return True


def remove_empty_folders(root: Path, relative: str, ensure_alive: Callable[[], None]) -> list[str]:
    """Remove ``relative`` and then each folder above it (up to, not including, the root)
    while each is empty; returns those removed, deepest first."""
    removed: list[str] = []
    parts = _split(relative)
    while parts:
        current = "/".join(parts)
        parts = parts[:-1]
        if inspect(root, current) is None:
            continue  # gone already: its parent may be empty now all the same
        if not remove_folder(root, current, ensure_alive):
            break
        removed.append(current)
    return removed
