"""Confinement of originals, proxy locations and atomic publication."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from safelight.core.journal import Journal, attempt_scope
from safelight.library.files.confinement import confined, open_original
from safelight.library.files.errors import FileVanished, PathOutsideRoot, UnreadableFile
from safelight.library.proxystore import publishing
from safelight.library.proxystore.layout import (
    STAGING_FOLDER,
    AttemptTag,
    is_staging_name,
    proxy_dir,
    proxy_path,
)
from safelight.library.proxystore.publishing import make_folders, move_into_place, write_atomically
from safelight.testing.fakeclock import FakeClock
from safelight.work.errors import AttemptStopped

CONFIG = UUID("6f1c2d3e-4a5b-4c6d-8e7f-901234567890")
HASH = "0123456789abcdef"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    (root / "2024" / "trip").mkdir(parents=True)
    (root / "2024" / "trip" / "a.jpg").write_bytes(b"a")
    (tmp_path / "secret.txt").write_bytes(b"secret")
    return root


def alive() -> None:
    pass


class Stopped(Exception):
    pass


def stopped() -> None:
    raise Stopped


# --- confined ------------------------------------------------------------------------


def test_confined_resolves_inside_root(root: Path) -> None:
    assert confined(root, "2024/trip/a.jpg") == root.resolve() / "2024" / "trip" / "a.jpg"
    assert confined(root, Path("2024") / "trip" / ".." / "trip" / "a.jpg").name == "a.jpg"
    assert confined(root, "not/yet/there.jpg") == root.resolve() / "not" / "yet" / "there.jpg"
    assert confined(root, ".") == root.resolve()


@pytest.mark.parametrize("escape", ["..", "../secret.txt", "2024/../../secret.txt", "/etc/passwd"])
def test_confined_refuses_escapes(root: Path, escape: str) -> None:
    with pytest.raises(PathOutsideRoot, match="outside the storage root"):
        confined(root, escape)


def test_confined_accepts_absolute_path_inside_root(root: Path) -> None:
    inside = root / "2024" / "trip" / "a.jpg"
    assert confined(root, inside) == inside.resolve()


def test_confined_refuses_symlink_out_of_root(root: Path, tmp_path: Path) -> None:
    (root / "link.jpg").symlink_to(tmp_path / "secret.txt")
    (root / "linkdir").symlink_to(tmp_path)
    with pytest.raises(PathOutsideRoot):
        confined(root, "link.jpg")
    with pytest.raises(PathOutsideRoot):
        confined(root, "linkdir/secret.txt")


def test_confined_follows_symlink_that_stays_inside(root: Path) -> None:
    (root / "alias.jpg").symlink_to(root / "2024" / "trip" / "a.jpg")
    assert confined(root, "alias.jpg") == (root / "2024" / "trip" / "a.jpg").resolve()


def test_confined_works_when_root_itself_is_a_symlink(root: Path, tmp_path: Path) -> None:
    link_root = tmp_path / "mount"
    link_root.symlink_to(root)
    assert confined(link_root, "2024/trip/a.jpg") == (root / "2024/trip/a.jpg").resolve()
    with pytest.raises(PathOutsideRoot):
        confined(link_root, "../secret.txt")


def test_confined_refuses_nul_byte(root: Path) -> None:
    with pytest.raises(PathOutsideRoot, match="NUL"):
        confined(root, "a\0.jpg")


def test_confined_refuses_sibling_with_common_prefix(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "library2").mkdir()
    with pytest.raises(PathOutsideRoot):
        confined(tmp_path / "lib", "../library2/x.jpg")


# --- proxy locations ---------------------------------------------------------------------


def test_proxy_dir_layout(tmp_path: Path) -> None:
    assert proxy_dir(tmp_path, CONFIG, HASH) == tmp_path / str(CONFIG) / "01" / HASH
    assert proxy_path(tmp_path, CONFIG, HASH, "thumbnail", "jpg", AttemptTag(812, 2)) == (
        tmp_path / str(CONFIG) / "01" / HASH / "thumbnail.812-2.jpg"
    )


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "0123456789ABCDEF",
        "0123456789abcde",
        "0123456789abcdef0",
        "../../../etc/pa",
        "0123456789abcdeg",
    ],
)
def test_proxy_dir_validates_hash(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="content hash"):
        proxy_dir(tmp_path, CONFIG, bad)


def test_proxy_dir_wants_a_uuid(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        proxy_dir(tmp_path, str(CONFIG), HASH)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "ext"), [("../x", "jpg"), ("thumb", "j/g"), ("", "jpg"), ("a", "")]
)
def test_proxy_path_validates_names(tmp_path: Path, kind: str, ext: str) -> None:
    with pytest.raises(ValueError):
        proxy_path(tmp_path, CONFIG, HASH, kind, ext, AttemptTag(1, 1))


# --- open_original -----------------------------------------------------------------------


def test_open_original_is_read_only(root: Path) -> None:
    with open_original(root / "2024" / "trip" / "a.jpg") as f:
        assert f.read() == b"a"
        assert f.mode == "rb"
        with pytest.raises(OSError):
            f.write(b"x")


def test_open_original_refuses_what_is_not_a_regular_file(root: Path, tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile, match="not a regular file"):
        open_original(root / "2024")
    fifo = tmp_path / "fifo.jpg"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableFile, match="not a regular file"):
        open_original(fifo)  # must not block waiting for a writer
    (root / "link.jpg").symlink_to(root / "2024" / "trip" / "a.jpg")
    with pytest.raises(UnreadableFile, match="symbolic link"):
        open_original(root / "link.jpg")
    with pytest.raises(FileVanished):
        open_original(root / "gone.jpg")


# --- write_atomically / move_into_place ----------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_write_atomically_publishes_bytes_and_writer(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "thumbnail.jpg"
    write_atomically(target, b"hello", alive, tmp_path / ".staging")
    assert target.read_bytes() == b"hello"
    # Private as the folder it was made in (pytest's are 0700): ADR 0043.
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    write_atomically(target, lambda out: out.write(b"again"), alive, tmp_path / ".staging")
    assert target.read_bytes() == b"again"
    assert leftovers(target.parent) == []


def test_write_atomically_calls_ensure_alive_before_any_write_and_after_the_data_is_complete(
    tmp_path: Path,
) -> None:
    target = tmp_path / "preview.jpg"
    staging = tmp_path / ".staging"
    seen: list[list[bytes]] = []

    def check() -> None:
        temps = list(staging.glob(".preview.jpg.*"))
        seen.append([p.read_bytes() for p in temps])
        assert not target.exists()

    write_atomically(target, b"complete", check, staging)
    # Once before the temporary file exists (a stopped attempt leaves nothing behind),
    # then with the data complete: before its fsync, and right before the rename.
    assert seen == [[], [b"complete"], [b"complete"]]
    # Written in the staging folder, never beside the target.
    assert leftovers(tmp_path) == [".staging"] and leftovers(staging) == []


def test_write_atomically_publishes_nothing_when_not_alive(tmp_path: Path) -> None:
    target = tmp_path / "preview.jpg"
    target.write_bytes(b"old")
    with pytest.raises(Stopped):
        write_atomically(target, b"new", stopped, tmp_path / ".staging")
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_write_atomically_cleans_up_when_the_writer_fails(tmp_path: Path) -> None:
    target = tmp_path / "preview.jpg"

    def failing(out: object) -> None:
        raise RuntimeError("encoder failed")

    with pytest.raises(RuntimeError, match="encoder failed"):
        write_atomically(target, failing, alive, tmp_path / ".staging")
    assert not target.exists()
    assert leftovers(tmp_path / ".staging") == []


def test_a_writer_failing_after_its_staged_file_was_swept_raises_its_own_error(
    tmp_path: Path,
) -> None:
    """The clean-up of a staged file already gone (a sweep took it) adds no error."""
    staging = tmp_path / ".staging"

    def swept_then_failing(out: object) -> None:
        for staged in staging.iterdir():
            staged.unlink()
        raise RuntimeError("encoder failed")

    with pytest.raises(RuntimeError, match="encoder failed") as caught:
        write_atomically(tmp_path / "preview.jpg", swept_then_failing, alive, staging)
    assert caught.value.__context__ is None


def test_a_staged_file_has_a_name_the_sweep_knows_and_no_descriptor_stays_open(
    tmp_path: Path,
) -> None:
    """Left behind by a crash, the staged file is one the sweep deletes
    (``is_staging_name``); once published, nothing of it is held open."""
    root = tmp_path / "proxies"
    staged: list[str] = []

    def writer(out: Any) -> None:
        staged.extend(p.name for p in (root / STAGING_FOLDER).iterdir())
        out.write(b"x")

    before = len(os.listdir("/proc/self/fd"))
    write_atomically(root / "cfg" / "thumbnail.1-1.jpg", writer, alive, root / STAGING_FOLDER)
    assert len(os.listdir("/proc/self/fd")) == before
    [name] = staged
    assert is_staging_name(f"{STAGING_FOLDER}/{name}"), name


def test_move_into_place(tmp_path: Path) -> None:
    temp = tmp_path / "work" / "video.mp4"
    temp.parent.mkdir()
    temp.write_bytes(b"mp4")
    target = tmp_path / "proxies" / "video.mp4"
    move_into_place(temp, target, alive)
    assert target.read_bytes() == b"mp4"
    assert not temp.exists()

    temp.write_bytes(b"newer")
    with pytest.raises(Stopped):
        move_into_place(temp, target, stopped)
    assert target.read_bytes() == b"mp4"
    assert not temp.exists()


def test_a_stopped_attempt_leaves_not_even_a_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "thumbnail.jpg"

    def stopped() -> None:
        raise AttemptStopped("self-stopped")

    with pytest.raises(AttemptStopped):
        write_atomically(target, b"data", stopped, tmp_path / ".staging")
    assert not (tmp_path / "sub").exists()


def test_writes_are_journalled_around_the_publish(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    target = tmp_path / "p" / "preview.jpg"
    with attempt_scope(journal, config_id=None, item_id=1, attempt=1):
        write_atomically(target, b"data", lambda: None, tmp_path / ".staging")
    journal.close()
    lines = [json.loads(x) for x in (tmp_path / "effects.jsonl").read_text().splitlines()]
    assert [(x["action"], x["phase"], x["target"]) for x in lines] == [
        ("mkdir", "before", str(target.parent)),
        ("mkdir", "after", str(target.parent)),
        ("write", "before", str(target)),
        ("write", "after", str(target)),
    ]


def test_a_second_write_into_an_existing_folder_is_the_rename_alone(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    first, second = tmp_path / "p" / "thumbnail.jpg", tmp_path / "p" / "preview.jpg"
    with attempt_scope(journal, config_id=None, item_id=1, attempt=1):
        write_atomically(first, b"a", lambda: None, tmp_path / ".staging")
        write_atomically(second, b"b", lambda: None, tmp_path / ".staging")
    journal.close()
    lines = [json.loads(x) for x in (tmp_path / "effects.jsonl").read_text().splitlines()]
    assert [x["action"] for x in lines[4:]] == ["write", "write"]


def test_an_attempt_stopped_while_its_folder_is_made_does_not_rename_on_waking(
    tmp_path: Path,
) -> None:
    """A process frozen inside the mkdir (which can wait on the file system) wakes past
    its deadline: the rename's own check refuses, and nothing is published."""
    target = tmp_path / "p" / "preview.jpg"
    stopped = False
    real_mkdir = Path.mkdir

    def check() -> None:
        if stopped:
            raise AttemptStopped("past its deadline")

    def mkdir_then_freeze(self: Path, *args: Any, **kwargs: Any) -> None:
        nonlocal stopped
        real_mkdir(self, *args, **kwargs)
        if self == target.parent:
            stopped = True  # woke past the deadline

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "mkdir", mkdir_then_freeze)
        with pytest.raises(AttemptStopped):
            write_atomically(target, b"data", check, tmp_path / ".staging")
    assert target.parent.is_dir()
    assert list(target.parent.iterdir()) == []
    assert list((tmp_path / ".staging").iterdir()) == []


