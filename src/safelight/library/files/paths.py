"""Where files may be read and written: confinement under a root, proxy locations, and
atomic publication of proxy files.

Invariants:

- A crawl opens every original once, beneath its root and through no symlink at any
  level (``originals.StorageRoot``), and reads it only from that descriptor. Callers
  that have only a path use ``confined()`` (resolved, symlinks followed, inside its
  storage root) and ``open_original()`` (read-only, no symlink as the last component,
  never blocking on a FIFO). Nothing in this layer opens an original for writing.
- A proxy file is either absent or complete: it is written under a temporary name in its
  own folder, fsynced, and renamed into place only after ``ensure_alive()`` confirmed the
  attempt still owns its item. A reader never sees half a file, and an attempt that lost
  its item publishes nothing.
- The proxy folder of an asset derives only from its storage config id and content hash
  (``<proxy root>/<config id>/<hash[0:2]>/<hash>/``), so every actor (crawl, purge, sweep)
  computes the same folder without a lookup.
- A proxy file's name carries the attempt that wrote it (``<type>.<item id>-<attempt>.<ext>``,
  ``AttemptTag``), so no two attempts ever write the same name: a stale attempt's late
  rename can only add a file no row names (an orphan, for the sweep), never replace one
  that a newer attempt wrote. Only the row says which file an asset's proxy is; readers
  follow it and never compute a name. Names of the legacy form ``<type>.<ext>`` (written
  before ADR 0016) are still valid, and are never written again.
- Below the proxy root, what is made takes its modes from the folder it is made in
  (ADR 0043): a new folder that folder's mode (its setgid bit too, so the read group
  follows), a proxy file its read bits; never more than 0750 and 0640. The root's own
  mode, set from the settings where it is made and tightened at start
  (``proxymodes``), is the one fact.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from uuid import UUID

from safelight.core.journal import side_effect
from safelight.library.files.errors import FileVanished, PathOutsideRoot, UnreadableFile

CONTENT_HASH_HEX_LENGTH = 16
"""Length of a content hash in hex digits (XXH3-64, see ``hashing``)."""

INHERITED_FOLDER_BITS = stat.S_ISGID | 0o750
"""What a folder under the proxy root takes of the folder it is made in: the owner's
bits, the group's read and execute, the setgid bit; never anything for others."""
PROXY_FILE_BITS = 0o640
"""What a proxy takes of its folder's mode: read and write for the owner, read for the
group (when the folder lets the group in); never anything for others."""

