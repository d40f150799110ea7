"""Burst grouping and the choice of a primary: pure rules on plain values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from PIL import Image, ImageFilter

from safelight.library.grouping.bursts import Burst, Photo, choose_primary, group_bursts, sharpness

T0 = datetime(2021, 7, 4, 15, 0, 0, tzinfo=UTC)


def photo(
    asset_id: int,
    seconds: float,
    *,
    make: str | None = "Canon",
    model: str | None = "EOS R6",
    source: str = "exif",
    maker: str | None = None,
    path: str | None = None,
) -> Photo:
    return Photo(
        id=asset_id,
        file_path=path or f"p/{asset_id:03}.jpg",
        captured_at=T0 + timedelta(seconds=seconds),
        captured_at_source=source,
        camera_make=make,
        camera_model=model,
        maker_burst_id=maker,
    )


def test_a_run_of_shots_at_most_a_second_apart_is_one_burst() -> None:
    photos = [photo(1, 0), photo(2, 0.4), photo(3, 1.4), photo(4, 2.4), photo(5, 3.5)]
    [burst] = group_bursts(photos)
    assert burst.asset_ids == (1, 2, 3, 4)
    assert burst.key == f"camera:Canon|EOS R6|{T0.isoformat()}"


def test_two_runs_separated_by_a_pause_are_two_bursts_and_a_single_shot_none() -> None:
    photos = [photo(1, 0), photo(2, 1), photo(3, 10), photo(4, 20), photo(5, 20.5)]
    assert [b.asset_ids for b in group_bursts(photos)] == [(1, 2), (4, 5)]


def test_other_cameras_and_file_times_never_make_a_burst() -> None:
    photos = [
        photo(1, 0),
        photo(2, 0.5, model="EOS R5"),
        photo(3, 0.6, source="file"),
        photo(4, 0.7, source="file"),
        photo(5, 0.8, make=None, model=None),
        photo(6, 0.9, make=None, model=None),
    ]
    assert group_bursts(photos) == []


def test_a_maker_burst_id_groups_whatever_the_times_and_keeps_them_out_of_runs() -> None:
    photos = [
        photo(1, 0, maker="B1"),
        photo(2, 30, maker="B1"),
        photo(3, 0.5),
        photo(4, 60, maker="LONELY"),
    ]
    assert group_bursts(photos) == [Burst("maker:B1", (1, 2))]


def test_grouping_is_deterministic_whatever_the_input_order() -> None:
    photos = [photo(i, i * 0.5) for i in range(1, 6)] + [
        photo(9, 0, maker="M"),
        photo(8, 1, maker="M"),
    ]
    assert group_bursts(photos) == group_bursts(list(reversed(photos)))


def test_the_primary_is_the_sharpest_else_the_first() -> None:
    burst = Burst("k", (1, 2, 3))
    assert choose_primary(burst, {1: 5.0, 2: 90.0, 3: 12.0}) == 2
    assert choose_primary(burst, {1: None, 2: None, 3: None}) == 1
    assert choose_primary(burst, {}) == 1
    assert choose_primary(burst, {1: 7.0, 2: 7.0}) == 1  # a tie keeps capture order
    assert choose_primary(burst, {3: 1.0}) == 3


def test_sharpness_ranks_a_blurred_picture_below_the_original(tmp_path: Path) -> None:
    sharp = Image.new("L", (64, 64), 0)
    pixels = sharp.load()
    assert pixels is not None
    for x in range(64):
        for y in range(64):
            pixels[x, y] = 255 if (x // 4 + y // 4) % 2 else 0
    sharp.convert("RGB").save(tmp_path / "sharp.jpg", quality=95)
    sharp.filter(ImageFilter.GaussianBlur(3)).convert("RGB").save(tmp_path / "blur.jpg", quality=95)
    (tmp_path / "broken.jpg").write_bytes(b"not an image")
    sharp_score = sharpness(tmp_path / "sharp.jpg")
    blur_score = sharpness(tmp_path / "blur.jpg")
    assert sharp_score is not None and blur_score is not None
    assert sharp_score > blur_score
    assert sharpness(tmp_path / "broken.jpg") is None
    assert sharpness(tmp_path / "missing.jpg") is None


FRAME_A, FRAME_B, FRAME_C = 0x0F0F_0F0F_0F0F_0F0F, 0xF0F0_F0F0_0000_FFFF, 0x0000_FFFF_1234_5678
"""Fingerprints of three pictures that differ (tens of bits apart)."""


def test_frames_of_one_instant_are_a_burst_only_where_their_content_differs() -> None:
    """ADR 0056: a burst is distinct frames. Three shots in one second (a camera that
    writes no sub-seconds) whose content differs are a burst; two whose content is the
    same, or unknown, are not frames of their own."""
    shots = [photo(1, 0), photo(2, 0), photo(3, 0)]
    [burst] = group_bursts(shots, {1: FRAME_A, 2: FRAME_B, 3: FRAME_C})
    assert burst.asset_ids == (1, 2, 3)
    assert group_bursts(shots[:2], {1: FRAME_A, 2: FRAME_A ^ 0b101}) == []
    assert group_bursts(shots[:2]) == []  # nothing known: not told apart
    [partial] = group_bursts(shots, {1: FRAME_A, 2: FRAME_A, 3: FRAME_C})
    assert partial.asset_ids == (1, 3)


def test_frames_at_distinct_sub_seconds_are_a_burst_whatever_they_show() -> None:
    shots = [photo(1, 0), photo(2, 0.25), photo(3, 0.5)]
    [burst] = group_bursts(shots, dict.fromkeys((1, 2, 3), FRAME_A))
    assert burst.asset_ids == (1, 2, 3)


def test_a_clock_that_was_never_set_makes_no_burst() -> None:
    """Hundreds of photos stamped with one time and nothing known of their pictures are
    not a burst (they were one, hundreds of frames long)."""
    assert group_bursts([photo(i, 0) for i in range(300)]) == []
