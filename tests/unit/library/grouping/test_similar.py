"""Similar shots (ADR 0066): the picture hash of a thumbnail, the rule that links two
photos, the groups it makes, and the ids a rerun keeps."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from PIL import Image, ImageEnhance

from safelight.library.catalogue.proxies import (
    picture_hash_from_bigint,
    picture_hash_to_bigint,
)
from safelight.library.grouping.fingerprints import distance, fingerprint, fingerprint_of
from safelight.library.grouping.similar import (
    SIMILAR_MAX_BITS,
    WINDOW,
    Picture,
    SimilarGroup,
    group_similar,
    reuse_ids,
    similar,
)
from safelight.testing.captures import scene

T0 = datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)
HASH = 0x0123_4567_89AB_CDEF


def picture(asset_id: int, seconds: float, bits: int = HASH, path: str = "") -> Picture:
    return Picture(asset_id, path or f"d/{asset_id}.jpg", T0 + timedelta(seconds=seconds), bits)


def flipped(bits: int, count: int) -> int:
    """``bits`` with its lowest ``count`` bits flipped."""
    return bits ^ ((1 << count) - 1)


def test_the_hash_has_64_bits_half_of_them_set() -> None:
    value = fingerprint_of(scene(0))
    assert 0 <= value < 1 << 64
    # Each bit is a frequency above or below the median of the 64.
    assert value.bit_count() == 32


def test_the_hash_keeps_a_picture_through_edits_and_tells_scenes_apart() -> None:
    original = fingerprint_of(scene(2))
    buffer = io.BytesIO()
    scene(2).save(buffer, "JPEG", quality=30)
    with Image.open(buffer) as resaved:
        assert distance(original, fingerprint_of(resaved)) <= 2
    brighter = ImageEnhance.Brightness(scene(2)).enhance(1.25)
    assert distance(original, fingerprint_of(brighter)) <= 4
    smaller = scene(2).resize((120, 80), Image.Resampling.LANCZOS)
    assert distance(original, fingerprint_of(smaller)) <= 4
    # The ball elsewhere: another picture, far beyond the threshold.
    assert distance(original, fingerprint_of(scene(4))) > SIMILAR_MAX_BITS + 4


def test_the_hash_of_thumbnail_bytes_is_the_hash_of_the_picture_they_hold() -> None:
    buffer = io.BytesIO()
    scene(1).save(buffer, "JPEG", quality=90)
    with Image.open(io.BytesIO(buffer.getvalue())) as decoded:
        assert fingerprint(buffer.getvalue()) == fingerprint_of(decoded)
    assert fingerprint(b"not a thumbnail") is None


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (0, 0),
        (1, 1),
        ((1 << 63) - 1, (1 << 63) - 1),
        (1 << 63, -(1 << 63)),
        ((1 << 64) - 1, -1),
    ],
)
def test_a_hash_is_stored_in_a_bigint_by_twos_complement(value: int, stored: int) -> None:
    assert picture_hash_to_bigint(value) == stored
    assert picture_hash_from_bigint(stored) == value


@pytest.mark.parametrize("value", [-1, 1 << 64])
def test_a_value_of_more_than_64_bits_is_no_picture_hash(value: int) -> None:
    with pytest.raises(ValueError, match="not a 64-bit picture hash"):
        picture_hash_to_bigint(value)


def test_two_shots_are_similar_within_the_threshold_and_the_window_only() -> None:
    first = picture(1, 0)
    assert similar(first, picture(2, 30, flipped(HASH, SIMILAR_MAX_BITS)))
    assert not similar(first, picture(2, 30, flipped(HASH, SIMILAR_MAX_BITS + 1)))
    assert similar(first, picture(2, WINDOW.total_seconds()))
    # The very same picture a moment after the window: another memory.
    assert not similar(first, picture(2, WINDOW.total_seconds() + 1))
    assert not similar(picture(2, WINDOW.total_seconds() + 1), first)


def test_groups_gather_linked_shots_and_leave_others_alone() -> None:
    other = flipped(HASH, 40)
    pictures = [
        picture(5, 50),
        picture(1, 0),
        picture(3, 20, other),  # another scene between the takes
        picture(2, 10, flipped(HASH, 4)),
        picture(7, 3600, other),
        picture(8, 3630, other),
        picture(9, 86_400),  # the first scene the next day
    ]
    assert group_similar(pictures) == [
        SimilarGroup(1, (1, 2, 5)),
        SimilarGroup(7, (7, 8)),
    ]


def test_a_reshoot_of_a_reshoot_joins_the_first_and_the_earliest_is_shown() -> None:
    """Single linkage: each take within the window and the threshold of the one before,
    the last ones beyond both of the first."""
    takes = [picture(n, 100 * n, flipped(HASH, 8 * n)) for n in range(4)]
    [group] = group_similar(reversed(takes))
    assert group == SimilarGroup(0, (0, 1, 2, 3))
    assert distance(takes[0].picture_hash, takes[3].picture_hash) > SIMILAR_MAX_BITS


def test_one_photo_is_no_group_and_ties_in_time_order_by_path() -> None:
    assert group_similar([picture(1, 0)]) == []
    assert group_similar([picture(2, 0, path="a/b.jpg"), picture(1, 0, path="a/c.jpg")]) == [
        SimilarGroup(2, (2, 1))
    ]


def test_a_rerun_keeps_each_groups_id_and_a_new_group_gets_none() -> None:
    groups = [SimilarGroup(1, (1, 2, 3)), SimilarGroup(7, (7, 8))]
    assert reuse_ids(groups, {1: 40, 2: 40, 3: 40, 7: 41, 8: 41}) == [
        (40, groups[0]),
        (41, groups[1]),
    ]
    # A group that lost a member or gained one keeps its id; a group of photos in no
    # group yet is new.
    assert reuse_ids(groups, {1: 40, 2: 40, 3: None, 7: None, 8: None}) == [
        (40, groups[0]),
        (None, groups[1]),
    ]


def test_a_stored_group_split_in_two_is_continued_by_one_of_them_only() -> None:
    """The part with most of its members keeps the id; the other part is a new group."""
    groups = [SimilarGroup(1, (1, 2)), SimilarGroup(5, (5, 6, 7))]
    current = dict.fromkeys((1, 2, 5, 6, 7), 40)
    assert reuse_ids(groups, current) == [(None, groups[0]), (40, groups[1])]
    # Two stored groups merged: the one with most members here goes on, the lowest id
    # on a tie.
    merged = [SimilarGroup(1, (1, 2, 3, 4))]
    assert reuse_ids(merged, {1: 41, 2: 41, 3: 40, 4: 40}) == [(40, merged[0])]
