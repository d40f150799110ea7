"""ExifTool as the oracle: every image of ``../shared/samples`` read by safelight and by
``exiftool -json -n -G``, file by file: make, model, capture time (wall clock,
subseconds, offset), orientation, GPS position and altitude, and whether a motion video
is inside. Each disagreement that is
safelight's choice is listed below with its reason; any other fails the test. Skips
without ExifTool (``scripts/setup --dev`` installs it) or without the samples folder.
The files of a family's disk whose only date is in a less usual place (ADR 0053) are
built here and held against ``exiftool -time:all`` too, samples folder or not.

ExifTool's values are taken in safelight's documented order of precedence (ADR 0026,
and ADR 0053 for the dates of the file's last write): the oracle checks that each place
is *read* right, the order is the ADRs'.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from safelight.library.files.mediatypes import media_type
from safelight.library.media.location import Location
from safelight.library.media.metadata import ImageMetadata, read_image_metadata
from safelight.library.media.motionphotos import find_motion_video
from safelight.library.media.xmp import NS_XMP
from safelight.testing.dateplaces import with_segment, xmp_packet
from safelight.testing.filedates import (
    app1_xmp,
    exif_with_modify_date,
    flir_segments,
    png_with,
    text_chunk,
    time_chunk,
    xmp_itxt_chunk,
)
from safelight.testing.samples import SAMPLES

EXIFTOOL = shutil.which("exiftool")

needs_exiftool = pytest.mark.skipif(
    EXIFTOOL is None, reason="exiftool (the oracle) is not installed"
)
needs_samples = pytest.mark.skipif(SAMPLES is None, reason="no samples folder (../shared/samples)")

KNOWN_DISAGREEMENTS: dict[tuple[str, str], str] = {}
"""(path below the samples folder, field) -> why safelight differs there, on purpose.
None today: every sample agrees. An entry must still be a disagreement (remove a fixed
one); an unlisted disagreement fails the test."""

PNG_TIME_ZONE = "PNG tIME is UTC"
"""Not a tag: the zone the PNG spec gives ``tIME`` (ExifTool shows its wall clock)."""

DATE_PLACES: tuple[tuple[str, str | None, str | None], ...] = (
    ("EXIF:DateTimeOriginal", "EXIF:SubSecTimeOriginal", "EXIF:OffsetTimeOriginal"),
    ("EXIF:CreateDate", "EXIF:SubSecTimeDigitized", "EXIF:OffsetTimeDigitized"),
    ("XMP:DateTimeOriginal", None, None),
    ("XMP:DateCreated", None, None),  # photoshop:DateCreated
    ("XMP:CreateDate", None, None),
    ("XMP:DateTimeDigitized", None, None),
    ("IPTC:DateCreated", None, None),  # with IPTC:TimeCreated (see expected_time)
    ("MakerNotes:DateTimeOriginal", None, None),
    ("APP12:DateTimeOriginal", None, None),
    ("APP1:DateTimeOriginal", None, None),  # FLIR's FFF CameraInfo
    # The less certain dates of the file's last write (ADR 0053):
    ("EXIF:ModifyDate", "EXIF:SubSecTime", "EXIF:OffsetTime"),
    ("XMP:ModifyDate", None, None),
    ("XMP:DateTime", None, None),  # tiff:DateTime
    ("PNG:CreationTime", None, None),
    ("PNG:ModifyDate", None, PNG_TIME_ZONE),  # tIME
)
_DATE = re.compile(r"(\d{4}):(\d\d):(\d\d) (\d\d):(\d\d)(?::(\d\d))?(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?")


@dataclass(frozen=True, slots=True)
class Stamp:
    wall: datetime
    """Naive, to the microsecond ExifTool shows."""
    offset: timedelta | None
    has_fraction: bool


def parse(value: object, subsec: object = None, offset: object = None) -> Stamp | None:
    match = _DATE.fullmatch(str(value).strip()) if value is not None else None
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    if subsec is not None and fraction is None and str(subsec).strip().isdigit():
        fraction = str(subsec).strip()
    try:
        wall = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
        )  # fmt: skip
    except ValueError:
        return None
    zone = zone or (str(offset).strip() if offset is not None else None)
    return Stamp(wall, _offset(zone), fraction is not None)


def _offset(zone: str | None) -> timedelta | None:
    if not zone:
        return None
    if zone == "Z":
        return timedelta(0)
    match = re.fullmatch(r"([+-])(\d\d):(\d\d)", zone)
    if match is None:
        return None
    delta = timedelta(hours=int(match.group(2)), minutes=int(match.group(3)))
    return -delta if match.group(1) == "-" else delta


def expected_time(tags: Mapping[str, Any]) -> Stamp | None:
    for key, subsec, offset in DATE_PLACES:
        value = tags.get(key)
        if key == "IPTC:DateCreated" and value is not None:
            time = tags.get("IPTC:TimeCreated")
            if time is None:
                continue
            value = f"{value} {time}"
        zone = "+00:00" if offset == PNG_TIME_ZONE else tags.get(offset or "")
        stamp = parse(value, tags.get(subsec or ""), zone)
        if stamp is not None:
            return stamp
    return None


def offsets_shown_for(tags: Mapping[str, Any], wall: datetime) -> set[timedelta]:
    """Every offset ExifTool shows on a date of the same wall-clock second (where a
    zone may be borrowed from, ADR 0026 decision 2)."""
    found: set[timedelta] = set()
    for key, value in tags.items():
        if "Date" in key or "Time" in key:
            if key.startswith("IPTC:TimeCreated") and "IPTC:DateCreated" in tags:
                value = f"{tags['IPTC:DateCreated']} {value}"
            stamp = parse(value)
            same_second = stamp is not None and stamp.wall.replace(microsecond=0) == (
                wall.replace(microsecond=0)
            )
            if stamp is not None and stamp.offset is not None and same_second:
                found.add(stamp.offset)
    return found


def first(tags: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = tags.get(key)
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


# ExifTool's QuickTime:Rotation of a HEIF is its ``irot``: degrees anticlockwise.
_ROTATION_TO_ORIENTATION = {0: 1, 90: 8, 180: 3, 270: 6}


def expected_orientation(meta: ImageMetadata, tags: Mapping[str, Any]) -> int:
    """EXIF's Orientation, except for HEIF and AVIF, whose container's transforms decide
    and whose EXIF Orientation is ignored (ADR 0029)."""
    if meta.format in ("HEIF", "AVIF"):
        rotation = tags.get("QuickTime:Rotation", 0)
        return _ROTATION_TO_ORIENTATION.get(rotation, 1) if isinstance(rotation, int) else 1
    orientation = tags.get("EXIF:Orientation")
    return orientation if isinstance(orientation, int) and 1 <= orientation <= 8 else 1


def exiftool_sees_a_motion_video(tags: Mapping[str, Any]) -> bool:
    """ExifTool's word for a video inside the still: Google's XMP flags, a HEIC's video
    item, or Samsung's trailer."""
    return (
        "QuickTime:MotionPhotoVideo" in tags
        or tags.get("MakerNotes:EmbeddedVideoType") == "MotionPhoto_Data"
        or tags.get("XMP:MotionPhoto") == 1
        or tags.get("XMP:MicroVideo") == 1
    )


