"""The walk counts the regular files it leaves alone, being no photo, video or sidecar
(ADR 0057): what a crawl's summary calls "other files". Hidden and housekeeping names,
and whatever is below them, are not even counted; links and folders are not files."""

from __future__ import annotations

import os
from pathlib import Path

from safelight.library.files.originals import StorageRoot
from safelight.library.walk.walker import Walker
from safelight.testing.walking import take_files


def make(root: Path, relative: str, data: bytes = b"x") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def walk_all(root: Path) -> tuple[Walker, list[str]]:
    walker = Walker(StorageRoot(root))
    paths: list[str] = []
    while not walker.done:
        walker.step(max_folders=1, max_files=2)  # many steps: the count adds up
        paths += [f.path for f in take_files(walker)]
    return walker, paths


def test_the_files_that_are_no_photo_video_or_sidecar_are_counted(tmp_path: Path) -> None:
    root = tmp_path / "library"
    for photo in ("a.jpg", "trip/b.heic", "trip/c.mp4"):
        make(root, photo)
    make(root, "trip/b.xmp")  # a sidecar: paired, not "other"
    others = ("notes.txt", "trip/itinerary.pdf", "trip/deep/er/Thumbs.db", "archive.zip", "README")
    for other in others:
        make(root, other)
    # Hidden and housekeeping names, and what is below them: not counted.
    for ignored in (".DS_Store", "trip/._b.heic", "@eaDir/a.jpg/SYNOFILE_THUMB_M.jpg",
                    ".thumbnails/x.txt"):  # fmt: skip
        make(root, ignored)
    os.symlink(root / "notes.txt", root / "link-to-notes.txt")  # a link is not a file

    walker, paths = walk_all(root)

    assert sorted(paths) == ["a.jpg", "trip/b.heic", "trip/c.mp4"]
    assert walker.other_files == len(others) == 5
    assert walker.errors == []


def test_a_library_of_photos_only_has_no_other_files(tmp_path: Path) -> None:
    make(tmp_path / "library", "a.jpg")
    walker, _ = walk_all(tmp_path / "library")
    assert walker.other_files == 0