def test_an_attempt_stopped_before_its_folder_is_made_makes_no_folder(tmp_path: Path) -> None:
    """The folder is a step of its own with its own check: an attempt that stops between
    its first check and the mkdir makes nothing under the proxy root."""
    temp = tmp_path / "staged.tmp"
    temp.write_bytes(b"data")
    target = tmp_path / "root" / "ab" / "preview.jpg"
    checks = 0

    def alive_once() -> None:
        nonlocal checks
        checks += 1
        if checks > 1:
            raise AttemptStopped("past its deadline")

    with pytest.raises(AttemptStopped):
        move_into_place(temp, target, alive_once)
    assert not (tmp_path / "root").exists()
    assert not temp.exists()


def test_a_folder_made_by_someone_else_after_the_look_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (a sibling proxy's write) may make the folder between the look
    and the mkdir: that is no error."""
    temp = tmp_path / "staged.tmp"
    temp.write_bytes(b"data")
    target = tmp_path / "root" / "ab" / "preview.jpg"
    target.parent.mkdir(parents=True)
    real_is_dir = Path.is_dir
    looks: list[Path] = []

    def looked_just_before(self: Path) -> bool:
        looks.append(self)
        return False if len(looks) == 1 else real_is_dir(self)

    monkeypatch.setattr(Path, "is_dir", looked_just_before)
    move_into_place(temp, target, lambda: None)
    assert looks[0] == target.parent
    assert target.read_bytes() == b"data"


def test_a_staged_file_gone_before_publishing_raises_its_own_error(tmp_path: Path) -> None:
    """The clean-up of a temporary file that is already gone adds no second error."""
    temp = tmp_path / "staged.tmp"
    target = tmp_path / "root" / "preview.jpg"
    with pytest.raises(FileNotFoundError) as caught:
        move_into_place(temp, target, lambda: None)
    assert caught.value.__context__ is None
    assert not target.exists()


def test_what_is_made_below_a_folder_takes_its_mode_never_more_than_0750_and_0640(
    tmp_path: Path,
) -> None:
    """ADR 0043: the proxy root's mode is the one fact; its folders and proxies follow
    it (the setgid bit carries the group), and nothing is ever open to others."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o2750)
    target = shared / "cfg" / "ab" / "thumbnail.jpg"
    write_atomically(target, b"x", alive, shared / ".staging")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    for folder in (shared / "cfg", shared / "cfg" / "ab", shared / ".staging"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o2750, folder

    wide = tmp_path / "wide"
    wide.mkdir()
    wide.chmod(0o777)
    other = wide / "cfg" / "thumbnail.jpg"
    write_atomically(other, b"x", alive, wide / ".staging")
    assert stat.S_IMODE(other.stat().st_mode) == 0o640
    assert stat.S_IMODE((wide / "cfg").stat().st_mode) == 0o750


def test_a_folder_made_meanwhile_by_another_attempt_is_used_and_those_below_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another attempt may make one of the missing folders between the look and its
    mkdir: the folders below it are made all the same."""
    top = tmp_path / "cfg"
    real_inherited_mode = publishing.inherited_mode

    def another_attempt_first(folder: Path) -> int:
        if folder == top:
            (top / "ab").mkdir(0o700, exist_ok=True)  # the sibling's mkdir, just before ours
        return real_inherited_mode(folder)

    monkeypatch.setattr(publishing, "inherited_mode", another_attempt_first)
    make_folders(top / "ab" / "hash")
    assert (top / "ab" / "hash").is_dir()
    assert stat.S_IMODE((top / "ab" / "hash").stat().st_mode) == 0o700


def test_a_new_folder_is_never_more_open_than_its_owner_s_before_its_mode_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mkdir makes it 0700 at most (whatever the umask), and only then is it given its
    group's bits: no moment when the group (or anyone) could enter early."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o2750)
    real_chmod = os.chmod
    seen: list[int] = []

    def chmod_seeing_the_mode(path: Any, mode: int, **kw: Any) -> None:
        seen.append(stat.S_IMODE(os.lstat(path).st_mode))
        real_chmod(path, mode, **kw)

    old = os.umask(0)
    try:
        monkeypatch.setattr(os, "chmod", chmod_seeing_the_mode)
        make_folders(shared / "cfg" / "ab")
    finally:
        os.umask(old)
    # Inside a setgid folder mkdir gives the setgid bit too: only the others' bits count.
    assert len(seen) == 2 and [mode & 0o077 for mode in seen] == [0, 0]
    assert stat.S_IMODE((shared / "cfg" / "ab").stat().st_mode) == 0o2750


def test_a_new_folder_swapped_for_a_link_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the folder just made is replaced by a link before its mode is set, the mode is
    not set through the link (Linux refuses to chmod a link itself)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o755)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o2750)
    real_mkdir = Path.mkdir

    def mkdir_then_swapped(self: Path, *args: Any, **kw: Any) -> None:
        real_mkdir(self, *args, **kw)
        self.rmdir()
        self.symlink_to(outside)

    monkeypatch.setattr(Path, "mkdir", mkdir_then_swapped)
    with pytest.raises(NotImplementedError):
        make_folders(shared / "cfg")
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755


def test_a_folder_made_in_one_another_thread_just_made_gets_the_settled_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads of one crawl publish into the same new hash-prefix folder: the second
    must not inherit the first's folder while it still has mkdir's narrower mode. The
    second thread starts while the first is between its mkdir and its chmod; the first
    goes on once the second has asked for the lock (or, were there none, has finished)."""
    root = tmp_path / "proxies"
    root.mkdir()
    root.chmod(0o2750)
    asked = threading.Event()
    lock = publishing.MAKING_FOLDERS

    class Watched:
        def __enter__(self) -> None:
            if threading.current_thread() is not threading.main_thread():
                asked.set()
            lock.acquire()

        def __exit__(self, *exc: object) -> None:
            lock.release()

    def make_b() -> None:
        try:
            publishing.make_folders(root / "53" / "b")
        finally:
            asked.set()

    second = threading.Thread(target=make_b)
    real_chmod = os.chmod

    def chmod(path: Any, mode: int, **kwargs: Any) -> None:
        if Path(path) == root / "53" and not second.is_alive() and not asked.is_set():
            second.start()
            asked.wait()
        real_chmod(path, mode, **kwargs)

    monkeypatch.setattr(publishing, "MAKING_FOLDERS", Watched())
    monkeypatch.setattr(os, "chmod", chmod)
    publishing.make_folders(root / "53" / "a")
    second.join()
    folders = [root / "53", root / "53" / "a", root / "53" / "b"]
    assert [oct(stat.S_IMODE(f.stat().st_mode)) for f in folders] == [oct(0o2750)] * 3
