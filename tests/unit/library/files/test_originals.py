"""Originals opened beneath their root through no symlink, and read again only as the
same open file; the walk that lists symlinks and safelight's own folders."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from safelight.db.embedded import DATA_FOLDER
from safelight.library.files import originals
from safelight.library.files.errors import FileVanished, PathOutsideRoot, UnreadableFile
from safelight.library.files.hashing import hash_descriptor
from safelight.library.files.originals import StorageRoot, SymbolicLinkRefused
from safelight.library.files.roots import OwnFolder, own_folders
from safelight.library.render.video import make_video_proxies
from safelight.library.walk.walker import Walker
from safelight.testing.specs import VIDEO_SPEC
from safelight.testing.walking import given_out


@pytest.fixture(params=["openat2", "per-component"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of opening: the kernel's openat2, and the walk that replaces it."""
    if request.param == "per-component":
        monkeypatch.setattr(originals.openat2, "available", False)
    else:
        assert originals.openat2.available, "this kernel has openat2 (Linux 5.6+)"
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    lib = tmp_path / "library"
    (lib / "2024" / "trip").mkdir(parents=True)
    (lib / "2024" / "trip" / "a.jpg").write_bytes(b"original a")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "a.jpg").write_bytes(b"the secret")
    return lib


@pytest.fixture
def storage(root: Path) -> Iterator[StorageRoot]:
    with StorageRoot(root) as opened:
        yield opened


def read_all(fd: int) -> bytes:
    return os.pread(fd, 1 << 16, 0)


def test_opens_a_regular_file_below_the_root(storage: StorageRoot, way: str) -> None:
    with storage.open("2024/trip/a.jpg") as original:
        assert read_all(original.fd) == b"original a"
        st = os.fstat(original.fd)
        assert (original.device, original.inode) == (st.st_dev, st.st_ino)
        assert original.relative == "2024/trip/a.jpg"


def test_a_symlinked_file_is_refused(root: Path, storage: StorageRoot, way: str) -> None:
    (root / "link.jpg").symlink_to(root / "2024" / "trip" / "a.jpg")  # even inside
    with pytest.raises(SymbolicLinkRefused, match="symbolic link: not followed"):
        storage.open("link.jpg")


def test_a_symlinked_folder_at_any_level_is_refused(
    root: Path, tmp_path: Path, storage: StorageRoot, way: str
) -> None:
    (root / "2024" / "elsewhere").symlink_to(tmp_path / "secret")
    with pytest.raises(SymbolicLinkRefused, match="folder '2024/elsewhere' is a symbolic link"):
        storage.open("2024/elsewhere/a.jpg")
    (root / "top").symlink_to(root / "2024")
    with pytest.raises(SymbolicLinkRefused, match="folder 'top' is a symbolic link"):
        storage.open("top/trip/a.jpg")


@pytest.mark.parametrize("bad", ["", "/etc/passwd", "../secret/a.jpg", "2024/../x", "a//b", "."])
def test_paths_that_could_leave_the_root_are_refused(storage: StorageRoot, bad: str) -> None:
    with pytest.raises(PathOutsideRoot):
        storage.open(bad)


def test_missing_fifo_and_folder(root: Path, storage: StorageRoot, way: str) -> None:
    with pytest.raises(FileVanished):
        storage.open("2024/nope.jpg")
    os.mkfifo(root / "pipe.jpg")
    with pytest.raises(UnreadableFile, match="not a regular file"):
        storage.open("pipe.jpg")  # and it did not block
    with pytest.raises(UnreadableFile, match="not a regular file"):
        storage.open("2024")


def test_the_root_itself_may_be_reached_through_a_link(root: Path, tmp_path: Path) -> None:
    mount = tmp_path / "mnt"
    mount.symlink_to(root)
    with StorageRoot(mount) as storage, storage.open("2024/trip/a.jpg") as original:
        assert storage.path == root.resolve()
        assert read_all(original.fd) == b"original a"


