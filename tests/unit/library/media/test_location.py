"""Where a photo or video was taken: EXIF's GPS IFD, else XMP, for photos; QuickTime's
ISO 6709 location for videos (``library.media.location``)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from safelight.library.media.exif import read_exif
from safelight.library.media.location import Location, location_of, parse_iso6709
from safelight.library.media.metadata import read_image_metadata, video_metadata_from_probe
from safelight.library.media.xmp import NS_EXIF, XmpProperties, parse_xmp
from safelight.testing.dateplaces import exif_with_gps, xmp_packet


def near(found: Location | None, latitude: float, longitude: float, altitude: float | None) -> bool:
    if found is None:
        return False
    same_altitude = (
        found.altitude_m is None
        if altitude is None
        else found.altitude_m is not None and abs(found.altitude_m - altitude) < 0.01
    )
    return (
        abs(found.latitude - latitude) < 1e-6
        and abs(found.longitude - longitude) < 1e-6
        and same_altitude
    )


@pytest.mark.parametrize(
    ("latitude", "longitude", "altitude"),
    [
        (39.115, -108.400968, 1483.9),  # north, west
        (-33.8568, 151.2153, None),  # south, east, no altitude
        (31.5, 35.5, -430.5),  # the Dead Sea shore: below sea level
    ],
)
def test_exif_gps_reads_back_with_its_signs(
    tmp_path: Path, latitude: float, longitude: float, altitude: float | None
) -> None:
    block = exif_with_gps(latitude, longitude, altitude, make="Apple")
    fields = read_exif(block)
    assert fields.make == "Apple"
    assert near(
        Location(fields.latitude or 0, fields.longitude or 0, fields.altitude),
        latitude,
        longitude,
        altitude,
    )
    buffer = io.BytesIO()
    Image.new("RGB", (16, 12)).save(buffer, "JPEG", exif=block)
    (tmp_path / "gps.jpg").write_bytes(buffer.getvalue())
    meta = read_image_metadata(tmp_path / "gps.jpg")
    assert near(meta.location, latitude, longitude, altitude)


def test_no_gps_null_island_and_out_of_range_are_no_position() -> None:
    empty = parse_xmp(b"")
    assert location_of(read_exif(exif_with_gps(0.0, 0.0, 12.0)), empty) is None
    assert location_of(read_exif(b"Exif\0\0"), empty) is None
    assert parse_iso6709("+91.0000+010.0000/") is None
    assert parse_iso6709("+10.0000+181.0000/") is None


def xmp_gps(latitude: str, longitude: str, altitude: str, altitude_ref: str) -> XmpProperties:
    """Parsed XMP holding a GPS position, each value as XMP writes it."""
    return parse_xmp(
        xmp_packet(
            {
                (NS_EXIF, "GPSLatitude"): latitude,
                (NS_EXIF, "GPSLongitude"): longitude,
                (NS_EXIF, "GPSAltitude"): altitude,
                (NS_EXIF, "GPSAltitudeRef"): altitude_ref,
            }
        )
    )


def test_xmp_gps_when_exif_has_none() -> None:
    xmp = xmp_gps("39,6.9N", "108,24,3.48W", "14839/10", "0")
    found = location_of(read_exif(b""), xmp)
    assert near(found, 39.115, -(108 + 24 / 60 + 3.48 / 3600), 1483.9)
    exif = read_exif(exif_with_gps(10.0, 20.0))
    assert near(location_of(exif, xmp), 10.0, 20.0, None), "EXIF wins over XMP"
    below = xmp_gps("31,30S", "35,30E", "4305/10", "1")
    assert near(location_of(read_exif(b""), below), -31.5, 35.5, -430.5)
    wrong = parse_xmp(
        xmp_packet({(NS_EXIF, "GPSLatitude"): "39,6.9E", (NS_EXIF, "GPSLongitude"): "1,0W"})
    )
    assert location_of(read_exif(b""), wrong) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+37.7858-122.4064+012.345/", (37.7858, -122.4064, 12.345)),
        ("+37.7858-122.4064/", (37.7858, -122.4064, None)),
        ("-3345.5+15112.5/", (-(33 + 45.5 / 60), 151 + 12.5 / 60, None)),
        ("+373000-1223000+10CRSWGS_84/", (37.5, -122.5, 10.0)),
        ("not a place", None),
        (None, None),
    ],
)
def test_iso6709(text: str | None, expected: tuple[float, float, float | None] | None) -> None:
    found = parse_iso6709(text)
    if expected is None:
        assert found is None
    else:
        assert near(found, *expected)


def test_a_videos_location_comes_from_apples_key_else_the_xyz_atom() -> None:
    def probe(**tags: str) -> dict[str, object]:
        return {
            "streams": [{"codec_type": "video", "width": 64, "height": 48}],
            "format": {"tags": tags},
        }

    apple = video_metadata_from_probe(
        probe(
            **{
                "com.apple.quicktime.location.ISO6709": "+48.8584+002.2945+035.000/",
                "location": "+01.0000+001.0000/",
            }
        ),
        0,
    )
    assert near(apple.location, 48.8584, 2.2945, 35.0)
    xyz = video_metadata_from_probe(probe(location="+40.6892-074.0445/"), 0)
    assert near(xyz.location, 40.6892, -74.0445, None)
    assert video_metadata_from_probe(probe(), 0).location is None
