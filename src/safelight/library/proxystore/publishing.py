"""Publishing proxy files under the proxy root: atomic writes, and the modes of what is
made there.

Invariants:

- A proxy file is either absent or complete: it is written under a temporary name in its
  own folder, fsynced, and renamed into place only after ``ensure_alive()`` confirmed the
  attempt still owns its item. A reader never sees half a file, and an attempt that lost
  its item publishes nothing.
- Below the proxy root, what is made takes its modes from the folder it is made in
  (ADR 0043): a new folder that folder's mode (its setgid bit too, so the read group
  follows), a proxy file its read bits; never more than 0750 and 0640. The root's own
  mode, set from the settings where it is made and tightened at start
  (``proxymodes``), is the one fact.
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from safelight.core.journal import side_effect
from safelight.library.proxystore.layout import TEMP_SUFFIX, VIDEO_TEMP_PREFIX

INHERITED_FOLDER_BITS = stat.S_ISGID | 0o750
"""What a folder under the proxy root takes of the folder it is made in: the owner's
bits, the group's read and execute, the setgid bit; never anything for others."""
PROXY_FILE_BITS = 0o640
"""What a proxy takes of its folder's mode: read and write for the owner, read for the
group (when the folder lets the group in); never anything for others."""

Writer = Callable[[BinaryIO], object]
"""Writes a proxy's bytes into the (temporary) file it is given; its result is ignored."""


def write_atomically(
    path: Path, data: bytes | Writer, ensure_alive: Callable[[], None], staging: Path
) -> None:
    """Publish ``data`` (bytes, or a writer filling a file) at ``path``, all or nothing.

    Writes ``.<name>.<random>.tmp`` in ``staging`` (``<proxy root>/STAGING_FOLDER``: the
    same file system, and no config's folder), fsyncs it, then publishes it with
    ``move_into_place``: an attempt that lost its item publishes nothing. On any
    failure, including ``ensure_alive()`` raising or cancellation, the temporary file is
    removed and the error propagates unchanged; an existing file at ``path`` is untouched.
    """
    # Checked before the first byte is written: a stopped attempt writes no temporary
    # file either.
    ensure_alive()
    make_folders(staging)
    fd, temp_name = tempfile.mkstemp(dir=staging, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    temp = Path(temp_name)
    try:
        with open(fd, "wb", closefd=True) as out:
            if isinstance(data, bytes | bytearray | memoryview):
                out.write(data)
            else:
                data(out)
            out.flush()
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    move_into_place(temp, path, ensure_alive)


def move_into_place(temp: Path, path: Path, ensure_alive: Callable[[], None]) -> None:
    """Publish a finished temporary file (a staged proxy, ffmpeg's output) at ``path``.

    fsyncs it; then creates the folder if missing and renames the file into place, each
    a journalled side effect that checks ``ensure_alive()`` right after its journal
    line; then fsyncs the folder so the rename survives a power cut. Nothing of the
    target's folder is touched before those checks. On failure ``temp`` is removed.
    ``temp`` must be on the same file system as ``path`` (``os.replace`` raises
    ``OSError(EXDEV)`` otherwise: a configuration error).
    """
    try:
        ensure_alive()
        fd = os.open(temp, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fchmod(fd, proxy_file_mode(path.parent))
            os.fsync(fd)
        finally:
            os.close(fd)
        if not path.parent.is_dir():
            # A step of its own, checked like the rename: creating a folder can wait on
            # the file system's journal, and a process stopped inside it must not go on
            # to rename on waking without a fresh check. The rename's own step is then
            # its one syscall.
            with side_effect("mkdir", path.parent, ensure_alive):
                make_folders(path.parent)
        with side_effect("write", path, ensure_alive):
            os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    # After the interval: syncing the folder changes no file.
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


MAKING_FOLDERS = threading.Lock()
"""Held while ``make_folders`` makes folders and sets their modes."""


def inherited_mode(folder: Path) -> int:
    """The mode a new folder at ``folder`` gets: that of the nearest folder above it that
    exists (``folder`` itself if it does), within ``INHERITED_FOLDER_BITS``."""
    for candidate in (folder, *folder.parents):
        try:
            return stat.S_IMODE(os.stat(candidate).st_mode) & INHERITED_FOLDER_BITS
        except FileNotFoundError:
            continue
    return 0o700


def proxy_file_mode(folder: Path) -> int:
    """The mode of a proxy published in ``folder``: its folder's read bits (0600, or
    0640 where the read group may enter)."""
    return inherited_mode(folder) & PROXY_FILE_BITS


def make_folders(folder: Path) -> None:
    """Make ``folder`` and its missing parents, each with the mode of the folder it is
    made in (``inherited_mode``); the setgid bit of a folder gives its group to what is
    made in it. A folder made meanwhile by another attempt is fine."""
    # One at a time in a process: a folder another thread has just made still has
    # mkdir's narrower mode until its chmod, and a folder made in it meanwhile would
    # inherit that. Across processes no lock is needed: a config's folders are made only
    # by the attempt that holds the config, and the shared ones inherit from the root.
    with MAKING_FOLDERS:
        missing = []
        for candidate in (folder, *folder.parents):
            if candidate.is_dir():
                break
            missing.append(candidate)
        for new in reversed(missing):
            mode = inherited_mode(new.parent)
            try:
                new.mkdir(mode & 0o700)  # never more open than that before its mode is set
            except FileExistsError:
                continue
            # Exactly: the umask takes bits off mkdir's mode.
            os.chmod(new, mode, follow_symlinks=False)


def make_video_temp_folder(staging: Path) -> Path:
    """A new folder in ``staging`` (``<proxy root>/STAGING_FOLDER``) for what ffmpeg
    writes of one video: ``.video-<random>.tmp``, the name ``layout.is_staging_name`` and
    ``layout.is_layout_folder`` recognise, so the sweep deletes what a crash leaves in it."""
    make_folders(staging)
    return Path(tempfile.mkdtemp(dir=staging, prefix=VIDEO_TEMP_PREFIX, suffix=TEMP_SUFFIX))
