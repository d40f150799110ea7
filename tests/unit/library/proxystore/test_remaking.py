"""What a remake remakes of one asset (``proxystore.remaking``, ADR 0059): which proxies
are missing and why, and which sets each mode chooses."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from safelight.library.catalogue.proxies import AssetProxies
from safelight.library.proxystore.proxytree import UnsafeProxyPath, inspect
from safelight.library.proxystore.remaking import (
    IMAGE_SET,
    MOTION_SET,
    VIDEO_SET,
    Missing,
    Mode,
    missing_of,
    sets_of,
    sets_to_remake,
)

MADE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ASKED = MADE + timedelta(hours=1)


def asset(
    media_type: str = "image",
    *,
    motion_photo: bool = False,
    types: tuple[str, ...] = IMAGE_SET,
    made: datetime = MADE,
) -> AssetProxies:
    rows = {t: (None if t == "blurhash" else f"c/ab/abc/{t}.1-1.bin", made) for t in types}
    return AssetProxies(1, "a.jpg", "ab" * 32, media_type, motion_photo, 10, 20, None, rows)


def files(root: Path, a: AssetProxies, sizes: dict[str, int]) -> None:
    """The asset's files under ``root``, of these sizes (a type left out: no file)."""
    for proxy_type, (path, _) in a.rows.items():
        if path is not None and proxy_type in sizes:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(b"x" * sizes[proxy_type])


def test_the_sets_an_asset_should_have_follow_its_type() -> None:
    assert sets_of(asset()) == (IMAGE_SET,)
    assert sets_of(asset(motion_photo=True)) == (IMAGE_SET, MOTION_SET)
    assert sets_of(asset("video")) == (VIDEO_SET,)


def test_a_proxy_is_missing_without_its_row_or_its_file_or_with_an_empty_file(
    tmp_path: Path,
) -> None:
    a = asset("video", types=("thumbnail", "full_preview", "web_video"))
    files(tmp_path, a, {"thumbnail": 5, "full_preview": 0})

    found = missing_of(a, lambda path: inspect(tmp_path, path))

    assert found == [
        Missing("full_preview", "file empty"),
        Missing("blurhash", "no row"),
        Missing("web_video", "file missing"),
    ]


def test_a_link_or_a_folder_in_place_of_a_proxy_is_missing(tmp_path: Path) -> None:
    a = asset()
    files(tmp_path, a, {"thumbnail": 5})
    preview = tmp_path / a.rows["full_preview"][0]  # type: ignore[operator]
    os.symlink(tmp_path / a.rows["thumbnail"][0], preview)  # type: ignore[operator]
    assert missing_of(a, lambda path: inspect(tmp_path, path)) == [
        Missing("full_preview", "file cannot be read: is a symbolic link: not followed")
    ]
    preview.unlink()
    preview.mkdir()
    assert missing_of(a, lambda path: inspect(tmp_path, path)) == [
        Missing("full_preview", "not a regular file")
    ]


def test_a_file_that_cannot_be_looked_at_is_missing_with_the_reason() -> None:
    def refused(path: str) -> os.stat_result | None:
        if path.endswith("thumbnail.1-1.bin"):
            raise PermissionError(13, "Permission denied")
        if path.endswith("full_preview.1-1.bin"):
            raise UnsafeProxyPath(path, "is a symbolic link: not followed")
        return None

    assert missing_of(asset(), refused) == [
        Missing("thumbnail", "file cannot be read: Permission denied"),
        Missing("full_preview", "file cannot be read: is a symbolic link: not followed"),
    ]


@pytest.mark.parametrize("mode", list(Mode))
def test_a_set_with_a_missing_proxy_is_remade_in_either_mode(mode: Mode) -> None:
    a = asset(motion_photo=True, types=(*IMAGE_SET, *MOTION_SET), made=ASKED)
    chosen = sets_to_remake(a, mode, [Missing("web_video", "file missing")], ASKED)
    assert chosen == [MOTION_SET]


def test_missing_leaves_a_whole_asset_alone() -> None:
    a = asset(motion_photo=True, types=(*IMAGE_SET, *MOTION_SET))
    assert sets_to_remake(a, Mode.MISSING, [], ASKED) == []


def test_all_remakes_what_was_made_before_it_was_asked_for_and_nothing_since() -> None:
    old = asset(motion_photo=True, types=(*IMAGE_SET, *MOTION_SET))
    assert sets_to_remake(old, Mode.ALL, [], ASKED) == [IMAGE_SET, MOTION_SET]
    # Remade by an earlier attempt of this remake: not again (it goes on where it stopped).
    remade = asset(motion_photo=True, types=(*IMAGE_SET, *MOTION_SET), made=ASKED)
    assert sets_to_remake(remade, Mode.ALL, [], ASKED) == []