def motion_video_in(path: Path) -> bool:
    """Whether safelight finds (and verifies) a motion video in the file at ``path``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        found = find_motion_video(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return found is not None and found.found


def disagreements(
    name: str, meta: ImageMetadata, tags: Mapping[str, Any], *, motion: bool = False
) -> dict[str, str]:
    found: dict[str, str] = {}
    make = first(tags, "EXIF:Make", "XMP:Make", "MakerNotes:Make")
    model = first(tags, "EXIF:Model", "XMP:Model", "MakerNotes:Model")
    if (meta.make, meta.model) != (make, model):
        found["make/model"] = f"safelight {meta.make!r}/{meta.model!r}, ExifTool {make!r}/{model!r}"
    orientation = expected_orientation(meta, tags)
    if meta.orientation != orientation:
        found["orientation"] = f"safelight {meta.orientation}, exiftool {orientation}"
    expected = expected_time(tags)
    if expected is None:
        if meta.captured_at_source != "file":
            found["time"] = (
                f"safelight {meta.captured_at} ({meta.captured_at_source}), exiftool none"
            )
    else:
        wall = meta.captured_at.replace(tzinfo=None)
        wanted = expected.wall if expected.has_fraction else expected.wall.replace(microsecond=0)
        got = wall if expected.has_fraction else wall.replace(microsecond=0)
        offset = meta.captured_at.utcoffset()
        if meta.captured_at_source == "file" or got != wanted:
            found["time"] = (
                f"safelight {meta.captured_at} ({meta.captured_at_source}), exiftool {expected}"
            )
        elif offset != expected.offset and not (
            expected.offset is None and offset in offsets_shown_for(tags, expected.wall)
        ):
            found["time"] = f"safelight offset {offset}, exiftool {expected.offset}"
    gps = gps_disagreement(meta, tags)
    if gps is not None:
        found["gps"] = gps
    if motion != exiftool_sees_a_motion_video(tags):
        found["motion photo"] = f"safelight {motion}, exiftool {not motion}"
    return found


def gps_disagreement(meta: ImageMetadata, tags: Mapping[str, Any]) -> str | None:
    """ExifTool's composite position (signed, from EXIF's GPS IFD or XMP) against
    safelight's; 0, 0 is no position for safelight (a receiver without a fix)."""
    latitude, longitude = tags.get("Composite:GPSLatitude"), tags.get("Composite:GPSLongitude")
    altitude = tags.get("Composite:GPSAltitude")
    if altitude is None:
        # ExifTool makes no composite without GPSAltitudeRef; the EXIF standard's
        # default Ref is 0, above sea level, which safelight follows.
        altitude = tags.get("EXIF:GPSAltitude", tags.get("XMP:GPSAltitude"))
        if isinstance(altitude, int | float) and tags.get("EXIF:GPSAltitudeRef") == 1:
            altitude = -altitude
    numbers = isinstance(latitude, int | float) and isinstance(longitude, int | float)
    if not numbers or (latitude == 0 and longitude == 0):
        latitude = longitude = altitude = None
    if not isinstance(altitude, int | float):
        altitude = None
    got = meta.location
    if latitude is None or longitude is None:
        return None if got is None else f"safelight {got}, ExifTool none"
    if (
        got is None
        or abs(got.latitude - latitude) > 1e-6
        or abs(got.longitude - longitude) > 1e-6
        or (got.altitude_m is None) != (altitude is None)
        or (altitude is not None and abs((got.altitude_m or 0) - altitude) > 0.01)
    ):
        return f"safelight {got}, ExifTool {latitude}, {longitude}, {altitude}"
    return None