def test_a_reference_reads_the_opened_file_whatever_became_of_its_name(
    root: Path, tmp_path: Path, storage: StorageRoot, way: str
) -> None:
    with storage.open("2024/trip/a.jpg") as original:
        # The folder swapped for a link to the secret, and the name for another file.
        os.rename(root / "2024", root / "2024.old")
        (root / "2024").symlink_to(tmp_path / "secret", target_is_directory=True)
        ref = original.ref()
        with ref.open() as reader:
            assert reader.read() == b"original a"
        with ref.open() as first, ref.open() as second:  # each has its own offset
            assert first.read(3) == b"ori" and second.read() == b"original a"
        assert hash_descriptor(original.fd).size == len(b"original a")
        with pytest.raises(SymbolicLinkRefused):
            storage.stat("2024/trip/a.jpg")  # the final check's look at the name


def test_a_reference_to_a_closed_and_reused_descriptor_is_refused(
    root: Path, tmp_path: Path, storage: StorageRoot
) -> None:
    original = storage.open("2024/trip/a.jpg")
    ref = original.ref()
    original.close()
    other = os.open(tmp_path / "secret" / "a.jpg", os.O_RDONLY)
    try:
        if other != ref.fd:  # the number is usually reused at once; force it if not
            os.dup2(other, ref.fd)
        with pytest.raises(UnreadableFile, match="closed before it could be read"):
            ref.open()
    finally:
        os.close(other)
        if other != ref.fd:
            os.close(ref.fd)


def test_a_decode_process_reads_the_workers_open_file(
    root: Path, tmp_path: Path, storage: StorageRoot
) -> None:
    """Another process (as the spawn pool's) reopens the same file through /proc."""
    import multiprocessing

    with storage.open("2024/trip/a.jpg") as original:
        os.rename(root / "2024", root / "2024.old")
        (root / "2024").symlink_to(tmp_path / "secret", target_is_directory=True)
        context = multiprocessing.get_context("spawn")
        with context.Pool(1) as pool:
            assert pool.apply(_read_ref, (original.ref(),)) == b"original a"


def _read_ref(ref: originals.OriginalRef) -> bytes:
    with ref.open() as reader:
        return reader.read()


# --- the walk ------------------------------------------------------------------------


def walk(walker: Walker) -> Walker:
    while not walker.done:
        walker.step()
    return walker


def entries(walker: Walker) -> dict[str, str]:
    return {e.path: e.reason for e in walker.skipped}


def test_the_walk_lists_symlinks_with_their_reason(root: Path, tmp_path: Path) -> None:
    (root / "link.jpg").symlink_to(tmp_path / "secret" / "a.jpg")
    (root / "dangling.mov").symlink_to(tmp_path / "gone.mov")
    (root / "folder-link").symlink_to(tmp_path / "secret")
    (root / "notes.txt").symlink_to(tmp_path / "secret" / "a.jpg")  # no media: as any file
    with StorageRoot(root) as storage:
        walker = walk(Walker(storage))
    assert [f.path for f in given_out(walker)] == ["2024/trip/a.jpg"]
    assert entries(walker) == {
        "link.jpg": "symbolic link: not followed",
        "dangling.mov": "symbolic link: not followed",
        "folder-link/": "symbolic link: not followed",
    }
    assert walker.errors == []


def test_the_walk_never_enters_safelights_own_folders(root: Path, tmp_path: Path) -> None:
    proxies = root / "2024" / "proxies"
    (proxies / "c0").mkdir(parents=True)
    (proxies / "c0" / "thumbnail.jpg").write_bytes(b"a proxy")
    (root / "home" / DATA_FOLDER).mkdir(parents=True)
    # The home configured through a link (as a bind mount would be another name for it):
    # the folder in the library is recognised by device and inode, not by name.
    alias = tmp_path / "home-alias"
    alias.symlink_to(root / "home")
    own = own_folders(alias, proxies)
    with StorageRoot(root) as storage:
        walker = walk(Walker(storage, own))
    assert [f.path for f in given_out(walker)] == ["2024/trip/a.jpg"]
    assert entries(walker) == {
        "2024/proxies/": "safelight's own folder (proxy root): not crawled",
        "home/": "safelight's own folder (home): not crawled",
    }


