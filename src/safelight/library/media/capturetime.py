"""When a photo was taken, chosen among every place a camera or an editor writes it.

The order of precedence (ADR 0026), first date that parses wins:

0. ``"sidecar"``: the photo's XMP sidecar, when it has one (``sidecars``: the editor's
   word, applied over this choice by the metadata readers).

1. ``"exif"``: EXIF DateTimeOriginal, then DateTimeDigitized (ExifTool's CreateDate),
   each with its SubSecTime* fraction and OffsetTime* zone. The camera wrote these at
   the shot; an editor's copy elsewhere is derived from them.
2. ``"xmp"``: the embedded XMP packet's ``exif:DateTimeOriginal``,
   ``photoshop:DateCreated`` (the MWG's mapping of DateTimeOriginal), ``xmp:CreateDate``
   and ``exif:DateTimeDigitized``, in that order (the "original" meanings first).
3. ``"iptc"``: IPTC DateCreated with TimeCreated (a date with no time is not a capture
   time: it is skipped rather than read as midnight).
4. ``"maker"``: the camera maker's own block, for cameras that write no EXIF date: a
   maker note (Reconyx), Canon's CIFF heap, Olympus's APP12 picture info, or FLIR's
   APP1 FFF block (``flir``: thermal cameras; the one maker date with a zone).

The sources above all mean "when the picture was taken". Those below mean "when the
file was last written", which for a camera's own file is the shot (a camera writes
IFD0 DateTime as it saves) and for an edited or exported one is the edit: a better
guess than the file's time on disk, which a copy to a NAS resets, but less certain
(ADR 0053), and shown as such.

5. ``"modified"``: EXIF IFD0 DateTime (ExifTool's ModifyDate) with the Exif IFD's
   SubSecTime and OffsetTime, then the XMP's ``xmp:ModifyDate`` and ``tiff:DateTime``.
6. ``"png"``: a PNG's own dates (``containers.png_facts``): the ``Creation Time`` text,
   then the ``tIME`` chunk (the last modification, UTC by the PNG spec).

The file's own time (``"file"``) comes only after all of these (the caller adds it),
and the crawl's summary counts the photos it dated so, and those dated by 5 or 6.
``xmp:MetadataDate`` (when the metadata alone changed) and ImageMagick's
``date:create``/``date:modify`` texts (the file system's times of the file it read)
are not read: neither says anything of the picture.

A zone is borrowed: EXIF without OffsetTime (most cameras before ~2018) gets the offset
of an XMP or IPTC date that shows the same wall-clock time to the second, as ExifTool's
composite tags and the MWG do; a date that stays without a zone is naive (the camera's
wall clock, never to be read as UTC).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import Literal

from safelight.library.media.exif import ExifDate, ExifFields
from safelight.library.media.xmp import (
    NS_EXIF,
    NS_PHOTOSHOP,
    NS_TIFF,
    NS_XMP,
    XmpProperties,
    parse_xmp_date,
)

_EXIF_DATE = re.compile(r"(\d{4})[:-](\d{2})[:-](\d{2})[ T](\d{2}):(\d{2}):(\d{2})")
_EXIF_OFFSET = re.compile(r"([+-])(\d{2}):?(\d{2})")
_EARLIEST_PNG_YEAR = 1980  # before digital images: an unset clock

CapturedAtSource = Literal[
    "sidecar", "exif", "xmp", "iptc", "maker", "modified", "png", "video", "file"
]

LESS_CERTAIN_SOURCES: frozenset[CapturedAtSource] = frozenset({"modified", "png"})
"""Sources that date the file's last write rather than the shot (5 and 6 above)."""

XMP_DATES = (
    (NS_EXIF, "DateTimeOriginal"),
    (NS_PHOTOSHOP, "DateCreated"),
    (NS_XMP, "CreateDate"),
    (NS_EXIF, "DateTimeDigitized"),
)
"""The XMP dates read, in the order of precedence."""

XMP_MODIFIED_DATES = ((NS_XMP, "ModifyDate"), (NS_TIFF, "DateTime"))
"""The XMP dates of the file's last write, read after the maker's (``"modified"``)."""


@dataclass(frozen=True, slots=True)
class CaptureTime:
    at: datetime
    """Aware when the zone is known, naive otherwise."""
    source: CapturedAtSource
    is_instant: bool = False
    """``at`` is an instant, UTC by its format, without the wall clock where it was taken
    (QuickTime's ``creation_time``, PNG's ``tIME``): its local time is the position's
    (``library.places.localtimes``), not its UTC time."""


