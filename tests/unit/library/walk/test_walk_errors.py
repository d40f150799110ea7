"""What the walk reports of a name it cannot take, and that it goes on with the rest of
the folder: an entry whose type or stat the system cannot give (the error, with the
system's reason), a photo gone since the listing (nothing), a file name that is not
UTF-8 (the error, its bytes escaped). The system's errors are forced by stand-in entries
(``StandIn``) listed with a folder's real ones."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

import pytest

from safelight.library.files.originals import StorageRoot
from safelight.library.media.sidecars import SidecarFile
from safelight.library.walk.walker import FileError, WalkedFile, Walker
from safelight.testing.walking import take_files

NOT_UTF8 = os.fsdecode(b"caf\xe9")  # Latin-1 "café": an undecodable byte, escaped


@dataclass
class StandIn:
    """An ``os.DirEntry`` whose answers a test chooses: each check returns its value or
    raises it; ``stat`` without a value is an error of the test (never asked)."""

    name: str
    file: bool | OSError = False
    folder: bool | OSError = False
    link: bool | OSError = False
    st: os.stat_result | OSError | None = None
    stats: int = 0
    """How many times it was stat'ed."""

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return _answer(self.file)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return _answer(self.folder)

    def is_symlink(self) -> bool:
        return _answer(self.link)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        self.stats += 1
        assert self.st is not None, f"{self.name!r} was stat'ed"
        return _answer(self.st)


T = TypeVar("T")


def _answer(value: T | OSError) -> T:
    if isinstance(value, OSError):
        raise value
    return value


def _photos(root: Path) -> list[WalkedFile]:
    """``trip/`` with two photos, one with its sidecar: the files the walk must give out
    of it, with their stat and their sidecar's."""
    (root / "trip").mkdir()
    for name in ("a.jpg", "b.jpg", "b.xmp"):
        (root / "trip" / name).write_bytes(name.encode())
    a, b, b_xmp = (os.stat(root / "trip" / name) for name in ("a.jpg", "b.jpg", "b.xmp"))
    sidecar = SidecarFile("trip/b.xmp", b_xmp.st_size, b_xmp.st_mtime_ns)
    return [
        WalkedFile("trip/a.jpg", a.st_size, a.st_mtime_ns, "image"),
        WalkedFile("trip/b.jpg", b.st_size, b.st_mtime_ns, "image", sidecar=sidecar),
    ]


def _list_with(
    root: Path, relative: str, stand_ins: Sequence[StandIn]
) -> tuple[Walker, list[WalkedFile]]:
    """The walk's take of ``relative``'s listing with ``stand_ins`` ahead of its real
    entries, these in name order (so an entry given up on must not end the folder): the
    walker, with its errors, and the files it gives out."""
    with StorageRoot(root) as storage, os.scandir(root / relative) as listing:
        walker = Walker(storage)
        real = sorted(listing, key=lambda entry: entry.name)
        found = [cast("os.DirEntry[str]", stand_in) for stand_in in stand_ins] + real
        walker._list_entries(relative, found)
        # Gives out what the listing put on the stack and lists no folder: the root
        # below it, which a fresh walk starts with, stays unlisted.
        walker.step(max_folders=0)
        return walker, take_files(walker)


@pytest.mark.parametrize(
    ("stand_in", "error"),
    [
        (
            lambda: StandIn(NOT_UTF8 + ".jpg", file=OSError(errno.EIO, "I/O")),
            FileError("trip/caf\\xe9.jpg", "I/O error while reading the file"),
        ),
        (
            lambda: StandIn(NOT_UTF8 + ".mov", folder=PermissionError(errno.EACCES, "no")),
            FileError("trip/caf\\xe9.mov", "permission denied"),
        ),
        (
            lambda: StandIn(NOT_UTF8, link=OSError(errno.ESTALE, "Stale file handle")),
            FileError("trip/caf\\xe9", "cannot read the file: stale file handle"),
        ),
    ],
    ids=["is_file", "is_dir", "is_symlink"],
)
def test_an_entry_whose_type_cannot_be_told_is_reported_and_the_folder_goes_on(
    tmp_path: Path, stand_in: Callable[[], StandIn], error: FileError
) -> None:
    """Reported at its path as it can be stored (the bytes of a name that is not UTF-8
    escaped), with the system's reason; the folder's other entries are taken."""
    entry = stand_in()
    photos = _photos(tmp_path)
    walker, files = _list_with(tmp_path, "trip", [entry])
    assert walker.errors == [error]
    assert files == photos
    assert entry.stats == 0 and walker.skipped == [] and walker.links == []


def test_a_photo_that_cannot_be_statted_is_reported_and_not_given_out(tmp_path: Path) -> None:
    photos = _photos(tmp_path)
    denied = StandIn("0.jpg", file=True, st=PermissionError(errno.EACCES, "denied"))
    broken = StandIn("ä.jpg", file=True, st=OSError(errno.EIO, "I/O"))
    walker, files = _list_with(tmp_path, "trip", [denied, broken])
    assert walker.errors == [
        FileError("trip/0.jpg", "permission denied"),
        FileError("trip/ä.jpg", "I/O error while reading the file"),
    ]
    assert files == photos


def test_a_photo_gone_since_the_listing_is_not_given_out_and_not_an_error(
    tmp_path: Path,
) -> None:
    photos = _photos(tmp_path)
    gone = StandIn("0.jpg", file=True, st=FileNotFoundError(errno.ENOENT, "gone"))
    walker, files = _list_with(tmp_path, "trip", [gone])
    assert walker.errors == [] and gone.stats == 1
    assert files == photos


def test_a_file_name_that_is_not_utf8_is_reported_escaped_and_the_folder_goes_on(
    tmp_path: Path,
) -> None:
    """A photo's name only: a sidecar's or any other file's that is not UTF-8 is as
    silent as that file would be with a UTF-8 name. The names sort before the folder's
    others, so they are taken first."""
    photos = _photos(tmp_path)
    bad = "0" + NOT_UTF8
    for name in (bad + ".jpg", bad + ".xmp", bad + ".txt"):
        (tmp_path / "trip" / name).write_bytes(b"x")
    walker, files = _list_with(tmp_path, "trip", [])
    assert walker.errors == [
        FileError(
            "trip/0caf\\xe9.jpg",
            "file name is not valid UTF-8; skipped (rename it to include it)",
        )
    ]
    assert files == photos


def test_only_a_photo_video_or_sidecar_with_a_utf8_name_costs_a_stat(tmp_path: Path) -> None:
    """Each other file costs the walk its name and its type from the listing, no system
    call: a sidecar whose name is not UTF-8 could pair with no photo (a photo's name
    that is not UTF-8 is an error, never given out)."""
    photos = _photos(tmp_path)
    others = [StandIn("notes.txt", file=True), StandIn(NOT_UTF8 + ".xmp", file=True)]
    walker, files = _list_with(tmp_path, "trip", others)
    assert [stand_in.stats for stand_in in others] == [0, 0]
    assert walker.errors == []
    assert files == photos
