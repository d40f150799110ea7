"""Pairing Live Photos and motion photos: pure rules on plain values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from safelight.library.grouping.livephotos import Capture, pair_live_photos

T0 = datetime(2022, 5, 1, 10, 0, 0, tzinfo=UTC)


def capture(
    asset_id: int,
    path: str,
    seconds: float = 0,
    *,
    ident: str | None = None,
    local_shift_hours: float = 0,
) -> Capture:
    at = T0 + timedelta(seconds=seconds)
    local = (at + timedelta(hours=local_shift_hours)).replace(tzinfo=None)
    kind = "video" if path.lower().endswith((".mov", ".mp4")) else "image"
    return Capture(asset_id, path, kind, at, local, ident)


def test_a_shared_content_identifier_pairs_whatever_the_names_and_times() -> None:
    assets = [capture(1, "a/IMG_1.HEIC", ident="X"), capture(2, "b/other.MOV", 90, ident="X")]
    assert pair_live_photos(assets) == {1: 2}


def test_the_same_base_name_in_one_folder_within_a_second_pairs() -> None:
    assets = [
        capture(1, "2020/IMG_0001.JPG", 0),
        capture(2, "2020/img_0001.mov", 0.8),
        capture(3, "2020/IMG_0002.JPG", 0),
        capture(4, "2020/IMG_0002.MP4", 5),  # too far apart
        capture(5, "2020/IMG_0003.JPG", 0),
        capture(6, "2021/IMG_0003.MOV", 0),  # another folder
    ]
    assert pair_live_photos(assets) == {1: 2}


def test_a_wall_clock_match_pairs_a_photo_without_a_zone() -> None:
    # The photo's wall clock was stored as UTC; the video knows the true instant.
    photo = Capture(1, "x/IMG_5.JPG", "image", T0 + timedelta(hours=2), T0.replace(tzinfo=None))
    video = Capture(2, "x/IMG_5.MOV", "video", T0, T0.replace(tzinfo=None))
    assert pair_live_photos([photo, video]) == {1: 2}


def test_different_content_identifiers_never_pair_by_name() -> None:
    assets = [capture(1, "x/IMG_7.HEIC", ident="A"), capture(2, "x/IMG_7.MOV", ident="B")]
    assert pair_live_photos(assets) == {}


def test_the_nearest_video_wins_and_videos_alone_pair_nothing() -> None:
    assets = [
        capture(1, "x/IMG_9.HEIC", 0, ident="Z"),
        capture(2, "x/late.MOV", 30, ident="Z"),
        capture(3, "x/early.MOV", 1, ident="Z"),
        capture(4, "y/solo.MOV", 0),
    ]
    assert pair_live_photos(assets) == {1: 3}