def choose_capture_time(
    exif: ExifFields,
    xmp: XmpProperties,
    *,
    iptc: datetime | None = None,
    maker: datetime | None = None,
    png_created: datetime | None = None,
    png_modified: datetime | None = None,
) -> CaptureTime | None:
    """The capture time by the order above, or None when no place holds a date.

    ``maker``: the date of a maker's block outside EXIF (CIFF, Olympus, FLIR);
    ``png_created`` and ``png_modified``: a PNG's ``Creation Time`` and ``tIME``."""
    xmp_dates = [d for name in XMP_DATES if (d := parse_xmp_date(xmp.get(*name))) is not None]
    for date in exif.dates:
        parsed = parse_exif_datetime(date.value, date.subsec, date.offset)
        if parsed is not None:
            return CaptureTime(with_zone(parsed, [*xmp_dates, *_list(iptc)]), "exif")
    if xmp_dates:
        return CaptureTime(with_zone(xmp_dates[0], [*xmp_dates[1:], *_list(iptc)]), "xmp")
    if iptc is not None:
        return CaptureTime(iptc, "iptc")
    if exif.maker_date is not None:
        parsed = parse_exif_datetime(exif.maker_date, None, None)
        if parsed is not None:
            return CaptureTime(parsed, "maker")
    if maker is not None:
        return CaptureTime(maker, "maker")
    return modified_time(exif, xmp, png_created=png_created, png_modified=png_modified)


def modified_time(
    exif: ExifFields,
    xmp: XmpProperties,
    *,
    png_created: datetime | None = None,
    png_modified: datetime | None = None,
) -> CaptureTime | None:
    """The less certain dates (5 and 6 above), for a file that holds no capture date."""
    xmp_dates = [
        d for name in XMP_MODIFIED_DATES if (d := parse_xmp_date(xmp.get(*name))) is not None
    ]
    if exif.modified is not None:
        written = exif.modified
        parsed = parse_exif_datetime(written.value, written.subsec, written.offset)
        if parsed is not None:
            return CaptureTime(with_zone(parsed, xmp_dates), "modified")
    if xmp_dates:
        return CaptureTime(with_zone(xmp_dates[0], xmp_dates[1:]), "modified")
    if png_created is not None:
        return CaptureTime(png_created, "png")
    if png_modified is not None:
        return CaptureTime(png_modified, "png", is_instant=True)
    return None


def _list(value: datetime | None) -> list[datetime]:
    return [value] if value is not None else []


def with_zone(stamp: datetime, others: Iterable[datetime]) -> datetime:
    """``stamp`` with the zone of another date of the same wall-clock second."""
    if stamp.tzinfo is not None:
        return stamp
    second = stamp.replace(microsecond=0)
    for other in others:
        if other.tzinfo is not None and other.replace(tzinfo=None, microsecond=0) == second:
            return stamp.replace(tzinfo=other.tzinfo)
    return stamp


def iptc_capture_time(date: bytes | None, time: bytes | None) -> datetime | None:
    """IPTC 2:55 DateCreated (``CCYYMMDD``) with 2:60 TimeCreated (``HHMMSS±HHMM``)."""
    if date is None or time is None:
        return None
    try:
        text_date, text_time = date.decode("ascii").strip(), time.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    if len(text_date) != 8 or len(text_time) < 6 or not (text_date + text_time[:6]).isdigit():
        return None
    try:
        stamp = datetime(
            int(text_date[:4]),
            int(text_date[4:6]),
            int(text_date[6:8]),
            int(text_time[:2]),
            int(text_time[2:4]),
            int(text_time[4:6]),
        )
    except ValueError:
        return None
    zone = text_time[6:]
    if len(zone) == 5 and zone[0] in "+-" and zone[1:].isdigit():
        delta = timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5]))
        if delta <= timedelta(hours=14) and int(zone[3:5]) < 60:
            return stamp.replace(tzinfo=timezone(-delta if zone[0] == "-" else delta))
    return stamp


def png_text_time(text: str | None) -> datetime | None:
    """A PNG's ``Creation Time`` text: RFC 1123 as the PNG spec recommends (``Mon, 1 Jan
    2018 12:10:22 +0100``, a zone's name, or none), EXIF's form (``2007:02:13 06:34:38``,
    which some writers use, with an offset after it or none) or ISO 8601 with a time of
    day; aware when it names a zone, naive otherwise; None for anything else."""
    if text is None:
        return None
    text = text.strip()
    if (iso := parse_xmp_date(text)) is not None:
        return iso
    if (match := _EXIF_DATE.match(text)) is not None:
        return parse_exif_datetime(text, None, text[match.end() :] or None)
    try:
        stamp = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return stamp if stamp.year >= _EARLIEST_PNG_YEAR else None


def captured_at_from_exif(dates: tuple[ExifDate, ...]) -> datetime | None:
    """The first EXIF date that parses; aware if it carries an offset, naive otherwise."""
    for date in dates:
        parsed = parse_exif_datetime(date.value, date.subsec, date.offset)
        if parsed is not None:
            return parsed
    return None


