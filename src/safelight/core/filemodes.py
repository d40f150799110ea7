"""Who may read what safelight writes: the modes of its folders and files (ADR 0043).

The home, the proxy root and everything safelight writes in them are its user's alone:
folders 0700, files 0600. With a read group named (``SAFELIGHT_READ_GROUP``: the group a
separate web server or reverse proxy runs as), the group may read them too: folders
0750 and files 0640, all of that group; below the proxy root its folders also carry the
setgid bit, so that what is made in them takes the group without being told.

As root, the embedded PostgreSQL runs as a user of its own (ADR 0037), which must pass
through the home to reach its data folder: there the home keeps the execute bit for
others (0701, 0751 with a group), which lets nobody list it, and every entry in it is
closed by its own mode (``ondisk``, docs/security.md "Who can see what").

Nothing here follows a link: a mode or a group is changed through the entry's own name,
with ``follow_symlinks=False`` (``fchmodat``/``fchownat`` with ``AT_SYMLINK_NOFOLLOW``),
and a link is left as it is.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

OWNER_FOLDER = 0o700
OWNER_FILE = 0o600
GROUP_FOLDER = 0o750
GROUP_FILE = 0o640
PASS_THROUGH = 0o001
"""The execute bit for others alone: enter a folder by a name already known, never list it."""


@dataclass(frozen=True, slots=True)
class FileModes:
    """The modes of safelight's folders and files for one process's settings."""

    gid: int | None = None
    """The read group's id; None: nobody but safelight's user reads its files."""
    as_root: bool = False
    """safelight runs as root, so the embedded server's own user passes through the home."""

    @classmethod
    def of_process(cls, gid: int | None = None) -> FileModes:
        return cls(gid=gid, as_root=os.geteuid() == 0)

    @property
    def home(self) -> int:
        return (GROUP_FOLDER if self.gid is not None else OWNER_FOLDER) | (
            PASS_THROUGH if self.as_root else 0
        )

    @property
    def folder(self) -> int:
        """A folder of the proxy root (the root included): with a group, setgid."""
        return GROUP_FOLDER | stat.S_ISGID if self.gid is not None else OWNER_FOLDER

    @property
    def file(self) -> int:
        return GROUP_FILE if self.gid is not None else OWNER_FILE


@dataclass
class Tightened:
    """What a tightening changed, and what it could not change, for its one line."""

    changed: Counter[tuple[str, int, int]] = field(default_factory=Counter)
    """(``"folder"`` or ``"file"``, mode before, mode after): how many."""
    regrouped: int = 0
    refused: int = 0
    """Entries of another user (or on a read-only file system): left as they were."""

    def __bool__(self) -> bool:
        return bool(self.changed) or self.regrouped > 0 or self.refused > 0

    def add(self, other: Tightened) -> None:
        self.changed.update(other.changed)
        self.regrouped += other.regrouped
        self.refused += other.refused

    def describe(self) -> str:
        """``3 folders from 0755 to 0700, 12 files from 0644 to 0600``."""
        parts = []
        for kind in ("folder", "file"):
            by_target: dict[int, Counter[int]] = {}
            for (what, before, after), count in self.changed.items():
                if what == kind:
                    by_target.setdefault(after, Counter())[before] += count
            for after, befores in sorted(by_target.items()):
                count = sum(befores.values())
                noun = kind if count == 1 else f"{kind}s"
                origins = ", ".join(f"{mode:04o}" for mode in sorted(befores))
                parts.append(f"{count:,} {noun} from {origins} to {after:04o}")
        if self.regrouped:
            parts.append(f"{self.regrouped:,} given to the read group")
        if self.refused:
            parts.append(f"{self.refused:,} left as they were (not this user's to change)")
        return ", ".join(parts) if parts else "nothing"


def apply(
    name: str | Path,
    st: os.stat_result,
    mode: int,
    gid: int | None,
    tightened: Tightened,
    *,
    dir_fd: int | None = None,
) -> None:
    """Give the entry ``name`` (in ``dir_fd``, whose ``lstat`` is ``st``) exactly
    ``mode`` and, when ``gid`` is given, that group; never through a link (a link is
    left alone). An entry this user may not change is counted as refused."""
    if stat.S_ISLNK(st.st_mode):
        return
    kind = "folder" if stat.S_ISDIR(st.st_mode) else "file"
    try:
        if gid is not None and st.st_gid != gid:
            # Before the mode: a change of group may clear the setgid bit.
            os.chown(name, -1, gid, dir_fd=dir_fd, follow_symlinks=False)
            tightened.regrouped += 1
        before = stat.S_IMODE(st.st_mode)
        if before != mode or (gid is not None and st.st_gid != gid):
            _chmod(name, mode, dir_fd)
            if before != mode:
                tightened.changed[(kind, before, mode)] += 1
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EROFS, errno.ELOOP):
            raise
        tightened.refused += 1


def _chmod(name: str | Path, mode: int, dir_fd: int | None) -> None:
    """``lchmod``: the mode of ``name`` itself. Linux has no lchmod; glibc's
    ``fchmodat(AT_SYMLINK_NOFOLLOW)`` changes anything but a link (for a link Python
    raises NotImplementedError, which means the name became one since it was looked at:
    left alone). Where even that is missing, the entry is opened without following a
    link and changed through its descriptor."""
    try:
        os.chmod(name, mode, dir_fd=dir_fd, follow_symlinks=False)
        return
    except NotImplementedError:
        pass
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return  # a link now: not ours to change
        raise
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def make_folder(path: Path, mode: int, gid: int | None) -> bool:
    """Make ``path`` (its missing parents as the process's defaults make them) with
    exactly ``mode`` and, when given, group ``gid``; False if it existed (then it is left
    as it is). A ``PermissionError`` from the group means this user is not in it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, OWNER_FOLDER)  # never more open than that before its mode is set
    except FileExistsError:
        return False
    if gid is not None:
        os.chown(path, -1, gid, follow_symlinks=False)
    _chmod(path, mode, None)  # exactly: the umask takes bits off mkdir's mode
    return True


def tighten_folder(path: Path, mode: int, gid: int | None) -> Tightened:
    """Give the folder ``path`` itself (not what is in it) ``mode`` and group ``gid``."""
    tightened = Tightened()
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        apply(path, st, mode, gid, tightened)
    return tightened
