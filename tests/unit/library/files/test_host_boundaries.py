"""The boundaries between safelight's folders and a user's: which roots may be storage
roots (``library.files.roots``), which names under the proxy root are safelight's
(``layout.parse_proxy_name`` and friends), deletes that never pass a link
(``library.proxystore.proxytree``) and the proxy root's marker
(``library.proxystore.proxyroot``)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from safelight.db.embedded import DATA_FOLDER
from safelight.library.catalogue.database import DatabaseIdentity
from safelight.library.files.roots import (
    DEMO_FOLDER,
    RegisteredRoot,
    RootOverlap,
    check_own_folder,
    check_registered_roots,
    check_storage_root,
    own_folders,
)
from safelight.library.proxystore.layout import (
    PROXY_ROOT_MARKER,
    AttemptTag,
    is_layout_folder,
    is_staging_name,
    parse_proxy_name,
    proxy_path,
)
from safelight.library.proxystore.proxyroot import (
    ProxyRootTaken,
    claim_proxy_root,
    read_marker,
)
from safelight.library.proxystore.proxytree import (
    UnsafeProxyPath,
    delete_file,
    link_file,
    open_file,
    remove_empty_folders,
)
from safelight.library.proxystore.publishing import make_video_temp_folder
from safelight.settings import Settings

CONFIG = UUID("1234abcd-1234-5678-9abc-def012345678")
HASH = "ab" + "0123456789abcd"


def alive() -> None:
    pass


# --- roots --------------------------------------------------------------------------


def test_a_root_that_contains_the_home_is_refused_with_the_fix(tmp_path: Path) -> None:
    user_home = tmp_path / "alice"
    own = own_folders(user_home / ".local" / "share" / "safelight", user_home / "px")
    user_home.mkdir()
    with pytest.raises(RootOverlap) as refused:
        check_storage_root(user_home, own)
    message = str(refused.value)
    assert str(user_home) in message and "proxy root" in message
    only_home = own_folders(user_home / ".local/share/safelight", tmp_path / "elsewhere")
    with pytest.raises(RootOverlap, match=f"set SAFELIGHT_HOME outside {user_home}"):
        check_storage_root(user_home, only_home)


@pytest.mark.parametrize(
    ("inside", "what", "setting"),
    [
        ("proxies/2019", "proxy root", "SAFELIGHT_PROXY_ROOT"),
        (f"home/{DATA_FOLDER}/base", "embedded database", "SAFELIGHT_HOME"),
        ("home/photos", "home", "SAFELIGHT_HOME"),
    ],
)
def test_a_root_inside_one_of_safelights_folders_is_refused(
    tmp_path: Path, inside: str, what: str, setting: str
) -> None:
    own = own_folders(tmp_path / "home", tmp_path / "proxies")
    with pytest.raises(RootOverlap) as refused:
        check_storage_root(tmp_path / inside, own)
    assert f"inside safelight's {what}" in str(refused.value)
    assert setting in str(refused.value)


def test_a_root_containing_the_proxy_root_is_refused_in_both_directions(tmp_path: Path) -> None:
    library = tmp_path / "library"
    own = own_folders(tmp_path / "home", library / ".proxies")
    with pytest.raises(RootOverlap, match="set SAFELIGHT_PROXY_ROOT outside"):
        check_storage_root(library, own)
    own = own_folders(tmp_path / "home", tmp_path)
    with pytest.raises(RootOverlap, match="inside safelight's proxy root"):
        check_storage_root(library, own)


def test_roots_are_compared_resolved(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "library")
    own = own_folders(tmp_path / "link" / "home", tmp_path / "px")
    with pytest.raises(RootOverlap):
        check_storage_root(tmp_path / "library", own)
    with pytest.raises(RootOverlap):
        check_storage_root(tmp_path / "link", own_folders(tmp_path / "library/h", tmp_path / "p"))


def test_disjoint_roots_and_the_demo_library_pass(tmp_path: Path) -> None:
    own = own_folders(tmp_path / "home", tmp_path / "proxies")
    check_storage_root(tmp_path / "library", own)
    check_storage_root(tmp_path / "home-photos", own)  # a sibling whose name starts alike
    check_storage_root(tmp_path / "home" / DEMO_FOLDER, own)
    check_storage_root(tmp_path / "home" / DEMO_FOLDER / "2024", own)


@pytest.mark.parametrize("root", ["/", "/etc", "/usr/share/photos", "/proc/1", "/home", "/var"])
def test_system_folders_are_refused_as_roots(root: str, tmp_path: Path) -> None:
    with pytest.raises(RootOverlap, match="system folder"):
        check_storage_root(Path(root), own_folders(tmp_path / "h", tmp_path / "p"))


def test_each_refusal_says_what_happens_there_and_the_fix_in_full(tmp_path: Path) -> None:
    own = own_folders(tmp_path / "home", tmp_path / "px")
    messages = []
    for root in (tmp_path / "px", tmp_path, tmp_path / "home" / "photos", Path("/etc/x")):
        with pytest.raises(RootOverlap) as refused:
            check_storage_root(root, own)
        messages.append(str(refused.value))

    assert messages == [
        f"the folder {tmp_path}/px is safelight's proxy root, where safelight writes and "
        "deletes its own files: set SAFELIGHT_PROXY_ROOT to a folder of safelight's own, "
        "outside every library",
        f"the folder {tmp_path} contains safelight's proxy root {tmp_path}/px: its files "
        f"would be crawled as photos; set SAFELIGHT_PROXY_ROOT outside {tmp_path}, or choose "
        "a folder that does not contain it",
        f"the folder {tmp_path}/home/photos is inside safelight's home {tmp_path}/home, where "
        "safelight writes and deletes its own files: keep photos outside it, or set "
        "SAFELIGHT_HOME elsewhere",
        "/etc/x is a system folder, not a folder of photos: choose the folder that holds "
        "the photos themselves",
    ]


@pytest.mark.parametrize("active", [True, False], ids=["active", "disabled"])
@pytest.mark.parametrize("at", ["proxies", f"home/{DATA_FOLDER}/x", "."])
def test_every_registered_root_is_checked_and_named(tmp_path: Path, active: bool, at: str) -> None:
    """Proxy root, data folder or home: the one that overlaps, the config's id and
    state in the message, whatever its state."""
    own = own_folders(tmp_path / "home", tmp_path / "proxies")
    fine = RegisteredRoot(tmp_path / "library", "storage config A of alice", active=True)
    bad = RegisteredRoot(tmp_path / at, "storage config B of bob", active=active)
    check_registered_roots([fine], own)

    with pytest.raises(RootOverlap) as refused:
        check_registered_roots([fine, bad], own)

    state = "" if active else ", disabled"
    message = str(refused.value)
    assert message.startswith(f"storage config B of bob ({tmp_path / at}{state}) overlaps")
    assert "nothing is written or deleted" in message and "SAFELIGHT_" in message


def test_a_disabled_root_is_checked_for_overlap_only(tmp_path: Path) -> None:
    """A config registered at a system folder before they were refused: disabled, it is
    crawled by nobody, so it stops no Worker; active, its next crawl would refuse it."""
    own = own_folders(tmp_path / "home", tmp_path / "proxies")
    check_registered_roots([RegisteredRoot(Path("/home"), "storage config C", False)], own)
    with pytest.raises(RootOverlap, match="system folder"):
        check_registered_roots([RegisteredRoot(Path("/home"), "storage config C", True)], own)


def test_safelights_own_folders_may_not_be_system_folders(tmp_path: Path) -> None:
    proxy_root, *_ = own_folders(tmp_path / "h", Path("/"))
    with pytest.raises(RootOverlap, match="SAFELIGHT_PROXY_ROOT"):
        check_own_folder(proxy_root)


# --- the layout's names -------------------------------------------------------------


def test_only_the_names_proxy_path_builds_are_proxy_names(tmp_path: Path) -> None:
    built = proxy_path(tmp_path, CONFIG, HASH, "thumbnail", "jpg", AttemptTag(7, 1))
    built = built.relative_to(tmp_path)
    name = parse_proxy_name(built.as_posix())
    assert name is not None and (name.config_id, name.content_hash) == (CONFIG, HASH)
    assert name.relative == built.as_posix()
    for other in (
        f"{CONFIG}/ab/{HASH}",  # a folder
        f"{CONFIG}/cd/{HASH}/thumbnail.jpg",  # the prefix does not match
        f"{CONFIG}/ab/{HASH}/x/thumbnail.jpg",
        f"{str(CONFIG).upper()}/ab/{HASH}/thumbnail.jpg",
        f"{CONFIG}/ab/{HASH}/IMG_0001.JPG",
        f"{CONFIG}/ab/{HASH}/thumbnail",
        f"{CONFIG}/ab/../ab/{HASH}/thumbnail.jpg",
        "2019/holiday/IMG_0001.jpg",
        PROXY_ROOT_MARKER,
    ):
        assert parse_proxy_name(other) is None, other


def test_proxy_names_are_exactly_the_attempt_tagged_form_and_the_legacy_form() -> None:
    folder = f"{CONFIG}/ab/{HASH}"
    tagged = parse_proxy_name(f"{folder}/full_preview.812-3.jpg")
    assert tagged is not None and tagged.written_by == AttemptTag(812, 3)
    assert tagged.file_name == "full_preview.812-3.jpg"
    # Written before names carried their attempt: rows still name them.
    legacy = parse_proxy_name(f"{folder}/thumbnail.jpg")
    assert legacy is not None and legacy.written_by is None
    for name in (
        "thumbnail.0812-3.jpg",  # not the one canonical spelling of the id
        "thumbnail.812-03.jpg",
        "thumbnail.812.jpg",  # no attempt
        "thumbnail.-3.jpg",
        "thumbnail.812-.jpg",
        "thumbnail.812-3-1.jpg",
        "thumbnail.812_3.jpg",
        "thumbnail.a-3.jpg",
        "thumbnail.812-3.x.jpg",  # an extra part
        "thumbnail..jpg",
        "thumbnail.812-3.",
        ".812-3.jpg",
        f"thumbnail.{10**19}-1.jpg",  # longer than any bigint id
    ):
        assert parse_proxy_name(f"{folder}/{name}") is None, name
    with pytest.raises(ValueError):
        AttemptTag(-1, 1)


def test_two_attempts_never_build_the_same_proxy_name(tmp_path: Path) -> None:
    names = {
        proxy_path(tmp_path, CONFIG, HASH, "thumbnail", "jpg", AttemptTag(item, attempt))
        for item, attempt in ((1, 1), (1, 2), (2, 1), (11, 1), (1, 11))
    }
    assert len(names) == 5
    assert all(parse_proxy_name(p.relative_to(tmp_path).as_posix()) for p in names)
    with pytest.raises(TypeError):
        proxy_path(tmp_path, CONFIG, HASH, "thumbnail", "jpg", None)  # type: ignore[arg-type]


def test_staging_names_and_layout_folders() -> None:
    assert is_staging_name(".staging/.thumbnail.jpg.k2j4_x9a.tmp")
    assert is_staging_name(".staging/.thumbnail.812-3.jpg.k2j4_x9a.tmp")
    assert is_staging_name(".staging/.video-a1b2c3d4.tmp/video.mp4")
    assert not is_staging_name(".staging/photo.jpg")
    assert not is_staging_name(".staging/.video-a1b2c3d4.tmp/deeper/video.mp4")
    assert not is_staging_name("elsewhere/.thumbnail.jpg.k2j4_x9a.tmp")
    for folder in (str(CONFIG), f"{CONFIG}/ab", f"{CONFIG}/ab/{HASH}", ".staging"):
        assert is_layout_folder(folder), folder
    assert is_layout_folder(".staging/.video-a1b2c3d4.tmp")
    for folder in ("photos", f"{CONFIG}/abc", f"{CONFIG}/cd/{HASH}", f"{CONFIG}/ab/{HASH}/x"):
        assert not is_layout_folder(folder), folder


# --- deletes through descriptors ------------------------------------------------------


def _proxy(root: Path, name: str = "thumbnail.jpg") -> Path:
    path = root / str(CONFIG) / HASH[:2] / HASH / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"proxy")
    return path


def test_a_link_at_the_end_is_refused_and_its_target_survives(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    secret = tmp_path / "original.jpg"
    secret.write_bytes(b"the only copy")
    link = _proxy(root)
    link.unlink()
    link.symlink_to(secret)
    with pytest.raises(UnsafeProxyPath, match="symbolic link"):
        delete_file(root, link.relative_to(root).as_posix(), alive)
    assert secret.read_bytes() == b"the only copy" and link.is_symlink()


def test_a_linked_folder_on_the_way_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    library = tmp_path / "library"
    original = _proxy(library)  # a file of the same name, outside the proxy root
    (root / str(CONFIG)).parent.mkdir(parents=True)
    (root / str(CONFIG)).symlink_to(library / str(CONFIG), target_is_directory=True)
    with pytest.raises(UnsafeProxyPath, match="not followed"):
        delete_file(root, original.relative_to(library).as_posix(), alive)
    assert original.exists()


def test_a_folder_swapped_for_a_link_mid_delete_sends_it_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap lands after the delete opened the proxy root and before it opens the
    config's folder: the path-based delete of before would follow the link."""
    root = tmp_path / "proxies"
    library = tmp_path / "library"
    target = _proxy(root)
    original = _proxy(library)
    real_open = os.open
    opened: list[object] = []

    def open_then_swap(path: object, flags: int, *args: object, **kwargs: object) -> int:
        fd = real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]
        if not opened:
            opened.append(path)
            config_folder = root / str(CONFIG)
            config_folder.rename(tmp_path / "moved-away")
            config_folder.symlink_to(library / str(CONFIG), target_is_directory=True)
        return fd

    monkeypatch.setattr(os, "open", open_then_swap)
    with pytest.raises(UnsafeProxyPath):
        delete_file(root, target.relative_to(root).as_posix(), alive)
    assert original.read_bytes() == b"proxy"
    assert (tmp_path / "moved-away" / HASH[:2] / HASH / "thumbnail.jpg").exists()


