"""Reading originals confined under their storage root.

Invariants:

- A crawl opens every original once, beneath its root and through no symlink at any
  level (``originals.StorageRoot``), and reads it only from that descriptor. Callers
  that have only a path use ``confined()`` (resolved, symlinks followed, inside its
  storage root) and ``open_original()`` (read-only, no symlink as the last component,
  never blocking on a FIFO). Nothing in this layer opens an original for writing.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path

from safelight.library.files.errors import FileVanished, PathOutsideRoot, UnreadableFile


def confined(root: Path, relative: str | os.PathLike[str]) -> Path:
    """Resolve ``relative`` under ``root`` and return it, or raise ``PathOutsideRoot``.

    Symlinks are followed, in ``root`` and in ``relative``, before the check: a link that
    points outside the root is outside, whatever its own location. ``..`` is resolved the
    same way. An absolute ``relative`` is accepted only if it resolves inside the root
    (so paths from a walk of the root can be passed as they are). The root itself counts
    as inside. The path need not exist.

    The result is fully resolved; open it with ``open_original``, whose ``O_NOFOLLOW``
    refuses a last component swapped for a symlink after this check. (A directory swapped
    in between remains a window; only someone who can write the folder can use it.)
    """
    text = os.fspath(relative)
    if "\0" in text:
        raise PathOutsideRoot("path contains a NUL byte")
    real_root = Path(os.path.realpath(root))
    candidate = Path(os.path.realpath(real_root / text))
    if not candidate.is_relative_to(real_root):
        raise PathOutsideRoot(f"{text!r} resolves outside the storage root")
    return candidate


def open_original(path: Path) -> io.BufferedReader:
    """Open an original read-only; refuse symlinks, FIFOs, devices and directories.

    ``O_NONBLOCK`` keeps a FIFO planted in a library from blocking the worker forever;
    it is cleared once ``fstat`` shows a regular file (it means nothing for those).
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as error:
        raise FileVanished() from error
    except OSError as error:
        raise UnreadableFile(describe_os_error(error)) from error
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnreadableFile("not a regular file")
        os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def describe_os_error(error: OSError) -> str:
    """A short reason for an ``OSError`` on one file, without the path."""
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if error.errno == errno.ELOOP:
        return "is a symbolic link (pass the path confined() resolved)"
    if error.errno == errno.EIO:
        return "I/O error while reading the file"
    if error.errno == errno.ENOTDIR:
        return "a parent folder is not a folder"
    text = error.strerror or type(error).__name__
    return f"cannot read the file: {text.lower()}"
