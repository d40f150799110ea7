"""Stacking a RAW on the photo of the same capture: pure rules on plain values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from safelight.library.grouping.livephotos import Capture
from safelight.library.grouping.stacks import stack_raws

T0 = datetime(2023, 6, 2, 9, 30, 0, tzinfo=UTC)


def capture(
    asset_id: int, path: str, seconds: float = 0, *, local_shift_hours: float = 0
) -> Capture:
    at = T0 + timedelta(seconds=seconds)
    local = (at + timedelta(hours=local_shift_hours)).replace(tzinfo=None)
    kind = "video" if path.lower().endswith((".mov", ".mp4")) else "image"
    return Capture(asset_id, path, kind, at, local)


def test_a_raw_and_a_jpeg_of_one_capture_are_stacked_with_the_jpeg_primary() -> None:
    assets = [capture(1, "d/IMG_0001.JPG"), capture(2, "d/img_0001.cr2", 0.4)]
    assert stack_raws(assets) == {2: 1}


def test_every_raw_format_stacks() -> None:
    for suffix in (".dng", ".CR3", ".nef", ".ARW", ".raf", ".orf", ".RW2"):
        assert stack_raws([capture(1, "a.jpg"), capture(2, f"a{suffix}")]) == {2: 1}, suffix


def test_a_raw_without_a_photo_of_its_name_folder_and_time_stays_alone() -> None:
    assets = [
        capture(1, "d/IMG_0001.JPG"),
        capture(2, "d/IMG_0001.CR2", 1.5),  # more than a second apart
        capture(3, "e/IMG_0001.CR2"),  # another folder
        capture(4, "d/IMG_0002.CR2"),  # another name
        capture(5, "d/IMG_0001.MOV"),  # a video is no primary
        capture(6, "d/IMG_0009.NEF"),
    ]
    assert stack_raws(assets) == {}


def test_wall_clock_or_instant_within_a_second_is_enough() -> None:
    # One file's time is naive (stored as UTC), the other's knows its zone: the wall
    # clocks agree though the instants are two hours apart.
    assets = [capture(1, "a.jpg"), capture(2, "a.dng", 7200, local_shift_hours=-2)]
    assert stack_raws(assets) == {2: 1}


def test_a_jpeg_is_preferred_to_other_photos_then_the_nearest_in_time() -> None:
    assets = [
        capture(1, "a.HEIC"),
        capture(2, "a.jpg", 0.9),
        capture(3, "a.jpeg", 0.2),
        capture(4, "a.dng", 0.0),
    ]
    assert stack_raws(assets) == {4: 3}
    assert stack_raws([capture(1, "b.heic"), capture(2, "b.arw", 0.5)]) == {2: 1}


def test_several_raws_may_share_one_primary_and_raws_never_stack_on_raws() -> None:
    assets = [capture(1, "a.jpg"), capture(2, "a.cr2"), capture(3, "a.dng")]
    assert stack_raws(assets) == {2: 1, 3: 1}
    assert stack_raws([capture(1, "b.cr2"), capture(2, "b.dng")]) == {}