def test_delete_file_removes_a_proxy_and_folders_go_only_when_empty(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    thumb = _proxy(root)
    preview = _proxy(root, "full_preview.jpg")
    relative = thumb.relative_to(root).as_posix()
    assert delete_file(root, relative, alive) is True
    assert delete_file(root, relative, alive) is False  # gone already
    folder = thumb.parent.relative_to(root).as_posix()
    assert remove_empty_folders(root, folder, alive) == []
    assert preview.exists()
    preview.unlink()
    assert remove_empty_folders(root, folder, alive) == [folder, f"{CONFIG}/ab", str(CONFIG)]
    assert root.is_dir() and not any(root.iterdir())


def test_a_file_kept_by_its_own_stat_is_not_deleted(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    thumb = _proxy(root)
    kept = delete_file(root, thumb.relative_to(root).as_posix(), alive, keep=lambda st: True)
    assert kept is False and thumb.exists()


def test_link_file_gives_the_very_file_a_second_name(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    thumb = _proxy(root)
    link_file(root, thumb.relative_to(root).as_posix(), "thumbnail.7-1.jpg", alive)
    new = thumb.parent / "thumbnail.7-1.jpg"
    assert new.stat().st_ino == thumb.stat().st_ino and new.read_bytes() == b"proxy"
    with pytest.raises(ValueError, match="not a file name"):
        link_file(root, thumb.relative_to(root).as_posix(), "../escape.jpg", alive)


def test_link_file_refuses_a_link_and_a_name_swapped_before_the_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "proxies"
    secret = tmp_path / "original.jpg"
    secret.write_bytes(b"the only copy")
    thumb = _proxy(root)
    relative = thumb.relative_to(root).as_posix()
    thumb.unlink()
    thumb.symlink_to(secret)
    with pytest.raises(UnsafeProxyPath, match="not linked"):
        link_file(root, relative, "thumbnail.7-1.jpg", alive)
    assert not (thumb.parent / "thumbnail.7-1.jpg").exists()

    # Checked as a file, then swapped for a link before the linkat: the new name would
    # be that link, so it goes again.
    thumb.unlink()
    thumb.write_bytes(b"proxy")
    real_link = os.link

    def swap_then_link(src: str, dst: str, **kwargs: Any) -> None:
        thumb.unlink()
        thumb.symlink_to(secret)
        real_link(src, dst, **kwargs)

    monkeypatch.setattr(os, "link", swap_then_link)
    with pytest.raises(UnsafeProxyPath, match="changed while it was linked"):
        link_file(root, relative, "thumbnail.7-1.jpg", alive)
    assert not os.path.lexists(thumb.parent / "thumbnail.7-1.jpg")
    assert secret.read_bytes() == b"the only copy"


def test_open_file_reads_only_a_regular_file_reached_without_links(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    thumb = _proxy(root)
    relative = thumb.relative_to(root).as_posix()
    with open_file(root, relative) as f:
        assert f.read() == b"proxy"
    fifo = thumb.parent / "full_preview.jpg"
    os.mkfifo(fifo)
    with (
        pytest.raises(UnsafeProxyPath, match="not a regular file"),
        open_file(root, fifo.relative_to(root).as_posix()),
    ):
        pass
    thumb.unlink()
    thumb.symlink_to(tmp_path)
    with pytest.raises(UnsafeProxyPath, match="symbolic link"), open_file(root, relative):
        pass


# --- the proxy root's marker ----------------------------------------------------------


def test_a_proxy_root_belongs_to_the_first_database_that_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The marker is written beside itself, never in the temporary folder (TMPDIR may be
    # another file system, where a link cannot be made).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temporary-folder"))
    root = tmp_path / "home" / "proxies"
    mine = DatabaseIdentity("7000000000000000001", "safelight")
    old = os.umask(0o022)
    try:
        claim_proxy_root(root, mine)
    finally:
        os.umask(old)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700  # one it had to make is private

    def nothing_written(*args: Any, **kw: Any) -> None:
        raise AssertionError("a root claimed already is only read")

    monkeypatch.setattr(tempfile, "mkstemp", nothing_written)
    claim_proxy_root(root, mine)  # again: fine, and nothing written
    assert [p.name for p in root.iterdir()] == [PROXY_ROOT_MARKER]
    assert read_marker(root) == mine
    for other in (
        DatabaseIdentity("7000000000000000001", "safelight_demo"),
        DatabaseIdentity("7000000000000000002", "safelight"),
    ):
        with pytest.raises(ProxyRootTaken) as refused:
            claim_proxy_root(root, other)
        message = str(refused.value)
        assert mine.describe() in message and other.describe() in message
        assert message.endswith(
            "give each database a proxy root of its own "
            "(SAFELIGHT_PROXY_ROOT, or another SAFELIGHT_HOME)"
        )


@pytest.mark.parametrize(("winner", "taken"), [("safelight", False), ("safelight_demo", True)])
def test_two_workers_claiming_at_once_agree_on_the_first_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, winner: str, taken: bool
) -> None:
    """Another Worker links its marker between this one's look and its link: the link
    fails, and the marker that won decides."""
    root = tmp_path / "proxies"
    mine = DatabaseIdentity("7000000000000000001", "safelight")
    real_link = os.link

    def the_other_worker_first(source: Any, target: Any) -> None:
        Path(target).write_text(
            f'{{"system_identifier": "7000000000000000001", "database": "{winner}"}}\n'
        )
        real_link(source, target)

    monkeypatch.setattr(os, "link", the_other_worker_first)
    if taken:
        with pytest.raises(ProxyRootTaken, match="safelight_demo"):
            claim_proxy_root(root, mine)
    else:
        claim_proxy_root(root, mine)
    assert [p.name for p in root.iterdir()] == [PROXY_ROOT_MARKER]


def test_the_marker_read_without_claiming(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    root.mkdir()
    assert read_marker(root) is None
    (root / PROXY_ROOT_MARKER).write_text("{not json")
    unreadable = read_marker(root)
    assert unreadable is not None and unreadable.database == "?"


def test_an_unreadable_marker_is_nobodys(tmp_path: Path) -> None:
    root = tmp_path / "proxies"
    root.mkdir()
    (root / PROXY_ROOT_MARKER).write_text("{not json")
    with pytest.raises(ProxyRootTaken, match=r"belongs to no database safelight can name \(see"):
        claim_proxy_root(root, DatabaseIdentity("1", "db"))
    (root / PROXY_ROOT_MARKER).unlink()
    (root / PROXY_ROOT_MARKER).symlink_to(tmp_path / "theirs.json")
    with pytest.raises(ProxyRootTaken):
        claim_proxy_root(root, DatabaseIdentity("1", "db"))


def test_a_servers_default_proxy_root_is_not_the_embedded_databases(tmp_path: Path) -> None:
    embedded = Settings(home=tmp_path).proxies
    server = Settings(home=tmp_path, database_url="postgresql://u:pw@db.example/safelight")
    other = Settings(home=tmp_path, database_url="postgresql://u:pw@db.example/safelight2")
    assert embedded == (tmp_path / "proxies").resolve()
    assert server.proxies.parent == embedded.parent
    assert len({embedded, server.proxies, other.proxies}) == 3
    assert "pw" not in server.proxies.name and "db.example" in server.proxies.name
    explicit = Settings(home=tmp_path, database_url="postgresql:///x", proxy_root=tmp_path / "p")
    assert explicit.proxies == (tmp_path / "p").resolve()


def test_a_video_s_temporary_folder_is_a_staging_name_the_sweep_knows(tmp_path: Path) -> None:
    """ffmpeg's folder is made in the staging folder (the proxy root's file system, its
    modes), under a name the sweep deletes once a crash left it behind."""
    root = tmp_path / "proxies"
    root.mkdir()
    root.chmod(0o2750)
    temp = make_video_temp_folder(root / ".staging")
    assert temp.parent == root / ".staging" and temp.is_dir()
    assert stat.S_IMODE(temp.parent.stat().st_mode) == 0o2750
    assert is_staging_name(f".staging/{temp.name}/thumbnail.jpg")
