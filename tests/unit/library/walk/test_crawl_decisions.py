"""The crawl's decisions (``library.walk.decisions``), as a table: every case a walked file
can meet, decided from what the crawl knows, with no I/O."""

from __future__ import annotations

import pytest

from safelight.library.catalogue.assets import KnownAsset
from safelight.library.media.sidecars import SidecarFile
from safelight.library.walk import decisions
from safelight.library.walk.decisions import (
    AskOwner,
    Duplicate,
    Moved,
    New,
    SidecarChanged,
    Touched,
    Unchanged,
    by_content,
    by_owner,
    by_stat,
    sidecar_changed,
)

HERE = KnownAsset(1, "a.jpg", "aaaa", 100, 1_000, "image")
ELSEWHERE = KnownAsset(2, "b.jpg", "bbbb", 200, 2_000, "image")


def test_a_known_path_with_its_stat_is_unchanged_and_any_other_is_hashed() -> None:
    assert by_stat(HERE, 100, 1_000) == Unchanged(HERE)
    assert by_stat(HERE, 101, 1_000) is None
    assert by_stat(HERE, 100, 1_001) is None
    assert by_stat(None, 100, 1_000) is None


SIDECAR = SidecarFile("a.jpg.xmp", 50, 7_000)
WITH_SIDECAR = KnownAsset(1, "a.jpg", "aaaa", 100, 1_000, "image", SIDECAR)


@pytest.mark.parametrize(
    ("asset", "walked", "expected"),
    [
        # The sidecar it was read with, unchanged: nothing to read.
        (WITH_SIDECAR, SIDECAR, Unchanged(WITH_SIDECAR)),
        (HERE, None, Unchanged(HERE)),
        # Added, removed, changed (size, mtime), or another one (name.xmp for
        # name.ext.xmp): read again, in place, without hashing.
        (HERE, SIDECAR, SidecarChanged(HERE)),
        (WITH_SIDECAR, None, SidecarChanged(WITH_SIDECAR)),
        (WITH_SIDECAR, SidecarFile("a.jpg.xmp", 51, 7_000), SidecarChanged(WITH_SIDECAR)),
        (WITH_SIDECAR, SidecarFile("a.jpg.xmp", 50, 7_001), SidecarChanged(WITH_SIDECAR)),
        (WITH_SIDECAR, SidecarFile("a.xmp", 50, 7_000), SidecarChanged(WITH_SIDECAR)),
    ],
)
def test_a_known_file_whose_sidecar_changed_is_read_again(
    asset: KnownAsset, walked: SidecarFile | None, expected: Unchanged | SidecarChanged
) -> None:
    assert by_stat(asset, 100, 1_000, walked) == expected
    assert sidecar_changed(asset, walked) == isinstance(expected, SidecarChanged)


def test_a_changed_file_is_hashed_whatever_its_sidecar() -> None:
    """The file's own change comes first: hashed, then decided by content (a touched or
    moved asset is read again after, if its sidecar is not the walked one)."""
    assert by_stat(WITH_SIDECAR, 101, 1_000, SIDECAR) is None
    assert by_stat(WITH_SIDECAR, 100, 1_001, None) is None
    assert by_stat(None, 100, 1_000, SIDECAR) is None


@pytest.mark.parametrize(
    ("content", "at_path", "with_content", "ingesting", "expected"),
    [
        # The same content at the same path: touched, the same asset.
        ("aaaa", HERE, HERE, None, Touched(HERE)),
        # New content at a new path, or over a known path.
        ("cccc", None, None, None, New()),
        ("cccc", HERE, None, None, New()),
        # Content being ingested from another file by this crawl: a duplicate; an
        # asset of other content at this path goes.
        ("cccc", None, None, "c.jpg", Duplicate("c.jpg", None)),
        ("cccc", HERE, None, "c.jpg", Duplicate("c.jpg", HERE)),
        # The content of an asset elsewhere: ask whether its file is still there.
        ("bbbb", None, ELSEWHERE, None, AskOwner(ELSEWHERE, None)),
        ("bbbb", HERE, ELSEWHERE, None, AskOwner(ELSEWHERE, HERE)),
        ("bbbb", HERE, ELSEWHERE, "x.jpg", AskOwner(ELSEWHERE, HERE)),
    ],
)
def test_a_hashed_file_is_decided_from_what_the_crawl_knows(
    content: str,
    at_path: KnownAsset | None,
    with_content: KnownAsset | None,
    ingesting: str | None,
    expected: decisions.Decision | AskOwner,
) -> None:
    path = "a.jpg" if at_path is not None else "new.jpg"
    got = by_content(path, content, at_path=at_path, with_content=with_content, ingesting=ingesting)
    assert got == expected


def test_an_owner_still_there_makes_a_duplicate_and_one_gone_a_move() -> None:
    ask = AskOwner(ELSEWHERE, HERE)
    assert by_owner(ask, still_there=True) == Duplicate("b.jpg", HERE)
    assert by_owner(ask, still_there=False) == Moved(ELSEWHERE, HERE)
    assert by_owner(AskOwner(ELSEWHERE, None), still_there=False) == Moved(ELSEWHERE, None)
