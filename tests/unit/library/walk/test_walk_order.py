"""The walk gives out its files in path order, and the crawl matches them with the known
assets read in that order (``KnownInPathOrder``), neither side held whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from safelight.library.catalogue.assets import KnownAsset
from safelight.library.files.mediatypes import media_type, media_type_of_name
from safelight.library.files.originals import StorageRoot
from safelight.library.walk import walker as walk_module
from safelight.library.walk.matching import KnownInPathOrder
from safelight.library.walk.walker import WalkedFile, Walker
from safelight.testing.walking import feed, given_out, match, take_files

NAMES = [
    "a.jpg",
    "a/b.jpg",
    "a/b/c.jpg",
    "a/b.c/d.jpg",
    "a0.jpg",
    "a-b/c.jpg",
    "A.jpg",
    "B/x.png",
    "z/é/ü.jpg",
    "é.jpg",
    "ß.jpg",
    "b/notes.txt",
]


def test_the_walk_gives_out_files_in_path_order_step_by_step(tmp_path: Path) -> None:
    for name in NAMES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    given: list[str] = []
    with StorageRoot(tmp_path) as storage:
        walker = Walker(storage)
        while not walker.done:
            walker.step(max_folders=1, max_files=1)
            taken = take_files(walker)
            assert len(taken) <= 1
            given += [f.path for f in taken]
        assert given_out(walker) == []
    media = [n for n in NAMES if not n.endswith(".txt")]
    assert given == sorted(media)  # str order: the bytes of UTF-8, as COLLATE "C"
    assert given.index("a.jpg") < given.index("a/b.jpg") < given.index("a0.jpg")


def test_a_step_stops_at_its_folders_and_its_files(tmp_path: Path) -> None:
    for n in range(5):
        (tmp_path / f"p{n}.jpg").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "q.jpg").write_bytes(b"x")
    with StorageRoot(tmp_path) as storage:
        walker = Walker(storage)
        walker.step(max_folders=1, max_files=3)
        assert [f.path for f in take_files(walker)] == ["p0.jpg", "p1.jpg", "p2.jpg"]
        walker.step(max_folders=0, max_files=10)  # no folder listed: only what is listed
        assert [f.path for f in take_files(walker)] == ["p3.jpg", "p4.jpg"]
        assert not walker.done
        walker.step()
        assert [f.path for f in take_files(walker)] == ["sub/q.jpg"]
        assert walker.done


def known(path: str, asset_id: int = 1) -> KnownAsset:
    return KnownAsset(asset_id, path, "0" * 16, 1, 1, "image")


def walked(path: str) -> WalkedFile:
    return WalkedFile(path, 1, 1, "image")


def test_known_assets_are_matched_batch_by_batch_range_by_range() -> None:
    matcher = KnownInPathOrder()
    feed(matcher, [known("a", 1)])  # the first batch's range, up to a1, in two pages
    feed(matcher, [])
    pairs, unseen = match(matcher, [walked("a"), walked("a1")])
    assert [(w.path, k.id if k else None) for w, k in pairs] == [("a", 1), ("a1", None)]
    assert unseen == []
    feed(matcher, [known("b", 2), known("c", 3)])  # after a1, up to c
    pairs, unseen = match(matcher, [walked("c")])
    assert [(w.path, k.id if k else None) for w, k in pairs] == [("c", 3)]
    assert [k.id for k in unseen] == [2]  # b: before c, not walked
    feed(matcher, [known("d", 4)])  # the last range: to the end
    pairs, unseen = match(matcher, [walked("e")])
    assert [(w.path, k) for w, k in pairs] == [("e", None)]
    assert [k.id for k in unseen] == [4]
    assert matcher.rest() == []


def test_what_is_left_after_the_walk_was_not_walked() -> None:
    matcher = KnownInPathOrder()
    feed(matcher, [known("a", 1), known("b", 2), known("c", 3)])
    _, unseen = match(matcher, [walked("a")])
    assert unseen == []
    assert [k.id for k in matcher.rest()] == [2, 3]
    assert matcher.rest() == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [("a.jpg", "image"), ("A.JPG", "image"), ("x.heic", "image"), ("clip.MOV", "video"),
     ("IMG.CR3", "image"), ("a.b.mp4", "video"), ("a.mp4.jpg", "image"), ("v.x.mov", "video"),
     ("a.", None), (".jpg", None), ("noext", None), ("jpg", None), ("a.tar.gz", None),
     ("@eaDir", None), ("._IMG_1.JPG", None), ("mp4", None), ("xmov", None)],
)  # fmt: skip
def test_the_walks_media_type_of_a_name(name: str, expected: str | None) -> None:
    assert media_type_of_name(name) == expected
    assert media_type(f"folder/{name}") == expected


def test_a_step_lists_at_most_its_folders_and_gives_out_at_most_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "p.jpg").write_bytes(b"x")
        (tmp_path / folder / "q.jpg").write_bytes(b"x")
    with StorageRoot(tmp_path) as storage:
        walker = Walker(storage)
        walker.step(max_folders=2, max_files=10)  # the root and a/
        assert [f.path for f in take_files(walker)] == ["a/p.jpg", "a/q.jpg"]
        monkeypatch.setattr(walk_module, "WALK_FOLDERS_PER_STEP", 1)
        monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", 1)
        walker.step()  # the defaults, read when called: b/ listed, one file given out
        assert [f.path for f in take_files(walker)] == ["b/p.jpg"]
        walker.step()
        assert [f.path for f in take_files(walker)] == ["b/q.jpg"]
