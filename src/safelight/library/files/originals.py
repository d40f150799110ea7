"""Originals opened once, beneath their storage root, through no symbolic link.

A crawl opens each original exactly once and reads everything from that descriptor:
the hash, the metadata, the decoded pixels, ffprobe's and ffmpeg's input. Whoever can
write a library folder can swap a file, or a folder above it, for a symbolic link at any
moment; a second lookup by name would then read whatever the link points at (a file
only root may read, say) into world-readable proxies. With one descriptor there is no
second lookup: every later reader gets the same open file, whatever happens to the name.

Invariants:

- The storage root is resolved once (it may be a mount path below links, which is the
  administrator's choice) and opened as a folder descriptor, ``StorageRoot``.
- Below the root, no component of a path is ever a symbolic link: ``openat2`` with
  ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` where the kernel has it (Linux 5.6+), else
  ``openat`` one component at a time from the root's descriptor, ``O_NOFOLLOW`` at every
  level (``O_DIRECTORY`` for folders, ``O_NONBLOCK`` for the file, so a FIFO cannot
  block). A link anywhere is ``SymbolicLinkRefused``, a per-file error with its reason.
- The file must be a regular file (``fstat`` on the descriptor).
- Another process reads the same open file through ``OriginalRef``: it opens
  ``/proc/<pid>/fd/<n>``. That is a "magic link" of procfs: the kernel hands out the
  file the descriptor refers to (its inode, even if renamed or unlinked since), not the
  result of a path lookup, so no folder or name swapped meanwhile can redirect it. The
  opener then checks device and inode against the ones the crawl recorded, so a
  descriptor closed and reused for another file is refused rather than read. (A
  descriptor passed over a Unix socket would do the same, at the price of a channel to
  every decode process; the spawn pool has none, and procfs is always there on Linux.)
  ffprobe and ffmpeg get the descriptor itself (``pass_fds``) and read ``/dev/fd/<n>``,
  which is the same magic link.
"""

from __future__ import annotations

import ctypes
import errno
import io
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from safelight.library.files.confinement import describe_os_error, open_original
from safelight.library.files.errors import FileVanished, MediaError, PathOutsideRoot, UnreadableFile

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY

# <linux/openat2.h>; the syscall number is the same on every architecture (added after
# the numbering was unified).
_SYS_OPENAT2 = 437
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08


class SymbolicLinkRefused(UnreadableFile):
    """A component of the path below the storage root is a symbolic link."""


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


class _Openat2:
    """``openat2`` through ``syscall(2)``, or None once the kernel said it has none."""

    def __init__(self) -> None:
        self.available = sys.platform.startswith("linux")
        self._libc: ctypes.CDLL | None = None

    def __call__(self, dir_fd: int, relative: str, flags: int) -> int | None:
        """The descriptor; None if openat2 is not available (use the component walk).
        Raises ``OSError`` as ``openat`` would."""
        if not self.available:
            return None
        if self._libc is None:
            self._libc = ctypes.CDLL(None, use_errno=True)
        how = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS)
        fd = int(
            self._libc.syscall(
                _SYS_OPENAT2, dir_fd, os.fsencode(relative), ctypes.byref(how), ctypes.sizeof(how)
            )
        )
        if fd >= 0:
            return fd
        error = ctypes.get_errno()
        if error == errno.ENOSYS:
            self.available = False  # an older kernel: it will not appear later
            return None
        if error == errno.EPERM:
            return None  # a seccomp filter (some container runtimes) refusing the call
        raise OSError(error, os.strerror(error), relative)


openat2 = _Openat2()


def split_relative(relative: str) -> list[str]:
    """The components of a path below a root; refuse anything that could leave it."""
    if not relative or "\0" in relative or relative.startswith("/"):
        raise PathOutsideRoot(f"{relative!r} is not a path below the storage root")
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise PathOutsideRoot(f"{relative!r} is not a plain path below the storage root")
    return parts


