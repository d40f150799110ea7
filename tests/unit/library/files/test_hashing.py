"""The content hash: correct, streaming, and refusing files that change underneath."""

from __future__ import annotations

import os
from pathlib import Path
from uuid import uuid4

import pytest
import xxhash

from safelight.library.files.errors import (
    EmptyFile,
    FileChangedWhileHashing,
    FileVanished,
    MediaError,
    UnreadableFile,
)
from safelight.library.files.hashing import CHUNK_BYTES, hash_file
from safelight.library.proxystore.layout import proxy_dir


def test_hash_is_xxh3_64_of_all_bytes(tmp_path: Path) -> None:
    data = os.urandom(3 * CHUNK_BYTES + 12345)  # several chunks and a partial one
    path = tmp_path / "big.jpg"
    path.write_bytes(data)
    result = hash_file(path)
    assert result.content_hash == xxhash.xxh3_64(data).hexdigest()
    assert len(result.content_hash) == 16
    st = path.stat()
    assert (result.size, result.mtime_ns, result.inode) == (len(data), st.st_mtime_ns, st.st_ino)
    proxy_dir(tmp_path, uuid4(), result.content_hash)  # valid for the proxy layout


def test_hash_depends_on_every_byte_and_chunk_size_does_not_matter(tmp_path: Path) -> None:
    path = tmp_path / "a.jpg"
    data = bytearray(os.urandom(100_000))
    path.write_bytes(data)
    first = hash_file(path).content_hash
    assert hash_file(path, chunk_bytes=4096).content_hash == first
    data[-1] ^= 1
    path.write_bytes(data)
    assert hash_file(path).content_hash != first


def test_small_file(tmp_path: Path) -> None:
    path = tmp_path / "one.jpg"
    path.write_bytes(b"x")
    assert hash_file(path).content_hash == xxhash.xxh3_64(b"x").hexdigest()


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jpg"
    path.touch()
    with pytest.raises(EmptyFile) as caught:
        hash_file(path)
    assert isinstance(caught.value, MediaError)
    assert "empty" in caught.value.reason


def test_unreadable_things(tmp_path: Path) -> None:
    with pytest.raises(FileVanished):
        hash_file(tmp_path / "missing.jpg")
    folder = tmp_path / "folder.jpg"
    folder.mkdir()
    with pytest.raises(UnreadableFile, match="not a regular file"):
        hash_file(folder)
    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableFile, match="not a regular file"):
        hash_file(fifo)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied(tmp_path: Path) -> None:
    path = tmp_path / "private.jpg"
    path.write_bytes(b"x")
    path.chmod(0)
    with pytest.raises(UnreadableFile, match="permission denied"):
        hash_file(path)


def test_read_error_is_wrapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An I/O error in the middle of the read (a dying disk, a dropped NAS share)."""
    import safelight.library.files.hashing as hashing

    path = tmp_path / "a.jpg"
    path.write_bytes(os.urandom(10))
    from safelight.library.files.confinement import open_original as real_open

    class Failing:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def __enter__(self) -> Failing:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()  # type: ignore[attr-defined]

        def readinto(self, buffer: bytearray) -> int:
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(hashing, "open_original", lambda p: Failing(real_open(p)))
    with pytest.raises(UnreadableFile, match="I/O error"):
        hash_file(path)


def grow(path: Path) -> None:
    with path.open("ab") as f:
        f.write(b"more")


def rewrite_same_size(path: Path) -> None:
    data = path.read_bytes()
    with path.open("r+b") as f:
        f.write(bytes([data[0] ^ 0xFF]))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def replace_by_rename(path: Path) -> None:
    other = path.with_name("other.tmp")
    other.write_bytes(path.read_bytes())
    os.replace(other, path)


def delete(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize("change", [grow, rewrite_same_size, replace_by_rename, delete])
def test_change_while_hashing_is_detected(tmp_path: Path, change: object) -> None:
    path = tmp_path / "busy.jpg"
    path.write_bytes(os.urandom(3 * 4096))
    calls = 0

    def midway() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:  # after the first chunk was hashed
            change(path)  # type: ignore[operator]

    with pytest.raises(FileChangedWhileHashing):
        hash_file(path, ensure_alive=midway, chunk_bytes=4096)


def test_ensure_alive_is_called_per_chunk_and_its_error_propagates(tmp_path: Path) -> None:
    path = tmp_path / "a.jpg"
    path.write_bytes(os.urandom(10 * 4096))
    calls = 0

    class Lost(Exception):
        pass

    def ensure_alive() -> None:
        nonlocal calls
        calls += 1
        if calls == 5:
            raise Lost

    with pytest.raises(Lost):
        hash_file(path, ensure_alive=ensure_alive, chunk_bytes=4096)
    assert calls == 5