@pytest.fixture(scope="module")
def exiftool_tags() -> dict[str, dict[str, Any]]:
    assert SAMPLES is not None and EXIFTOOL is not None
    completed = subprocess.run(
        [EXIFTOOL, "-json", "-n", "-G", "-r", "-q", "-q", "."],
        cwd=SAMPLES,
        capture_output=True,
        timeout=300,
        check=False,
    )
    documents = json.loads(completed.stdout)
    return {str(Path(d["SourceFile"])): d for d in documents}


@pytest.mark.samples
@needs_samples
@needs_exiftool
def test_safelight_agrees_with_exiftool_on_every_sample_image(
    exiftool_tags: dict[str, dict[str, Any]],
) -> None:
    assert SAMPLES is not None
    images = sorted(p for p in SAMPLES.rglob("*") if p.is_file() and media_type(p) == "image")
    assert len(images) >= 100
    unexplained: list[str] = []
    still_listed = set(KNOWN_DISAGREEMENTS)
    for path in images:
        name = path.relative_to(SAMPLES).as_posix()
        tags = exiftool_tags[name]
        meta = read_image_metadata(path)
        motion = motion_video_in(path)
        for field, detail in disagreements(name, meta, tags, motion=motion).items():
            if (name, field) in KNOWN_DISAGREEMENTS:
                still_listed.discard((name, field))
            else:
                unexplained.append(f"{name}: {field}: {detail}")
    assert unexplained == []
    assert still_listed == set(), "listed disagreements that are gone: remove them"


def test_the_oracle_sees_a_wrong_date_make_or_orientation() -> None:
    """The comparison itself can fail: each field, wrong by a little, is reported."""
    tags = {
        "EXIF:Make": "Canon",
        "EXIF:Model": "EOS",
        "EXIF:Orientation": 6,
        "EXIF:DateTimeOriginal": "2021:04:11 15:47:53",
        "EXIF:OffsetTimeOriginal": "-05:00",
        "Composite:GPSLatitude": 39.115,
        "Composite:GPSLongitude": -108.4,
    }
    right = ImageMetadata(
        format="JPEG", width=1, height=1, orientation=6,
        captured_at=datetime(2021, 4, 11, 15, 47, 53).replace(tzinfo=_zone(-5)),
        captured_at_source="exif", make="Canon", model="EOS",
        burst_id=None, content_identifier=None, sequence_number=None,
        location=Location(39.115, -108.4),
    )  # fmt: skip
    assert disagreements("x", right, tags) == {}
    assert set(disagreements("x", replace(right, make="Nikon"), tags)) == {"make/model"}
    assert set(disagreements("x", replace(right, orientation=1), tags)) == {"orientation"}
    assert set(disagreements("x", right, tags, motion=True)) == {"motion photo"}
    motion_tags = {**tags, "XMP:MotionPhoto": 1}
    assert set(disagreements("x", right, motion_tags)) == {"motion photo"}
    assert disagreements("x", right, motion_tags, motion=True) == {}
    later = replace(right, captured_at=right.captured_at + timedelta(seconds=1))
    assert set(disagreements("x", later, tags)) == {"time"}
    other_zone = replace(right, captured_at=right.captured_at.replace(tzinfo=_zone(-4)))
    assert set(disagreements("x", other_zone, tags)) == {"time"}
    by_file = replace(right, captured_at_source="file")
    assert set(disagreements("x", by_file, tags)) == {"time"}
    elsewhere = replace(right, location=Location(39.115, -108.41))
    assert set(disagreements("x", elsewhere, tags)) == {"gps"}
    assert set(disagreements("x", replace(right, location=None), tags)) == {"gps"}


