"""One original read again by the scrub (ADR 0062): intact, changed under the same size
and time, edited, gone, or refused (a link is never followed); and an attempt told to
stop stops within a chunk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import xxhash

from safelight.library.files.originals import StorageRoot
from safelight.library.files.scrubbing import Found, Recorded, reread
from safelight.work.errors import AttemptStopped

DATA = bytes(range(256)) * 4096  # 1 MiB: more than one chunk


def alive() -> None:
    pass


def recorded(root: Path, relative: str, data: bytes) -> Recorded:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    st = path.stat()
    return Recorded(relative, xxhash.xxh3_64(data).hexdigest(), st.st_size, st.st_mtime_ns)


def test_an_intact_original_reads_as_its_recorded_hash(tmp_path: Path) -> None:
    known = recorded(tmp_path, "a/b.jpg", DATA + b"x")
    with StorageRoot(tmp_path) as storage:
        found = reread(storage, known, alive)
    assert (found.found, found.content_hash, found.bytes_read) == (
        Found.INTACT,
        known.content_hash,
        len(DATA) + 1,
    )


def test_a_flipped_byte_under_the_same_time_is_a_change(tmp_path: Path) -> None:
    known = recorded(tmp_path, "b.jpg", DATA)
    path = tmp_path / "b.jpg"
    flipped = bytearray(DATA)
    flipped[1000] ^= 0x80
    path.write_bytes(bytes(flipped))
    os.utime(path, ns=(known.modified_ns, known.modified_ns))
    with StorageRoot(tmp_path) as storage:
        found = reread(storage, known, alive)
    assert found.found is Found.CHANGED
    assert found.content_hash == xxhash.xxh3_64(bytes(flipped)).hexdigest()


def test_an_edited_or_gone_file_is_the_crawls(tmp_path: Path) -> None:
    edited = recorded(tmp_path, "edited.jpg", DATA)
    os.utime(tmp_path / "edited.jpg", ns=(edited.modified_ns, edited.modified_ns + 1))
    gone = recorded(tmp_path, "gone.jpg", DATA)
    (tmp_path / "gone.jpg").unlink()
    with StorageRoot(tmp_path) as storage:
        assert reread(storage, edited, alive).found is Found.EDITED
        assert reread(storage, gone, alive).found is Found.MISSING


def test_a_link_in_place_of_an_original_or_a_folder_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "library"
    recorded(tmp_path, "secret.jpg", DATA)  # what the links point at, outside the root
    known = recorded(root, "a/b.jpg", DATA)
    (root / "a" / "b.jpg").unlink()
    (root / "a" / "b.jpg").symlink_to(tmp_path / "secret.jpg")
    (root / "c").symlink_to(root / "a")
    via_folder = Recorded("c/b.jpg", known.content_hash, known.size_bytes, known.modified_ns)
    with StorageRoot(root) as storage:
        for one in (known, via_folder):
            found = reread(storage, one, alive)
            assert (found.found, found.bytes_read) == (Found.UNREADABLE, 0)
            assert found.reason is not None and "symbolic link" in found.reason


def test_an_attempt_told_to_stop_stops_within_a_chunk(tmp_path: Path) -> None:
    known = recorded(tmp_path, "big.jpg", DATA * 3)
    calls: list[int] = []

    def stopping() -> None:
        calls.append(1)
        if len(calls) > 1:
            raise AttemptStopped("stopped")

    with StorageRoot(tmp_path) as storage, pytest.raises(AttemptStopped):
        reread(storage, known, stopping)
    assert len(calls) == 2