def test_a_root_inside_the_proxy_root_is_not_walked(root: Path) -> None:
    own = own_folders(root.parent.parent / "elsewhere", root.parent)
    with StorageRoot(root) as storage:
        walker = walk(Walker(storage, own))
    assert given_out(walker) == []
    [entry] = walker.skipped
    assert "inside safelight's own folder (proxy root" in entry.reason


def test_a_root_inside_the_home_is_walked(root: Path) -> None:
    """As the demo library is: the home's proxy root and data folder are not below it."""
    own = [OwnFolder("home", root.parent, "SAFELIGHT_HOME", allowed_inside=(root,))]
    with StorageRoot(root) as storage:
        walker = walk(Walker(storage, own))
    assert [f.path for f in given_out(walker)] == ["2024/trip/a.jpg"] and walker.skipped == []


def test_links_inside_the_root_with_the_setting(root: Path, tmp_path: Path) -> None:
    (root / ".hidden").mkdir()
    (root / ".hidden" / "kept.jpg").write_bytes(b"hidden")
    (root / "kept.jpg").symlink_to(root / ".hidden" / "kept.jpg")
    (root / "alias.jpg").symlink_to("2024/trip/a.jpg")
    (root / "out.jpg").symlink_to(tmp_path / "secret" / "a.jpg")
    (root / "dir").symlink_to(root / "2024")
    with StorageRoot(root) as storage:
        walker = walk(Walker(storage, follow_links_inside_root=True))
        files = {f.path: f for f in given_out(walker)}
        assert set(files) == {"2024/trip/a.jpg", "kept.jpg"}
        assert files["kept.jpg"].opened_at == ".hidden/kept.jpg"
        with storage.open(files["kept.jpg"].opened_at) as original:
            assert read_all(original.fd) == b"hidden"
    assert walker.links == [("alias.jpg", "2024/trip/a.jpg")]
    assert entries(walker) == {
        "out.jpg": "symbolic link to outside the storage root: not followed",
        "dir/": "symbolic link: not followed",
    }


def test_a_folder_swapped_for_a_link_mid_walk_is_not_listed_through_it(
    root: Path, tmp_path: Path
) -> None:
    with StorageRoot(root) as storage:
        walker = Walker(storage)
        walker.step(max_folders=1)  # the root listed; "2024" waits on the stack
        os.rename(root / "2024", tmp_path / "moved")
        (root / "2024").symlink_to(tmp_path / "secret")
        walk(walker)
    assert given_out(walker) == []
    assert entries(walker) == {"2024/": "folder '2024' is a symbolic link: not followed"}


# --- ffprobe and ffmpeg on the descriptor ----------------------------------------------


@pytest.fixture
def clip(root: Path) -> Path:
    if shutil.which("ffmpeg") is None:
        pytest.skip("needs ffmpeg")
    path = root / "clip.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=s=96x64:d=3:r=10",
         "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path)],
        check=True,
    )  # fmt: skip
    return path


async def test_ffmpeg_reads_and_seeks_the_descriptor_as_it_does_the_path(
    root: Path, tmp_path: Path, clip: Path
) -> None:
    """/dev/fd/<n> is a fresh open of the same inode: the demuxer seeks to the index at
    the end (no faststart) and the poster seeks to 1 s, exactly as on the path."""
    by_path_dir = tmp_path / "by-path"
    by_fd_dir = tmp_path / "by-fd"
    by_path_dir.mkdir()
    by_fd_dir.mkdir()
    by_path = await make_video_proxies(clip, by_path_dir, VIDEO_SPEC, lambda: None)
    with StorageRoot(root) as storage, storage.open("clip.mp4") as original:
        os.lseek(original.fd, 12345, os.SEEK_SET)  # its offset is not what ffmpeg uses
        by_fd = await make_video_proxies(original, by_fd_dir, VIDEO_SPEC, lambda: None)
        assert os.lseek(original.fd, 0, os.SEEK_CUR) == 12345
    assert by_fd.metadata == by_path.metadata and by_fd.metadata.duration_seconds == 3.0
    assert by_fd.poster == by_path.poster
    assert by_fd.web_video.read_bytes() == by_path.web_video.read_bytes()