def _zone(hours: int) -> timezone:
    return timezone(timedelta(hours=hours))


def _jpeg(**save: Any) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 12), (200, 120, 40)).save(out, format="JPEG", **save)
    return out.getvalue()


def _with_segments(jpeg: bytes, payloads: list[bytes]) -> bytes:
    for payload in reversed(payloads):
        jpeg = with_segment(jpeg, 0xE1, payload)
    return jpeg


def _png_with_exif(exif: bytes) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 12)).save(out, format="PNG", exif=exif)
    return out.getvalue()


_SHOT = datetime(2018, 3, 4, 10, 11, 12, 345000, tzinfo=_zone(-5))
_EDITED = datetime(2019, 5, 6, 7, 8, 9, 120000, tzinfo=_zone(2))
_PACKET = xmp_packet({(NS_XMP, "CreateDate"): "2016-02-03T04:05:06+01:00"})
_EDIT_PACKET = xmp_packet({(NS_XMP, "ModifyDate"): "2015-07-08T09:10:11+03:00"})

BUILT: dict[str, tuple[bytes, str]] = {
    # name: (the file's bytes, the source safelight must take its date from)
    "modify_date_only.jpg": (_jpeg(exif=exif_with_modify_date(_EDITED, make="Canon")), "modified"),
    "modify_date_no_zone.jpg": (
        _jpeg(exif=exif_with_modify_date(_EDITED.replace(tzinfo=None))),
        "modified",
    ),
    "modify_date_in_exif_chunk.png": (_png_with_exif(exif_with_modify_date(_EDITED)), "modified"),
    "xmp_modify_date_only.jpg": (_with_segments(_jpeg(), [app1_xmp(_EDIT_PACKET)]), "modified"),
    "flir.jpg": (_with_segments(_jpeg(), flir_segments(_SHOT)), "maker"),
    "flir_little_endian.jpg": (
        _with_segments(_jpeg(), flir_segments(_SHOT, chunks=1, big_endian=False)),
        "maker",
    ),
    "flir_and_modify_date.jpg": (
        _with_segments(_jpeg(exif=exif_with_modify_date(_EDITED)), flir_segments(_SHOT)),
        "maker",
    ),
    "capture_and_modify_date.jpg": (
        _jpeg(exif=exif_with_modify_date(_EDITED, captured_at=_SHOT)),
        "exif",
    ),
    "time_only.png": (png_with(time_chunk(_EDITED)), "png"),
    "creation_and_time.png": (
        png_with(
            text_chunk("Creation Time", "Sun, 4 Mar 2018 10:11:12 -0500"),
            time_chunk(_EDITED),
            after_pixels=False,
        ),
        "png",
    ),
    "xmp_and_junk.png": (
        png_with(xmp_itxt_chunk(_PACKET + b"\0\0\0garbage" + _PACKET[:70]), time_chunk(_EDITED)),
        "xmp",
    ),
    "junk_xmp_junk.jpg": (
        _with_segments(
            _jpeg(exif=exif_with_modify_date(_EDITED)), [app1_xmp(b"\0junk" + _PACKET + b"\0\xff")]
        ),
        "xmp",
    ),
}


@pytest.fixture(scope="module")
def built_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dated")
    for name, (data, _) in BUILT.items():
        (folder / name).write_bytes(data)
    return folder


@needs_exiftool
def test_a_date_a_built_file_holds_is_the_one_exiftool_reads(built_files: Path) -> None:
    """Each built file is dated by the place the order says (ADR 0053), with the value
    and zone ExifTool reads there, and never by the file's time."""
    assert EXIFTOOL is not None
    completed = subprocess.run(
        [EXIFTOOL, "-time:all", "-json", "-n", "-G", "-q", "-q", "."],
        cwd=built_files,
        capture_output=True,
        timeout=120,
        check=True,
    )
    tags = {Path(d["SourceFile"]).name: d for d in json.loads(completed.stdout)}
    found = {}
    for name in BUILT:
        meta = read_image_metadata(built_files / name)
        assert expected_time(tags[name]) is not None, f"{name}: ExifTool reads no date"
        found[name] = (meta.captured_at_source, disagreements(name, meta, tags[name]).get("time"))
    assert found == {name: (source, None) for name, (_, source) in BUILT.items()}
