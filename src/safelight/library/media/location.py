"""Where a photo or video was taken: latitude, longitude and altitude, from EXIF's GPS
IFD (read in ``exif``), an XMP packet (``exif:GPSLatitude`` ...), or a QuickTime
container's ISO 6709 string (``©xyz``, ``com.apple.quicktime.location.ISO6709``).

Order: EXIF, then XMP (the camera's block before an editor's copy, as for the capture
time, ADR 0026). A position needs both axes within range; the altitude is kept only
with a position. Exactly 0, 0 ("null island") is what receivers without a fix write,
so it is no position."""

from __future__ import annotations

import re
from dataclasses import dataclass

from safelight.library.media.exif import ExifFields
from safelight.library.media.xmp import NS_EXIF, XmpProperties

_XMP_COORDINATE = re.compile(r"(\d{1,3}),(\d{1,2}(?:\.\d+)?)(?:,(\d{1,2}(?:\.\d+)?))?([NSEW])")
_ISO6709 = re.compile(
    r"([+-]\d{2}(?:\.\d+)?|[+-]\d{4}(?:\.\d+)?|[+-]\d{6}(?:\.\d+)?)"
    r"([+-]\d{3}(?:\.\d+)?|[+-]\d{5}(?:\.\d+)?|[+-]\d{7}(?:\.\d+)?)"
    r"([+-]\d+(?:\.\d+)?)?(?:CRS[^/]*)?/?"
)


@dataclass(frozen=True, slots=True)
class Location:
    latitude: float
    """Degrees, north positive."""
    longitude: float
    """Degrees, east positive."""
    altitude_m: float | None = None
    """Metres above sea level (negative below)."""


def location_of(exif: ExifFields, xmp: XmpProperties) -> Location | None:
    """The photo's position: EXIF's, else XMP's; None without a valid one."""
    found = _valid(exif.latitude, exif.longitude, exif.altitude)
    if found is not None:
        return found
    return _valid(
        _xmp_coordinate(xmp.get(NS_EXIF, "GPSLatitude"), "NS"),
        _xmp_coordinate(xmp.get(NS_EXIF, "GPSLongitude"), "EW"),
        _xmp_altitude(xmp.get(NS_EXIF, "GPSAltitude"), xmp.get(NS_EXIF, "GPSAltitudeRef")),
    )


def parse_iso6709(text: object) -> Location | None:
    """``+37.7858-122.4064+012.345/`` (degrees, or ±DDMM[SS] / ±DDDMM[SS] forms)."""
    if not isinstance(text, str):
        return None
    match = _ISO6709.fullmatch(text.strip())
    if match is None:
        return None
    latitude, longitude, altitude = match.groups()
    return _valid(
        _iso_axis(latitude, 2),
        _iso_axis(longitude, 3),
        float(altitude) if altitude is not None else None,
    )


def _iso_axis(text: str, degree_digits: int) -> float:
    sign = -1.0 if text[0] == "-" else 1.0
    whole, _, fraction = text[1:].partition(".")
    digits = len(whole) - degree_digits  # 0: degrees; 2: and minutes; 4: and seconds
    value = float(f"0.{fraction}" if fraction else 0)
    if digits == 0:
        return sign * (int(whole) + value)
    degrees = int(whole[:degree_digits])
    if digits == 2:
        return sign * (degrees + (int(whole[degree_digits:]) + value) / 60)
    minutes, seconds = int(whole[degree_digits : degree_digits + 2]), int(whole[-2:]) + value
    return sign * (degrees + minutes / 60 + seconds / 3600)


def _xmp_coordinate(text: str | None, references: str) -> float | None:
    """XMP's ``DDD,MM,SSk`` or ``DDD,MM.mmk`` (k one of N/S or E/W)."""
    if text is None:
        return None
    match = _XMP_COORDINATE.fullmatch(text.strip().upper())
    if match is None or match.group(4) not in references:
        return None
    degrees, minutes, seconds, reference = match.groups()
    value = int(degrees) + float(minutes) / 60 + (float(seconds) / 3600 if seconds else 0.0)
    return -value if reference in "SW" else value


def _xmp_altitude(text: str | None, reference: str | None) -> float | None:
    """XMP's rational ``"14839/10"`` with ``GPSAltitudeRef`` 1 for below sea level."""
    if text is None:
        return None
    numerator, _, denominator = text.strip().partition("/")
    try:
        value = float(numerator) / float(denominator or 1)
    except (ValueError, ZeroDivisionError):
        return None
    return -value if (reference or "").strip() == "1" else value


def _valid(
    latitude: float | None, longitude: float | None, altitude: float | None
) -> Location | None:
    if latitude is None or longitude is None:
        return None
    if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
        return None
    if latitude == 0 and longitude == 0:
        return None
    if altitude is not None and not -12_000 <= altitude <= 100_000:
        altitude = None  # deeper than the sea, higher than a balloon: garbage
    return Location(latitude, longitude, altitude)
