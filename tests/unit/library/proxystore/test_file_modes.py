"""The modes of safelight's files (``core.filemodes``), the proxy root's tightening
(``library.proxystore.proxymodes``) and the read group setting, on real files (ADR 0043)."""

from __future__ import annotations

import contextlib
import errno
import grp
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from safelight.core import filemodes
from safelight.core.filemodes import FileModes, Tightened, apply, make_folder, tighten_folder
from safelight.handlers.guards import tightening_line
from safelight.library.proxystore.layout import PROXY_ROOT_MARKER
from safelight.library.proxystore.proxymodes import is_settled, make_proxy_root, tighten_proxy_root
from safelight.settings import Settings, SettingsError

GROUP = grp.getgrgid(os.getegid())
CONFIG = UUID("6f1c9a52-3b1e-4d43-9c55-0d6a3f3e2b10")
HASH = "0123456789abcdef"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def umask_077() -> Iterator[None]:
    """The umask systemd's ``UMask=0077`` gives: modes must not depend on it."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize(
    ("gid", "as_root", "home", "folder", "file"),
    [
        (None, False, 0o700, 0o700, 0o600),
        (GROUP.gr_gid, False, 0o750, 0o2750, 0o640),
        # As root the embedded server's own user passes through the home, nobody lists it.
        (None, True, 0o701, 0o700, 0o600),
        (GROUP.gr_gid, True, 0o751, 0o2750, 0o640),
    ],
)
def test_the_modes_for_each_case(
    gid: int | None, as_root: bool, home: int, folder: int, file: int
) -> None:
    modes = FileModes(gid=gid, as_root=as_root)
    assert (modes.home, modes.folder, modes.file) == (home, folder, file)
    assert not modes.home & 0o006 and not modes.folder & 0o007 and not modes.file & 0o007


def test_a_folder_is_made_with_exactly_its_mode_and_group_whatever_the_umask(
    tmp_path: Path, umask_077: None
) -> None:
    shared = tmp_path / "a" / "home"
    assert make_folder(shared, 0o750, GROUP.gr_gid)
    assert mode(shared) == 0o750 and shared.stat().st_gid == GROUP.gr_gid
    assert shared.stat().st_uid == os.geteuid()
    shared.chmod(0o755)
    assert not make_folder(shared, 0o700, None)  # one that exists is left as it is
    assert mode(shared) == 0o755


def test_apply_sets_the_mode_and_group_and_never_follows_a_link(tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("x")
    target.chmod(0o644)
    link = tmp_path / "link"
    link.symlink_to(target)
    tightened = Tightened()
    apply(link, os.lstat(link), 0o600, None, tightened)
    assert mode(target) == 0o644 and not tightened

    apply(target, os.lstat(target), 0o600, GROUP.gr_gid, tightened)
    assert mode(target) == 0o600
    assert tightened.changed == {("file", 0o644, 0o600): 1}


def test_without_fchmodat_nofollow_the_mode_is_set_through_a_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``fchmodat(AT_SYMLINK_NOFOLLOW)`` is missing (Python raises
    NotImplementedError), the entry is opened with O_NOFOLLOW and fchmod'ed: a file is
    changed, a link is left alone."""
    real_chmod = os.chmod

    def no_nofollow(path: object, mode: int, *, dir_fd: int | None = None, **kw: object) -> None:
        if kw.get("follow_symlinks") is False:
            raise NotImplementedError("chmod: follow_symlinks unavailable on this platform")
        real_chmod(path, mode, dir_fd=dir_fd)  # type: ignore[arg-type]

    file = tmp_path / "f"
    file.write_text("x")
    file.chmod(0o644)
    target = tmp_path / "t"
    target.write_text("x")
    target.chmod(0o644)
    link = tmp_path / "l"
    link.symlink_to(target)
    monkeypatch.setattr(os, "chmod", no_nofollow)
    filemodes._chmod(file, 0o600, None)
    filemodes._chmod(link, 0o600, None)
    assert mode(file) == 0o600 and mode(target) == 0o644


def test_the_line_says_how_many_from_what_to_what() -> None:
    tightened = Tightened()
    tightened.changed[("folder", 0o755, 0o700)] += 1204
    tightened.changed[("folder", 0o775, 0o700)] += 1
    tightened.changed[("file", 0o644, 0o600)] += 20113
    assert tightened.describe() == (
        "1,205 folders from 0755, 0775 to 0700, 20,113 files from 0644 to 0600"
    )
    one = Tightened()
    one.changed[("folder", 0o755, 0o701)] += 1
    one.regrouped = 2
    assert one.describe() == "1 folder from 0755 to 0701, 2 given to the read group"