class StorageRoot:
    """A storage root, resolved once and held open; opens what lies below it safely."""

    def __init__(self, root: Path) -> None:
        self.path = Path(os.path.realpath(root))
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def open(self, relative: str) -> Original:
        """Open the regular file at ``relative`` (``/``-separated) read-only.

        Raises ``SymbolicLinkRefused`` (a link at any level), ``FileVanished``,
        ``PathOutsideRoot`` (``..``, an absolute path) or ``UnreadableFile``.
        """
        fd = self._open(relative, _FILE_FLAGS, folder=False)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UnreadableFile("not a regular file")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return Original(fd, relative, st.st_dev, st.st_ino)

    def open_folder(self, relative: str) -> int:
        """A descriptor of the folder at ``relative`` ("" is the root: a duplicate)."""
        if not relative:
            return os.dup(self.fd)
        return self._open(relative, _FOLDER_FLAGS, folder=True)

    def stat(self, relative: str) -> os.stat_result:
        """What ``relative`` names now, reached through no link (opened and ``fstat``ed)."""
        with self.open(relative) as original:
            return os.fstat(original.fd)

    def _open(self, relative: str, flags: int, *, folder: bool) -> int:
        parts = split_relative(relative)
        try:
            fd = openat2(self.fd, relative, flags)
        except OSError as error:
            # ELOOP: a link on the way; ENOTDIR: a link where a folder was asked for
            # (O_DIRECTORY | O_NOFOLLOW). Walk again, to name the component.
            if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise _refusal(error, relative) from error
            fd = None
        if fd is not None:
            return fd
        return self._walk(parts, flags, folder=folder)

    def _walk(self, parts: list[str], flags: int, *, folder: bool) -> int:
        current = self.fd
        try:
            for depth, name in enumerate(parts):
                last = depth == len(parts) - 1
                try:
                    child = os.open(name, flags if last else _FOLDER_FLAGS, dir_fd=current)
                except OSError as error:
                    shown = "/".join(parts[: depth + 1])
                    if _is_link(current, name):
                        raise _link_refusal(shown, is_folder=folder or not last) from error
                    raise _refusal(error, shown) from error
                if current != self.fd:
                    os.close(current)
                current = child
            return current
        except BaseException:
            if current != self.fd:
                os.close(current)
            raise


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _link_refusal(shown: str, *, is_folder: bool) -> SymbolicLinkRefused:
    if is_folder:
        return SymbolicLinkRefused(f"folder {shown!r} is a symbolic link: not followed")
    return SymbolicLinkRefused("symbolic link: not followed")


def _refusal(error: OSError, shown: str) -> MediaError:
    if error.errno == errno.ENOENT:
        return FileVanished()
    if error.errno == errno.ELOOP:
        return SymbolicLinkRefused(f"a symbolic link in {shown!r}: not followed")
    if error.errno == errno.EXDEV:
        return PathOutsideRoot(f"{shown!r} leads outside the storage root")
    return UnreadableFile(describe_os_error(error))


@dataclass(frozen=True, slots=True)
class Original:
    """One open original: the only way its bytes are read. Close it when done."""

    fd: int
    relative: str
    """The path it was opened at, below the root."""
    device: int
    inode: int

    def ref(self) -> OriginalRef:
        """How another process (or thread) reopens this very file."""
        return OriginalRef(os.getpid(), self.fd, self.device, self.inode)

    @property
    def dev_fd(self) -> str:
        """The name a child given this descriptor (``pass_fds``) opens it by."""
        return f"/dev/fd/{self.fd}"

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class OriginalRef:
    """A picklable handle on an ``Original`` open in process ``pid`` (see the module)."""

    pid: int
    fd: int
    device: int
    inode: int

    def open(self) -> io.BufferedReader:
        """A new open file (its own offset) of the same inode, read-only.

        Raises ``UnreadableFile`` if the descriptor is gone or now names another file.
        """
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
        try:
            fd = os.open(f"/proc/{self.pid}/fd/{self.fd}", flags)
        except OSError as error:
            raise UnreadableFile(
                f"the opened original could not be read again: {describe_os_error(error)}"
            ) from error
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (self.device, self.inode) or not stat.S_ISREG(st.st_mode):
                raise UnreadableFile("the opened original was closed before it could be read")
            os.set_blocking(fd, True)
            return open(fd, "rb", closefd=True)
        except BaseException:
            os.close(fd)
            raise


def open_source(source: Path | OriginalRef) -> io.BufferedReader:
    """Open what a media function was given: a path (``confinement.open_original``, for callers
    outside a crawl) or a reference to an original the crawl holds open."""
    if isinstance(source, OriginalRef):
        return source.open()
    return open_original(source)
