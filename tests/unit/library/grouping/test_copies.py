"""Files of one capture that are not RAWs, stacked as 'format' or 'copy' (ADR 0056), and
the fingerprints that tell one picture from another: pure rules on plain values, and
the crawl's own thumbnails of built files."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from itertools import combinations
from pathlib import Path

import pytest
from PIL import Image

from safelight.library.grouping.copies import (
    MAX_GROUP,
    Shot,
    Stacked,
    all_stacks,
    base_name,
    fingerprints_wanted,
    stack_copies,
)
from safelight.library.grouping.fingerprints import (
    SAME_CONTENT_MAX_BITS,
    fingerprint,
    fingerprint_of,
    same_content,
)
from safelight.library.render.images import make_image_proxies
from safelight.testing.captures import capture_library, edited, scene
from safelight.testing.specs import DEFAULT_SPEC

T0 = datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)
PICTURE, OTHER, THIRD = 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0F0F_0F0F_F0F0_F0F0


def shot(
    asset_id: int,
    path: str,
    seconds: float = 0,
    *,
    source: str = "exif",
    camera: tuple[str | None, str | None] = ("Canon", "EOS R6"),
) -> Shot:
    return Shot(asset_id, path, T0 + timedelta(seconds=seconds), source, *camera)


@pytest.mark.parametrize(
    ("stem", "base", "marked"),
    [
        ("IMG_0001", "img_0001", False),
        ("IMG_0001 (1)", "img_0001", True),
        ("IMG_0001(2)", "img_0001", True),
        ("IMG_0001-edited", "img_0001", True),
        ("IMG_0001_edit", "img_0001", True),
        ("IMG_0001 - Copy", "img_0001", True),
        ("IMG_0001 - Copy (2)", "img_0001", True),
        ("Copy of IMG_0001", "img_0001", True),
        ("IMG_E0001", "img_0001", True),
        ("IMG_0001-1", "img_0001-1", False),  # a sequence number, not a copy mark
        ("(1)", "(1)", False),  # nothing would be left
    ],
)
def test_copy_marks_come_off_a_name(stem: str, base: str, marked: bool) -> None:
    assert base_name(stem) == (base, marked)


def test_a_jpeg_and_its_exports_in_its_folder_are_formats_of_the_jpeg() -> None:
    shots = [
        shot(1, "d/IMG_0200.webp"),
        shot(2, "d/IMG_0200.JPG"),
        shot(3, "d/IMG_0200.HEIC"),
        shot(4, "d/IMG_0201.JPG", 0.4),  # the next frame: another name
    ]
    prints = {1: PICTURE, 2: PICTURE, 3: PICTURE ^ 0b11, 4: OTHER}
    assert fingerprints_wanted(shots) == {1, 2, 3}  # one name, one instant: not IMG_0201
    assert stack_copies(shots, prints) == {1: Stacked(2, "format"), 3: Stacked(2, "format")}


def test_an_export_whose_content_differs_is_not_stacked_but_an_edit_is() -> None:
    """Same base name and time: an unmarked other format must show the same picture
    (or be unknown), while an edited copy may look other than its original."""
    shots = [shot(1, "d/IMG_1.JPG"), shot(2, "d/IMG_1.png"), shot(3, "d/IMG_1-edited.jpg")]
    stacks = stack_copies(shots, {1: PICTURE, 2: OTHER, 3: THIRD})
    assert stacks == {3: Stacked(1, "copy")}
    assert stack_copies(shots, {}) == {2: Stacked(1, "format"), 3: Stacked(1, "copy")}


def test_a_copy_dated_by_its_file_needs_the_same_content() -> None:
    """An export without EXIF is dated by its file: the name and the picture decide."""
    export = shot(2, "d/IMG_1.webp", 86_400, source="file")
    original = shot(1, "d/IMG_1.JPG")
    assert stack_copies([original, export], {}) == {}
    assert stack_copies([original, export], {1: PICTURE, 2: PICTURE}) == {2: Stacked(1, "format")}


def test_the_unmarked_name_is_the_primary_then_the_camera_format() -> None:
    shots = [
        shot(1, "d/IMG_1 (1).jpg"),
        shot(2, "d/IMG_1.webp"),
        shot(3, "d/IMG_1.heic"),
        shot(4, "d/Copy of IMG_1.JPG"),
    ]
    prints = dict.fromkeys((1, 2, 3, 4), PICTURE)
    assert stack_copies(shots, prints) == {
        1: Stacked(3, "copy"),  # marked: a copy, whatever its format
        2: Stacked(3, "format"),
        4: Stacked(3, "copy"),
    }


def test_a_copy_in_another_folder_needs_camera_instant_and_content() -> None:
    a, b = shot(1, "phone/IMG_4.JPG"), shot(2, "backup/2024/IMG_4.JPG")
    assert stack_copies([a, b], {1: PICTURE, 2: PICTURE}) == {1: Stacked(2, "copy")}
    assert stack_copies([a, b], {1: PICTURE, 2: OTHER}) == {}
    assert stack_copies([a, b], {}) == {}  # content unknown: not taken for one
    later = shot(2, "backup/2024/IMG_4.JPG", 0.01)  # another sub-second
    assert stack_copies([a, later], {1: PICTURE, 2: PICTURE}) == {}
    no_camera = [shot(1, "x/a.jpg", camera=(None, None)), shot(2, "y/a.jpg", camera=(None, None))]
    assert stack_copies(no_camera, {1: PICTURE, 2: PICTURE}) == {}
    file_dated = [shot(1, "x/a.jpg", source="file"), shot(2, "y/b.jpg", source="file")]
    assert stack_copies(file_dated, {1: PICTURE, 2: PICTURE}) == {}


def test_one_instant_in_one_folder_and_format_with_unrelated_names_stays_apart() -> None:
    """A camera numbered them: two frames, however alike (bursts decide on them)."""
    shots = [shot(1, "d/IMG_0101.JPG"), shot(2, "d/IMG_0102.JPG")]
    assert stack_copies(shots, {1: PICTURE, 2: PICTURE}) == {}


def test_stacking_is_the_same_whatever_the_input_order() -> None:
    shots = [shot(i, f"d/IMG_1{s}", 0) for i, s in enumerate((".JPG", ".webp", " (1).jpg"))]
    prints = dict.fromkeys(range(3), PICTURE)
    assert stack_copies(shots, prints) == stack_copies(list(reversed(shots)), prints)


def test_a_raw_follows_its_photo_onto_the_capture_primary() -> None:
    copies = {5: Stacked(4, "format")}
    assert all_stacks({9: 5, 8: 4}, copies) == {
        5: Stacked(4, "format"),
        9: Stacked(4, "raw"),
        8: Stacked(4, "raw"),
    }


def test_fingerprints_compare_by_bits() -> None:
    assert same_content(PICTURE, PICTURE ^ ((1 << SAME_CONTENT_MAX_BITS) - 1)) is True
    assert same_content(PICTURE, PICTURE ^ ((1 << (SAME_CONTENT_MAX_BITS + 1)) - 1)) is False
    assert same_content(PICTURE, None) is None


def test_thumbnails_of_one_picture_match_and_of_moved_frames_do_not(tmp_path: Path) -> None:
    """Measured on the crawl's own thumbnails of built files: the JPEG, WebP and HEIC of
    one picture, a brighter edit and a re-save match; frames whose subject moved do
    not. The numbers behind ``SAME_CONTENT_MAX_BITS``."""
    library = capture_library(tmp_path / "library", T0)
    prints: dict[str, int | None] = {}
    for path in sorted(library.root.rglob("*.*")):
        thumbnail = tmp_path / (path.name + ".thumb.jpg")
        thumbnail.write_bytes(make_image_proxies(path, DEFAULT_SPEC).thumbnail.data)
        prints[str(path.relative_to(library.root))] = fingerprint(thumbnail)
    for other, (primary, _) in library.stacks.items():
        assert same_content(prints[other], prints[primary]) is True, other
    for first, second in combinations(library.burst, 2):
        assert same_content(prints[first], prints[second]) is False
    assert same_content(fingerprint_of(scene(0)), fingerprint_of(edited(scene(0)))) is True
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a picture")
    assert fingerprint(broken) is None


def test_a_fingerprint_is_the_picture_not_its_encoding() -> None:
    picture = scene(2)
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG", quality=40)
    with Image.open(buffer) as reread:
        assert same_content(fingerprint_of(picture), fingerprint_of(reread)) is True
    assert same_content(fingerprint_of(picture), fingerprint_of(scene(3))) is False


def test_two_shots_of_one_name_taken_apart_are_not_one_capture_however_alike() -> None:
    """Two cameras' ``IMG_0001`` copied into one folder (the second renamed ``(1)``):
    each says when it was taken, a day apart, so they stay two photos."""
    shots = [shot(1, "d/IMG_0001.JPG"), shot(2, "d/IMG_0001 (1).JPG", 86_400)]
    assert stack_copies(shots, {1: PICTURE, 2: PICTURE}) == {}
    assert stack_copies(shots, {}) == {}


def test_a_clock_that_was_never_set_gathers_no_copies() -> None:
    """A camera stamping every photo with one time, in two folders: too many to be one
    capture saved again; none is asked about or stacked."""
    shots = [shot(i, f"{'ab'[i % 2]}/DSC{i:04d}.JPG") for i in range(MAX_GROUP + 1)]
    assert fingerprints_wanted(shots) == set()
    assert stack_copies(shots, dict.fromkeys(range(MAX_GROUP + 1), PICTURE)) == {}