def layout(root: Path) -> tuple[Path, Path, Path]:
    """An open proxy root of an earlier release: a proxy, a staged file, the marker."""
    folder = root / str(CONFIG) / HASH[:2] / HASH
    folder.mkdir(parents=True)
    (root / ".staging").mkdir()
    proxy = folder / "thumbnail.12-1.jpg"
    staged = root / ".staging" / ".thumbnail.12-1.jpg.abcd1234.tmp"
    marker = root / PROXY_ROOT_MARKER
    for file in (proxy, staged, marker):
        file.write_text("x")
        file.chmod(0o644)
    for path in (root, folder, folder.parent, folder.parent.parent, root / ".staging"):
        path.chmod(0o755)
    return proxy, staged, marker


def test_the_proxy_root_is_tightened_once_and_only_its_layout(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    proxy, staged, marker = layout(root)
    # Not the layout's: a foreign folder and file, and a config-like link to a folder
    # outside, whose files must not change.
    foreign = root / "Photos"
    foreign.mkdir()
    foreign.chmod(0o755)
    (foreign / "IMG_1.jpg").write_text("x")
    (foreign / "IMG_1.jpg").chmod(0o644)
    outside = tmp_path / "outside"
    (outside / "ab").mkdir(parents=True)
    (outside / "ab" / "thumbnail.1-1.jpg").write_text("x")
    (outside / "ab" / "thumbnail.1-1.jpg").chmod(0o644)
    (root / "00000000-0000-0000-0000-000000000001").symlink_to(outside)

    modes = FileModes()
    tightened = tighten_proxy_root(root, modes)
    assert tightened.changed == {("folder", 0o755, 0o700): 5, ("file", 0o644, 0o600): 3}
    assert {mode(p) for p in (proxy, staged, marker)} == {0o600}
    assert mode(root) == 0o700 and mode(proxy.parent) == 0o700
    assert mode(foreign) == 0o755 and mode(foreign / "IMG_1.jpg") == 0o644
    assert mode(outside / "ab" / "thumbnail.1-1.jpg") == 0o644
    assert is_settled(root, modes)

    # Once: a settled root is not walked again (a file loosened since stays so).
    proxy.chmod(0o644)
    assert not tighten_proxy_root(root, modes)
    assert mode(proxy) == 0o644


def test_with_a_group_the_proxy_root_is_the_group_s_and_setgid(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    proxy, _, _ = layout(root)
    modes = FileModes(gid=GROUP.gr_gid)
    assert tighten_proxy_root(root, modes)
    assert mode(root) == mode(proxy.parent) == 0o2750
    assert mode(proxy) == 0o640 and proxy.stat().st_gid == GROUP.gr_gid
    # A new root is made so from the start.
    fresh = tmp_path / "fresh"
    assert make_proxy_root(fresh, modes)
    assert mode(fresh) == 0o2750 and is_settled(fresh, modes)


def other_group() -> int:
    """A group this process may give files to, other than its own (any, as root)."""
    if os.geteuid() == 0:
        return next(g.gr_gid for g in grp.getgrall() if g.gr_gid != GROUP.gr_gid)
    others = [gid for gid in os.getgroups() if gid != GROUP.gr_gid]
    if not others:
        pytest.skip("needs a second group this user is in")
    return others[0]


def test_a_root_of_another_group_is_given_to_the_read_group(tmp_path: Path) -> None:
    other = other_group()
    root = tmp_path / "proxies"
    proxy, staged, marker = layout(root)
    folder = proxy.parent
    entries = [root, folder, folder.parent, folder.parent.parent, root / ".staging"]
    entries += [proxy, staged, marker]
    for path in entries:
        os.chown(path, -1, other)
    modes = FileModes(gid=GROUP.gr_gid)
    assert not is_settled(root, modes)
    tightened = tighten_proxy_root(root, modes)
    assert {path.stat().st_gid for path in entries} == {GROUP.gr_gid}
    assert tightened.regrouped == len(entries)
    assert mode(root) == mode(folder) == 0o2750 and mode(proxy) == 0o640
    assert is_settled(root, modes)

    # A new root made in a folder whose setgid bit would give it another group.
    parent = tmp_path / "elsewhere"
    parent.mkdir()
    os.chown(parent, -1, other)
    parent.chmod(0o2755)
    fresh = parent / "fresh"
    assert make_proxy_root(fresh, modes)
    assert fresh.stat().st_gid == GROUP.gr_gid and mode(fresh) == 0o2750


def test_the_walk_goes_on_past_an_entry_gone_and_a_folder_it_may_not_enter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry deleted meanwhile (a sweep) and a folder that cannot be opened are
    passed over; the rest of the root is tightened, and files of no layout name are
    left as they are, wherever they lie."""
    root = tmp_path / "proxies"
    proxy, staged, marker = layout(root)
    shut = "00000000-0000-0000-0000-00000000000a"  # sorts before CONFIG's folder
    below_shut = root / shut / HASH[:2]
    below_shut.mkdir(parents=True)
    for path in (root / shut, below_shut):
        path.chmod(0o755)
    strays = [root / "Notes.TXT", proxy.parent / "Notes.TXT"]  # no layout name
    for stray in strays:
        stray.write_text("x")
        stray.chmod(0o644)

    class Gone:
        name = "00000000-0000-0000-0000-000000000000"

        def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
            raise FileNotFoundError(errno.ENOENT, "deleted by a sweep")

    real_scandir = os.scandir
    real_open = os.open

    @contextlib.contextmanager
    def in_order_after_one_gone(fd: int) -> Iterator[list[Any]]:
        with real_scandir(fd) as entries:
            yield [Gone(), *sorted(entries, key=lambda entry: entry.name)]

    def refusing_the_shut_one(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if path == shut and kw.get("dir_fd") is not None:
            raise PermissionError(errno.EACCES, "not ours to enter")
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "scandir", in_order_after_one_gone)
    monkeypatch.setattr(os, "open", refusing_the_shut_one)
    tightened = tighten_proxy_root(root, FileModes())
    assert tightened.changed == {("folder", 0o755, 0o700): 6, ("file", 0o644, 0o600): 3}
    assert {mode(p) for p in (proxy, staged, marker)} == {0o600}
    assert mode(root / shut) == 0o700 and mode(below_shut) == 0o755
    assert {mode(stray) for stray in strays} == {0o644}


def test_the_home_itself_is_tightened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    (home / "demo-library").mkdir(mode=0o755)
    (home / "demo-library").chmod(0o755)
    tightened = tighten_folder(home, 0o700, None)
    assert tightened.describe() == "1 folder from 0755 to 0700"
    assert mode(home) == 0o700
    assert mode(home / "demo-library") == 0o755  # a storage root: never changed
    assert not tighten_folder(home, 0o700, None)


def test_the_read_group_must_exist_and_is_not_repeated() -> None:
    with pytest.raises(SettingsError) as raised:
        Settings(read_group="no-such-group-q9z")
    assert "no-such-group-q9z" not in str(raised.value)
    assert str(raised.value).startswith(
        "read_group (SAFELIGHT_READ_GROUP) must name a group of this machine"
    )
    assert Settings(read_group=GROUP.gr_name).file_modes().gid == GROUP.gr_gid
    assert Settings().file_modes().gid is None


def test_the_read_group_must_be_one_this_user_is_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only root, or a member, may give a file to a group (chown): said at start."""
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    monkeypatch.setattr(os, "getegid", lambda: 4242)
    monkeypatch.setattr(os, "getgroups", lambda: [4243])
    with pytest.raises(SettingsError, match="must be a group this user is in"):
        Settings(read_group=GROUP.gr_name)
    monkeypatch.setattr(os, "getgroups", lambda: [GROUP.gr_gid])
    assert Settings(read_group=GROUP.gr_name).read_group == GROUP.gr_name


def test_the_start_s_one_line_names_each_part_it_tightened() -> None:
    home = Tightened()
    home.changed[("folder", 0o755, 0o700)] += 1
    root = Tightened()
    root.changed[("file", 0o644, 0o600)] += 2
    parts = [("the home", Path("/h"), home), ("the proxy root", Path("/p"), root)]
    assert tightening_line(parts) == (
        "made safelight's files private (ADR 0043): the home /h: 1 folder from 0755 to 0700; "
        "the proxy root /p: 2 files from 0644 to 0600"
    )


def test_the_modes_of_this_process_follow_who_runs_it() -> None:
    """As root the home lets the embedded server's own user through (0701)."""
    assert Settings().file_modes().home == (0o701 if os.geteuid() == 0 else 0o700)


def test_what_counts_as_a_change_and_how_two_counts_add_up() -> None:
    assert not Tightened() and Tightened().describe() == "nothing"
    assert Tightened(regrouped=1) and Tightened(refused=1)
    mine = Tightened(regrouped=1, refused=2)
    mine.changed[("file", 0o644, 0o600)] += 1
    theirs = Tightened(regrouped=3, refused=4)
    theirs.changed[("file", 0o644, 0o600)] += 2
    mine.add(theirs)
    assert (mine.regrouped, mine.refused) == (4, 6)
    assert mine.changed == {("file", 0o644, 0o600): 3}
    assert mine.describe() == (
        "3 files from 0644 to 0600, 4 given to the read group, "
        "6 left as they were (not this user's to change)"
    )


def test_an_entry_this_user_may_not_change_is_counted_and_one_already_right_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither chmod nor chown is tried on what is settled already (a read-only file
    system, another user's entry: nothing to refuse)."""
    file = tmp_path / "f"
    file.write_text("x")
    file.chmod(0o600)

    def refused(*args: Any, **kw: Any) -> None:
        raise PermissionError(errno.EPERM, "not yours")

    monkeypatch.setattr(os, "chmod", refused)
    monkeypatch.setattr(os, "chown", refused)
    tightened = Tightened()
    apply(file, os.lstat(file), 0o600, None, tightened)
    apply(file, os.lstat(file), 0o600, GROUP.gr_gid, tightened)
    assert not tightened
    apply(file, os.lstat(file), 0o640, None, tightened)
    apply(file, os.lstat(file), 0o640, None, tightened)
    assert tightened.refused == 2 and not tightened.changed

    def broken(*args: Any, **kw: Any) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "chmod", broken)
    with pytest.raises(OSError, match="I/O error"):
        apply(file, os.lstat(file), 0o640, None, tightened)


def test_an_entry_that_became_a_link_since_it_was_looked_at_is_not_followed(
    tmp_path: Path,
) -> None:
    other = other_group()
    target = tmp_path / "target"
    target.write_text("x")
    target.chmod(0o644)
    looked_at = os.lstat(target)
    link = tmp_path / "link"
    link.symlink_to(target)
    apply(link, looked_at, 0o600, other, Tightened())
    assert mode(target) == 0o644 and target.stat().st_gid == GROUP.gr_gid


def test_the_mode_is_set_through_a_descriptor_relative_to_its_folder_and_never_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback without ``fchmodat(AT_SYMLINK_NOFOLLOW)``: a name relative to the
    folder's descriptor, and a FIFO opened without waiting for a writer."""

    def no_nofollow(*args: Any, **kw: Any) -> None:
        raise NotImplementedError("chmod: follow_symlinks unavailable on this platform")

    (tmp_path / "f").write_text("x")
    (tmp_path / "f").chmod(0o644)
    os.mkfifo(tmp_path / "pipe", 0o644)
    (tmp_path / "pipe").chmod(0o644)
    monkeypatch.setattr(os, "chmod", no_nofollow)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        filemodes._chmod("f", 0o600, fd)
        filemodes._chmod("pipe", 0o600, fd)
    finally:
        os.close(fd)
    assert mode(tmp_path / "f") == mode(tmp_path / "pipe") == 0o600


def test_a_folder_is_made_in_missing_parents_never_open_before_its_mode_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_chmod = filemodes._chmod
    seen: list[int] = []

    def chmod_seeing_the_mode(path: Any, mode: int, dir_fd: int | None) -> None:
        seen.append(stat.S_IMODE(os.lstat(path).st_mode))
        real_chmod(path, mode, dir_fd)

    monkeypatch.setattr(filemodes, "_chmod", chmod_seeing_the_mode)
    old = os.umask(0)
    try:
        assert make_folder(tmp_path / "a" / "b" / "home", 0o750, None)
    finally:
        os.umask(old)
    assert seen == [0o700]
    home = tmp_path / "a" / "b" / "home"
    assert mode(home) == 0o750 and home.stat().st_uid == os.geteuid()


def test_a_home_of_another_group_is_given_to_the_read_group(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, -1, other_group())
    home.chmod(0o755)
    tightened = tighten_folder(home, 0o750, GROUP.gr_gid)
    assert tightened.describe() == "1 folder from 0755 to 0750, 1 given to the read group"
    assert mode(home) == 0o750 and home.stat().st_gid == GROUP.gr_gid
    assert home.stat().st_uid == os.geteuid()


def test_a_folder_swapped_for_a_link_as_it_is_made_gives_nothing_through_the_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made, then replaced by a link before its group and mode are set: neither is set
    through the link, on the folder it points to."""
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o755)
    home = tmp_path / "home"
    real_mkdir = os.mkdir

    def mkdir_then_swapped(path: Any, mode: int = 0o777, **kw: Any) -> None:
        real_mkdir(path, mode, **kw)
        if Path(path) == home:
            os.rmdir(home)
            home.symlink_to(outside)

    monkeypatch.setattr(os, "mkdir", mkdir_then_swapped)
    make_folder(home, 0o750, other_group())
    assert outside.stat().st_gid == GROUP.gr_gid and mode(outside) == 0o755