_CONTENT_HASH = re.compile(rf"[0-9a-f]{{{CONTENT_HASH_HEX_LENGTH}}}")
_PROXY_TYPE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_EXTENSION = re.compile(r"[a-z0-9]{1,8}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HASH_PREFIX = re.compile(r"[0-9a-f]{2}")
# ``<item id>-<attempt>`` in canonical decimal (no sign, no leading zero): the one
# spelling ``AttemptTag.text`` writes, so every name has one parse.
_ATTEMPT_TAG = re.compile(r"(0|[1-9][0-9]{0,18})-(0|[1-9][0-9]{0,9})")
# tempfile's names: a prefix, eight of [a-z0-9_], a suffix (write_atomically, and
# make_video_temp_folder, the only two that make names in the staging folder).
_STAGED_FILE = re.compile(r"\.[a-z0-9_][a-z0-9_.-]{0,63}\.[a-z0-9_]{8}\.tmp")
_VIDEO_TEMP_PREFIX = ".video-"
_TEMP_SUFFIX = ".tmp"
_VIDEO_TEMP_FOLDER = re.compile(
    rf"{re.escape(_VIDEO_TEMP_PREFIX)}[a-z0-9_]{{8}}{re.escape(_TEMP_SUFFIX)}"
)

Writer = Callable[[BinaryIO], object]
"""Writes a proxy's bytes into the (temporary) file it is given; its result is ignored."""


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


def proxy_dir(proxy_root: Path, config_id: UUID, content_hash: str) -> Path:
    """``<proxy root>/<config id>/<hash[0:2]>/<hash>/``: the folder of one asset's proxies.

    The two-character level keeps folders small (at most 256 per config). Both parts are
    validated, so the result cannot leave ``proxy_root`` whatever the caller passes.
    """
    if not isinstance(config_id, UUID):
        raise TypeError(f"config_id must be a UUID, not {type(config_id).__name__}")
    if not _CONTENT_HASH.fullmatch(content_hash):
        raise ValueError(
            f"content hash must be {CONTENT_HASH_HEX_LENGTH} lowercase hex digits, "
            f"got {content_hash!r}"
        )
    return proxy_root / proxy_folder(config_id, content_hash)


def proxy_folder(config_id: UUID, content_hash: str) -> str:
    """``<config id>/<hash[0:2]>/<hash>``: an asset's folder, relative to the proxy root."""
    return f"{config_id}/{content_hash[:2]}/{content_hash}"


@dataclass(frozen=True, slots=True)
class AttemptTag:
    """The attempt that writes a proxy (its work item's id and attempt number), as it
    appears in the file's name. Unique per attempt: an item's attempts are numbered, and
    item ids are never reused."""

    item_id: int
    attempt: int

    def __post_init__(self) -> None:
        if not _ATTEMPT_TAG.fullmatch(self.text):
            raise ValueError(f"not an attempt of a work item: {self.item_id!r}, {self.attempt!r}")

    @property
    def text(self) -> str:
        return f"{self.item_id}-{self.attempt}"


@dataclass(frozen=True, slots=True)
class ProxyName:
    """A path relative to the proxy root that is one of safelight's own proxy files:
    ``<config id>/<hash[0:2]>/<hash>/<type>.<item id>-<attempt>.<ext>``, or the legacy
    ``.../<type>.<ext>``, each part in its canonical form."""

    config_id: UUID
    content_hash: str
    file_name: str
    written_by: AttemptTag | None = None
    """None for a legacy name (written before names carried their attempt)."""

    @property
    def folder(self) -> str:
        return proxy_folder(self.config_id, self.content_hash)

    @property
    def relative(self) -> str:
        return f"{self.folder}/{self.file_name}"


def parse_proxy_name(relative: str) -> ProxyName | None:
    """The proxy file ``relative`` names, or None if it is not a name of the layout.

    Only names ``proxy_path`` builds pass, and the legacy ``<type>.<ext>`` names it built
    before they carried their attempt: no ``..``, no extra or missing level, the config
    id as ``str(UUID)`` writes it, the hash prefix matching the hash. Deletes
    under the proxy root go only to names that pass (or to ``is_staging_name``), so a
    file of someone else's that ended up there, an original included, is never one.
    """
    parts = relative.split("/")
    if len(parts) != 4:
        return None
    config, prefix, content_hash, file_name = parts
    if not _UUID.fullmatch(config) or not _CONTENT_HASH.fullmatch(content_hash):
        return None
    if prefix != content_hash[:2]:
        return None
    parsed = _parse_file_name(file_name)
    if parsed is None:
        return None
    written_by = parsed if isinstance(parsed, AttemptTag) else None
    return ProxyName(UUID(config), content_hash, file_name, written_by)


_LEGACY = "legacy"


def _parse_file_name(name: str) -> AttemptTag | str | None:
    """The attempt a proxy file's name carries, ``_LEGACY`` for ``<type>.<ext>``, or
    None if ``name`` is neither form."""
    parts = name.split(".")
    if len(parts) not in (2, 3):
        return None
    if not _PROXY_TYPE.fullmatch(parts[0]) or not _EXTENSION.fullmatch(parts[-1]):
        return None
    if len(parts) == 2:
        return _LEGACY
    tag = _ATTEMPT_TAG.fullmatch(parts[1])
    if tag is None:
        return None
    return AttemptTag(int(tag[1]), int(tag[2]))


def _proxy_file_name(name: str) -> bool:
    return _parse_file_name(name) is not None


def is_staging_name(relative: str) -> bool:
    """Whether ``relative`` is a temporary file of the staging folder: a staged proxy
    (``.staging/.<name>.<random>.tmp``) or a file ffmpeg wrote in a video's temporary
    folder (``.staging/.video-<random>.tmp/<name>``)."""
    parts = relative.split("/")
    if not parts or parts[0] != STAGING_FOLDER:
        return False
    if len(parts) == 2:
        return bool(_STAGED_FILE.fullmatch(parts[1]))
    if len(parts) == 3:
        return bool(_VIDEO_TEMP_FOLDER.fullmatch(parts[1])) and _proxy_file_name(parts[2])
    return False


def make_video_temp_folder(staging: Path) -> Path:
    """A new folder in ``staging`` (``<proxy root>/STAGING_FOLDER``) for what ffmpeg
    writes of one video: ``.video-<random>.tmp``, the name ``is_staging_name`` and
    ``is_layout_folder`` recognise, so the sweep deletes what a crash leaves in it."""
    make_folders(staging)
    return Path(tempfile.mkdtemp(dir=staging, prefix=_VIDEO_TEMP_PREFIX, suffix=_TEMP_SUFFIX))


def is_layout_folder(relative: str) -> bool:
    """Whether ``relative`` is a folder of the layout: a config's folder, a hash prefix
    folder, an asset's folder, the staging folder or a video's temporary folder."""
    parts = relative.split("/")
    if parts[0] == STAGING_FOLDER:
        return len(parts) == 1 or (len(parts) == 2 and bool(_VIDEO_TEMP_FOLDER.fullmatch(parts[1])))
    if not _UUID.fullmatch(parts[0]) or len(parts) > 3:
        return False
    if len(parts) >= 2 and not _HASH_PREFIX.fullmatch(parts[1]):
        return False
    return len(parts) < 3 or (bool(_CONTENT_HASH.fullmatch(parts[2])) and parts[2][:2] == parts[1])


def proxy_path(
    proxy_root: Path,
    config_id: UUID,
    content_hash: str,
    proxy_type: str,
    ext: str,
    written_by: AttemptTag,
) -> Path:
    """``<proxy dir>/<type>.<item id>-<attempt>.<ext>``, e.g. ``.../thumbnail.812-2.jpg``:
    where the attempt ``written_by`` publishes this proxy. Names are validated.

    For writers only: which file an asset's proxy is, its row says (a file written by
    another attempt, or a legacy name); a reader never computes it.
    """
    if not isinstance(written_by, AttemptTag):
        raise TypeError(f"written_by must be an AttemptTag, not {type(written_by).__name__}")
    if not _PROXY_TYPE.fullmatch(proxy_type):
        raise ValueError(f"proxy type must match {_PROXY_TYPE.pattern}, got {proxy_type!r}")
    if not _EXTENSION.fullmatch(ext):
        raise ValueError(f"extension must match {_EXTENSION.pattern}, got {ext!r}")
    return proxy_dir(proxy_root, config_id, content_hash) / (
        f"{proxy_type}.{written_by.text}.{ext}"
    )


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


PROXY_ROOT_MARKER = ".safelight-proxy-root.json"
"""At the top of the proxy root: which database the root belongs to (``proxyroot``)."""

STAGING_FOLDER = ".staging"
"""Under the proxy root, where proxies are written before they are published. It is no
storage config's folder, so writing there touches none of a config's files: only the
rename into place does, right after ``ensure_alive()``. Left-overs (a crash, a stopped
attempt) are orphans, which the proxy sweep deletes once they are an hour old."""


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
    fd, temp_name = tempfile.mkstemp(dir=staging, prefix=f".{path.name}.", suffix=_TEMP_SUFFIX)
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
        os.chmod(new, mode, follow_symlinks=False)  # exactly: the umask takes bits off mkdir's mode