def parse_exif_datetime(value: str, subsec: str | None, offset: str | None) -> datetime | None:
    """``"2021:04:11 15:47:53"`` + ``"054"`` + ``"-05:00"`` -> 15:47:53.054-05:00.

    Blank or zero dates (``"0000:00:00 00:00:00"``), impossible dates and malformed
    offsets yield ``None`` / no zone rather than an error: EXIF is written by firmware.
    Subseconds are the decimal digits after the point (``"5"`` is 0.5 s).
    """
    match = _EXIF_DATE.match(value.strip())
    if match is None:
        return None
    try:
        year, month, day, hour, minute, second = (int(part) for part in match.groups())
        stamp = datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None
    if subsec is not None:
        digits = subsec.strip()
        if digits.isdigit():
            stamp = stamp.replace(microsecond=int(digits[:6].ljust(6, "0")))
    zone = _parse_offset(offset) if offset is not None else None
    return stamp.replace(tzinfo=zone) if zone is not None else stamp


def _parse_offset(text: str) -> timezone | None:
    match = _EXIF_OFFSET.fullmatch(text.strip())
    if match is None:
        return None
    sign, hours, minutes = match.groups()
    delta = timedelta(hours=int(hours), minutes=int(minutes))
    if delta > timedelta(hours=14) or int(minutes) >= 60:
        return None
    return timezone(-delta if sign == "-" else delta)


# --- videos (ADR 0054) --------------------------------------------------------------------

_QUICKTIME_ZERO_YEARS = frozenset({1904, 1970})
"""An unset QuickTime creation time (its epoch, or Unix's), not a date."""


def video_capture_time(
    *,
    creationdate: object,
    recorded: bytes | None,
    content_date: object,
    creation_time: object,
) -> CaptureTime | None:
    """A video's capture time (source ``"video"``), its own local-time tags first, as
    ExifTool reads them (none of them is subject to its ``QuickTimeUTC``):

    1. ``creationdate``: QuickTime's ``com.apple.quicktime.creationdate`` (an ``mdta``
       key, ExifTool's ``Keys:CreationDate``; iPhones, and the apps that keep their
       metadata): the local time with its zone (``2024-07-14T18:03:12+0200``).
    2. ``recorded``: AVCHD's recording date (``containers.avchd_recording_date``,
       ExifTool's ``H264:DateTimeOriginal``): the camcorder's clock, with its zone.
    3. ``content_date``: ``©day`` in ``udta`` or ``ilst`` (ffprobe's ``date``, ExifTool's
       ``ContentCreateDate``), as older iPhones and some cameras write it: local, with
       its zone; a date alone (a song's year) is no capture time.
    4. ``creation_time``: the container's (``mvhd``, ExifTool's ``QuickTime:CreateDate``),
       UTC by the QuickTime spec: an instant without a local time (``is_instant``), whose
       local date is the position's (ADR 0065), else the UTC date.

    A local time without a zone is the wall clock (naive). None when none holds a date."""
    local = _quicktime_time(creationdate, naive_is_utc=False)
    if local is None and recorded is not None:
        local = mdpm_datetime(recorded)
    if local is None:
        local = _quicktime_time(content_date, naive_is_utc=False)
    if local is not None:
        return CaptureTime(local, "video")
    instant = _quicktime_time(creation_time, naive_is_utc=True)
    return CaptureTime(instant, "video", is_instant=True) if instant is not None else None


def _quicktime_time(value: object, *, naive_is_utc: bool) -> datetime | None:
    """An ISO 8601 date and time (``T`` or a space between); None for anything else, a
    date without a time of day, or an unset QuickTime time."""
    if not isinstance(value, str) or len(value.strip()) <= len("2024-07-14"):
        return None
    try:
        stamp = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if stamp.year in _QUICKTIME_ZERO_YEARS:
        return None
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None and naive_is_utc else stamp


def mdpm_datetime(recorded: bytes) -> datetime | None:
    """AVCHD's MDPM date (tags 0x18 and 0x19: a zone byte, then year, month, day, hour,
    minute and second in BCD) as ExifTool's H264 module reads it: the zone byte's 0x20
    is the sign, bits 1-4 the hours, 0x01 a half hour; its DST flag (0x40) is already
    counted in the offset. A zone byte with its unused top bit set, or past 14 hours,
    says no zone: the wall clock, naive. None for digits that are not a date."""
    if len(recorded) != 8:
        return None
    digits = []
    for byte in recorded[1:]:
        high, low = byte >> 4, byte & 0x0F
        if high > 9 or low > 9:
            return None
        digits.append(high * 10 + low)
    century, year, month, day, hour, minute, second = digits
    try:
        stamp = datetime(century * 100 + year, month, day, hour, minute, second)
    except ValueError:
        return None
    zone = recorded[0]
    delta = timedelta(hours=(zone >> 1) & 0x0F, minutes=30 if zone & 0x01 else 0)
    if zone & 0x80 or delta > timedelta(hours=14):
        return stamp
    return stamp.replace(tzinfo=timezone(-delta if zone & 0x20 else delta))
