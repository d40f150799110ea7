"""Finding the video inside Android motion photos (library.media.motionphotos), in files built
as Google and Samsung lay them out, and in the sample folder's when it is there."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from safelight.library.media.motionphotos import MotionVideo, copy_range, find_motion_video
from safelight.library.media.xmp import NS_GCAMERA, find_xmp_packet, parse_xmp
from safelight.testing.motionphotos import (
    google_motion_jpeg,
    google_xmp,
    heic_with_mpvd,
    micro_video_jpeg,
    samsung_motion_jpeg,
    still_heic,
    still_jpeg,
    with_xmp,
)
from safelight.testing.samples import IMAGES, needs_samples, samples_dir

# Only the box that says "MP4" is checked by the finder: the rest may be anything.
FAKE_MP4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(range(256)) * 4
NOT_MP4 = b"\x00\x00\x00\x18xxxxmp42\x00\x00\x00\x00" + bytes(1000)


def find(tmp_path: Path, data: bytes) -> MotionVideo | None:
    path = tmp_path / "photo"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return find_motion_video(fd, len(data))
    finally:
        os.close(fd)


def video_of(data: bytes, found: MotionVideo | None) -> bytes:
    assert found is not None and found.found, found
    return data[found.offset : found.offset + found.length]


@pytest.mark.parametrize(
    ("build", "source"),
    [
        (google_motion_jpeg, "xmp"),
        (micro_video_jpeg, "xmp"),
        (samsung_motion_jpeg, "samsung"),
        (heic_with_mpvd, "mpvd"),
    ],
)
def test_the_embedded_video_is_found_where_the_metadata_says(
    tmp_path: Path, build: object, source: str
) -> None:
    data = build(FAKE_MP4)  # type: ignore[operator]
    found = find(tmp_path, data)
    assert video_of(data, found) == FAKE_MP4
    assert found is not None and found.source == source and found.issue is None


def test_a_container_directory_with_padding_and_a_trailer_after_the_video(
    tmp_path: Path,
) -> None:
    # As Samsung's HEIC says it: the item's length runs to the end of the file, the
    # padding (a trailer after the video) is inside it.
    trailer = b"SAMSUNG-TRAILER" * 3
    xmp = google_xmp(video_length=len(FAKE_MP4) + len(trailer), padding=len(trailer))
    data = with_xmp(still_jpeg(), xmp) + FAKE_MP4 + trailer
    assert video_of(data, find(tmp_path, data)) == FAKE_MP4


def test_plain_stills_are_not_motion_photos(tmp_path: Path) -> None:
    assert find(tmp_path, still_jpeg()) is None
    assert find(tmp_path, still_heic()) is None
    # MotionPhoto="0": the camera says the video was turned off.
    off = with_xmp(still_jpeg(), google_xmp(video_length=len(FAKE_MP4), motion="0"))
    assert find(tmp_path, off + FAKE_MP4) is None
    # An XMP packet of something else entirely.
    other = with_xmp(still_jpeg(), b'<x:xmpmeta xmlns:x="adobe:ns:meta/"></x:xmpmeta>')
    assert find(tmp_path, other) is None


@pytest.mark.parametrize(
    ("data", "words"),
    [
        # The XMP's length points into the still: no MP4 there.
        (google_motion_jpeg(FAKE_MP4, length=len(FAKE_MP4) + 40), "no MP4 where the XMP"),
        # Longer than the file.
        (google_motion_jpeg(FAKE_MP4, length=10**9), "lies outside the file"),
        (micro_video_jpeg(FAKE_MP4, offset=len(FAKE_MP4) - 8), "no MP4 where the XMP"),
        # A trailer that is not an MP4.
        (samsung_motion_jpeg(NOT_MP4), "no MP4 where the Samsung trailer"),
        (heic_with_mpvd(NOT_MP4), "no MP4 where the mpvd box"),
        # The XMP claims a video, the file ends with the still.
        (with_xmp(still_jpeg(), google_xmp(video_length=5000)), "the XMP"),
        # MotionPhoto="1" and no directory item saying where.
        (
            with_xmp(
                still_jpeg(),
                b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf='
                b'"http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
                b'xmlns:GCamera="http://ns.google.com/photos/1.0/camera/" '
                b'GCamera:MotionPhoto="1"/></rdf:RDF></x:xmpmeta>',
            )
            + FAKE_MP4,
            "without a MotionPhoto item",
        ),
    ],
)
def test_a_claimed_video_that_is_not_there_is_a_reason_not_a_motion_photo(
    tmp_path: Path, data: bytes, words: str
) -> None:
    found = find(tmp_path, data)
    assert found is not None and not found.found
    assert found.issue is not None and words in found.issue
    assert (found.offset, found.length) == (0, 0)


def test_hostile_xmp_is_refused_not_expanded(tmp_path: Path) -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]>'
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/">&a;MotionPhoto</x:xmpmeta>'
    )
    packet = find_xmp_packet(bomb)
    # The packet starts at its element: the DTD is left out, its entity undefined.
    assert packet is not None and packet.startswith(b"<x:xmpmeta") and not parse_xmp(packet)
    # Given whole, defusedxml refuses the entity instead of expanding it.
    assert not parse_xmp(bomb)
    assert parse_xmp(google_xmp(video_length=10))
    found = find(tmp_path, with_xmp(still_jpeg(), b"<x:xmpmeta>MotionPhoto <broken"))
    assert found is None  # no closing tag: no packet at all
    found = find(tmp_path, with_xmp(still_jpeg(), b"<x:xmpmeta>MotionPhoto <b></x:xmpmeta>"))
    assert found is not None and found.issue == "motion photo XMP that cannot be parsed"


def test_a_property_reads_as_attribute_or_element() -> None:
    root = parse_xmp(google_xmp(video_length=10))
    assert root.get(NS_GCAMERA, "MotionPhoto") == "1"
    micro = parse_xmp(find_xmp_packet(micro_video_jpeg(FAKE_MP4)) or b"")
    assert micro.get(NS_GCAMERA, "MicroVideoOffset") == str(len(FAKE_MP4))
    assert micro.get(NS_GCAMERA, "MotionPhoto") is None


def test_copy_range_copies_exactly_the_video(tmp_path: Path) -> None:
    data = samsung_motion_jpeg(FAKE_MP4)
    source = tmp_path / "photo.jpg"
    source.write_bytes(data)
    fd = os.open(source, os.O_RDONLY)
    try:
        found = find_motion_video(fd, len(data))
        assert found is not None
        target = tmp_path / "staging" / "motion.mp4"
        target.parent.mkdir()
        calls: list[None] = []
        copy_range(fd, found, target, lambda: calls.append(None))
    finally:
        os.close(fd)
    assert target.read_bytes() == FAKE_MP4 and calls
    with pytest.raises(FileExistsError):  # never over an existing file
        copy_range(os.open(source, os.O_RDONLY), found, target, lambda: None)


def sample_motion_photos() -> Iterator[Path]:
    folder = samples_dir()
    if folder is None:
        return
    yield from sorted(p for p in folder.rglob("*") if "motionphoto" in p.as_posix().lower())


@pytest.mark.samples
@needs_samples
def test_the_sample_motion_photos_hold_an_mp4_and_no_other_image_does(tmp_path: Path) -> None:
    motion = [p for p in sample_motion_photos() if p.is_file()]
    assert motion
    for path in motion:
        data = path.read_bytes()
        found = find(tmp_path, data)
        assert found is not None and found.found, (path, found)
        assert data[found.offset + 4 : found.offset + 8] == b"ftyp"
    for path in IMAGES:
        if path not in motion:
            assert find(tmp_path, path.read_bytes()) is None, path
