"""A small, bounds-checked EXIF (TIFF IFD) reader for the few tags safelight needs.

Why not Pillow's ``getexif()``: it parses every tag, warns (``UserWarning``) on the
malformed blocks real cameras write, and does not read Apple's maker note. Here every
read is bounded, a malformed block only loses the values it garbles, and nothing
warns or raises: ``read_exif`` returns what it could read.

Tags read: Make, Model, Orientation, DateTime (ExifTool's ModifyDate, with the Exif
IFD's SubSecTime and OffsetTime) (IFD0); DateTimeOriginal/Digitized with their
SubsecTime and OffsetTime (Exif IFD); GPSLatitude/Longitude/Altitude with their Refs
(GPS IFD); and from maker notes:

- Apple (``Apple iOS\\0`` header, offsets relative to the note, byte order in the note):
  0x000b BurstUUID, 0x0011 MediaGroupUUID (the Live Photo content identifier, equal to
  the paired video's ``com.apple.quicktime.content.identifier``).
- Canon (plain IFD, offsets relative to the TIFF header): ShotInfo (0x0004) index 9
  SequenceNumber, reported only when CameraSettings (0x0001) index 5 ContinuousDrive
  says the shot was not a single frame.
- Panasonic (``Panasonic\\0\\0\\0``, IFD at +12, TIFF-relative, byte order guessed):
  0x002b SequenceNumber, reported only when 0x002a BurstMode is not off.
- Fujifilm (``FUJIFILM`` + little-endian IFD offset, note-relative, always little
  endian): 0x1101 SequenceNumber when non-zero.
- Reconyx HyperFire (trail cameras, which write no EXIF date: version ``01 f1`` then
  02 or 03, little-endian int16u words): DateTimeOriginal at word 11 as seconds,
  minutes, hours, month, day, year.

Tag numbers follow ExifTool's Apple/Canon/Panasonic/FujiFilm tables; they are public so
that the writer of test photos (``safelight.testing.exif``) writes the very tags read here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import IO, Protocol

_TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4}
_INT_FORMATS = {1: "B", 3: "H", 4: "I", 6: "b", 8: "h", 9: "i", 13: "I"}
_MAX_ENTRIES = 1024  # real IFDs hold a few dozen; more means garbage
_MAX_VALUE_BYTES = 1 << 20

TAG_MAKE = 0x010F
TAG_MODEL = 0x0110
TAG_ORIENTATION = 0x0112
TAG_DATE_TIME = 0x0132
TAG_EXIF_IFD = 0x8769
TAG_DATE_ORIGINAL = 0x9003
TAG_DATE_DIGITIZED = 0x9004
TAG_OFFSET_ORIGINAL = 0x9011
TAG_OFFSET_DIGITIZED = 0x9012
TAG_OFFSET_TIME = 0x9010
TAG_SUBSEC_TIME = 0x9290
TAG_SUBSEC_ORIGINAL = 0x9291
TAG_SUBSEC_DIGITIZED = 0x9292
TAG_MAKER_NOTE = 0x927C
TAG_GPS_IFD = 0x8825
GPS_LATITUDE_REF = 0x0001
GPS_LATITUDE = 0x0002
GPS_LONGITUDE_REF = 0x0003
GPS_LONGITUDE = 0x0004
GPS_ALTITUDE_REF = 0x0005
GPS_ALTITUDE = 0x0006

APPLE_BURST_UUID = 0x000B
APPLE_MEDIA_GROUP_UUID = 0x0011
CANON_CAMERA_SETTINGS = 0x0001
CANON_SHOT_INFO = 0x0004
PANASONIC_BURST_MODE = 0x002A
PANASONIC_SEQUENCE_NUMBER = 0x002B
FUJIFILM_SEQUENCE_NUMBER = 0x1101


@dataclass(frozen=True, slots=True)
class ExifDate:
    """One EXIF date as written: ``"YYYY:MM:DD HH:MM:SS"``, subseconds, UTC offset."""

    value: str
    subsec: str | None
    offset: str | None


@dataclass(frozen=True, slots=True)
class ExifFields:
    make: str | None = None
    model: str | None = None
    orientation: int | None = None
    dates: tuple[ExifDate, ...] = ()
    """DateTimeOriginal then DateTimeDigitized, those present, in that order."""
    burst_id: str | None = None
    content_identifier: str | None = None
    sequence_number: int | None = None
    maker_date: str | None = None
    """A capture date from a maker note (Reconyx), ``"YYYY:MM:DD HH:MM:SS"``."""
    latitude: float | None = None
    """Degrees, north positive; set only together with ``longitude``."""
    longitude: float | None = None
    """Degrees, east positive."""
    altitude: float | None = None
    """Metres above sea level (negative below)."""
    modified: ExifDate | None = None
    """IFD0 DateTime (ExifTool's ModifyDate): when the file was last changed, by the
    camera as it wrote it or by an editor since; with the Exif IFD's SubSecTime and
    OffsetTime. Only a fallback capture time (``capturetime``, source "modified")."""


class _Source(Protocol):
    def read_at(self, offset: int, size: int) -> bytes: ...


@dataclass(frozen=True, slots=True)
class _Bytes:
    data: bytes

    def read_at(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0:
            return b""
        return self.data[offset : offset + size]


@dataclass(frozen=True, slots=True)
class _File:
    """A TIFF original read in place: its IFDs may sit after megabytes of pixels."""

    fp: IO[bytes]

    def read_at(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0:
            return b""
        self.fp.seek(offset)
        return self.fp.read(size)


@dataclass(frozen=True, slots=True)
class _Entry:
    type: int
    count: int
    offset: int  # absolute position of the value in the source

    @property
    def size(self) -> int:
        return _TYPE_SIZES[self.type] * self.count


def read_exif(blob: bytes) -> ExifFields:
    """Fields from an EXIF block (a TIFF structure, with or without ``Exif\\0\\0``)."""
    start = 0
    while blob[start : start + 6] == b"Exif\0\0":
        start += 6
    return _read_tiff(_Bytes(blob[start:]))


def read_exif_from_tiff(fp: IO[bytes]) -> ExifFields:
    """Fields from a TIFF file itself (its IFD0 is the EXIF IFD0)."""
    return _read_tiff(_File(fp))


def read_exif_ifd_dates(blob: bytes) -> tuple[ExifDate, ...]:
    """The capture dates of a TIFF structure whose IFD0 holds the Exif IFD's tags (a CR3's
    ``CMT2`` box), with their sub-seconds and offsets; empty if it is no TIFF."""
    src = _Bytes(blob)
    head = src.read_at(0, 8)
    if len(head) < 8 or head[:2] not in (b"II", b"MM"):
        return ()
    endian = "<" if head[:2] == b"II" else ">"
    magic, ifd_offset = struct.unpack(endian + "HI", head[2:8])
    if magic != 42:
        return ()
    return _dates(src, _read_ifd(src, ifd_offset, endian, base=0))


def _dates(src: _Source, exif_ifd: dict[int, _Entry]) -> tuple[ExifDate, ...]:
    """DateTimeOriginal, then CreateDate (DateTimeDigitized), each with its own sub-seconds
    and offset, as far as the Exif IFD holds them."""
    return tuple(
        ExifDate(value, _text(src, exif_ifd.get(subsec)), _text(src, exif_ifd.get(offset)))
        for tag, subsec, offset in (
            (TAG_DATE_ORIGINAL, TAG_SUBSEC_ORIGINAL, TAG_OFFSET_ORIGINAL),
            (TAG_DATE_DIGITIZED, TAG_SUBSEC_DIGITIZED, TAG_OFFSET_DIGITIZED),
        )
        if (value := _text(src, exif_ifd.get(tag))) is not None
    )


def _read_tiff(src: _Source) -> ExifFields:
    head = src.read_at(0, 8)
    if len(head) < 8 or head[:2] not in (b"II", b"MM"):
        return ExifFields()
    endian = "<" if head[:2] == b"II" else ">"
    (magic,) = struct.unpack(endian + "H", head[2:4])
    if magic != 42:  # 43 is BigTIFF, which cameras do not write
        return ExifFields()
    (ifd0_offset,) = struct.unpack(endian + "I", head[4:8])
    ifd0 = _read_ifd(src, ifd0_offset, endian, base=0)
    make = _text(src, ifd0.get(TAG_MAKE))
    model = _text(src, ifd0.get(TAG_MODEL))
    orientation = _first_int(src, ifd0.get(TAG_ORIENTATION), endian)
    if orientation is not None and not 1 <= orientation <= 8:
        orientation = None

    exif_ifd: dict[int, _Entry] = {}
    exif_offset = _first_int(src, ifd0.get(TAG_EXIF_IFD), endian)
    if exif_offset is not None and exif_offset != ifd0_offset:
        exif_ifd = _read_ifd(src, exif_offset, endian, base=0)
    dates = _dates(src, exif_ifd)
    modified_value = _text(src, ifd0.get(TAG_DATE_TIME))
    modified = (
        ExifDate(
            modified_value,
            _text(src, exif_ifd.get(TAG_SUBSEC_TIME)),
            _text(src, exif_ifd.get(TAG_OFFSET_TIME)),
        )
        if modified_value is not None
        else None
    )
    burst_id = content_identifier = None
    sequence_number = None
    note = exif_ifd.get(TAG_MAKER_NOTE)
    if note is not None and note.size <= _MAX_VALUE_BYTES:
        burst_id, content_identifier, sequence_number = _read_maker_note(
            src, note, endian, make or ""
        )
    maker_date = _reconyx_date(src, note) if note is not None else None
    latitude = longitude = altitude = None
    gps_offset = _first_int(src, ifd0.get(TAG_GPS_IFD), endian)
    if gps_offset is not None and gps_offset != ifd0_offset:
        latitude, longitude, altitude = _read_gps(
            src, _read_ifd(src, gps_offset, endian, 0), endian
        )
    return ExifFields(
        make=make,
        model=model,
        orientation=orientation,
        dates=dates,
        burst_id=burst_id,
        content_identifier=content_identifier,
        sequence_number=sequence_number,
        maker_date=maker_date,
        latitude=latitude,
        longitude=longitude,
        altitude=altitude,
        modified=modified,
    )


def _read_gps(
    src: _Source, gps: dict[int, _Entry], endian: str
) -> tuple[float | None, float | None, float | None]:
    """(latitude, longitude, altitude) of a GPS IFD; a position needs both axes, each
    in range; a Ref other than N/S/E/W (or none) leaves the axis unsigned as written."""
    latitude = _degrees(_rationals(src, gps.get(GPS_LATITUDE), endian))
    longitude = _degrees(_rationals(src, gps.get(GPS_LONGITUDE), endian))
    if latitude is None or longitude is None or latitude > 90 or longitude > 180:
        latitude = longitude = None
    else:
        if (_text(src, gps.get(GPS_LATITUDE_REF)) or "").upper().startswith("S"):
            latitude = -latitude
        if (_text(src, gps.get(GPS_LONGITUDE_REF)) or "").upper().startswith("W"):
            longitude = -longitude
    heights = _rationals(src, gps.get(GPS_ALTITUDE), endian)
    altitude = heights[0] if heights else None
    if altitude is not None and _first_int(src, gps.get(GPS_ALTITUDE_REF), endian) == 1:
        altitude = -altitude
    return latitude, longitude, altitude


def _degrees(parts: tuple[float, ...]) -> float | None:
    """Degrees, minutes, seconds (minutes and seconds may be missing) as degrees."""
    if not parts or any(p < 0 for p in parts):
        return None
    degrees = parts[0] + (parts[1] / 60 if len(parts) > 1 else 0.0)
    return degrees + (parts[2] / 3600 if len(parts) > 2 else 0.0)


def _rationals(src: _Source, entry: _Entry | None, endian: str) -> tuple[float, ...]:
    """A RATIONAL array as floats (SRATIONAL too: some phones write GPS so); a zero
    denominator ends it."""
    if entry is None or entry.type not in (5, 10):
        return ()
    data = _value(src, entry)
    if data is None:
        return ()
    pairs = struct.unpack(f"{endian}{2 * entry.count}{'I' if entry.type == 5 else 'i'}", data)
    values: list[float] = []
    for numerator, denominator in zip(pairs[::2], pairs[1::2], strict=True):
        if denominator == 0:
            break
        values.append(numerator / denominator)
    return tuple(values)


def _reconyx_date(src: _Source, note: _Entry) -> str | None:
    head = src.read_at(note.offset, 34)
    if len(head) < 34 or head[:2] != b"\x01\xf1" or head[2:4] not in (b"\x02\0", b"\x03\0"):
        return None
    second, minute, hour, month, day, year = struct.unpack("<6H", head[22:34])
    return f"{year:04d}:{month:02d}:{day:02d} {hour:02d}:{minute:02d}:{second:02d}"


def _read_maker_note(
    src: _Source, note: _Entry, endian: str, make: str
) -> tuple[str | None, str | None, int | None]:
    """(burst id, content identifier, sequence number) from a known maker note."""
    head = src.read_at(note.offset, 16)
    if head.startswith(b"Apple iOS\0"):
        if head[12:14] not in (b"MM", b"II"):
            return None, None, None
        apple_endian = ">" if head[12:14] == b"MM" else "<"
        ifd = _read_ifd(src, 14, apple_endian, base=note.offset)
        return (
            _text(src, ifd.get(APPLE_BURST_UUID)),
            _text(src, ifd.get(APPLE_MEDIA_GROUP_UUID)),
            None,
        )
    if head.startswith(b"Panasonic\0"):
        note_endian = _guess_endian(src, note.offset + 12, endian)
        ifd = _read_ifd(src, note.offset + 12, note_endian, base=0)
        burst_mode = _first_int(src, ifd.get(PANASONIC_BURST_MODE), note_endian)
        number = _first_int(src, ifd.get(PANASONIC_SEQUENCE_NUMBER), note_endian)
        return None, None, number if burst_mode not in (None, 0) else None
    if head.startswith(b"FUJIFILM") and len(head) >= 12:
        (ifd_offset,) = struct.unpack("<I", head[8:12])
        ifd = _read_ifd(src, ifd_offset, "<", base=note.offset)
        number = _first_int(src, ifd.get(FUJIFILM_SEQUENCE_NUMBER), "<")
        return None, None, number if number else None
    if make.lower().startswith("canon"):
        ifd = _read_ifd(src, note.offset, endian, base=0)
        settings = _ints(src, ifd.get(CANON_CAMERA_SETTINGS), endian)
        shot_info = _ints(src, ifd.get(CANON_SHOT_INFO), endian)
        continuous = settings[5] if len(settings) > 5 else 0
        if continuous != 0 and len(shot_info) > 9:
            return None, None, shot_info[9]
    return None, None, None


def _guess_endian(src: _Source, start: int, default: str) -> str:
    """Byte order of a maker-note IFD that does not declare one (as ExifTool's
    "Unknown"): the one whose entry count is plausible, preferring the TIFF's."""
    raw = src.read_at(start, 2)
    if len(raw) < 2:
        return default
    for endian in (default, "<" if default == ">" else ">"):
        if 0 < struct.unpack(endian + "H", raw)[0] <= 256:
            return endian
    return default


def _read_ifd(src: _Source, offset: int, endian: str, base: int) -> dict[int, _Entry]:
    """The entries of the IFD at ``base + offset``; out-of-range values are dropped.

    ``base`` is where value offsets count from: the TIFF header for standard IFDs, the
    start of the maker note for makers that use note-relative offsets.
    """
    start = base + offset
    raw_count = src.read_at(start, 2)
    if len(raw_count) < 2:
        return {}
    (count,) = struct.unpack(endian + "H", raw_count)
    if count > _MAX_ENTRIES:
        return {}
    table = src.read_at(start + 2, 12 * count)
    entries: dict[int, _Entry] = {}
    for index in range(len(table) // 12):
        tag, type_, value_count, inline = struct.unpack(
            endian + "HHI4s", table[12 * index : 12 * index + 12]
        )
        unit = _TYPE_SIZES.get(type_)
        if unit is None or unit * value_count > _MAX_VALUE_BYTES:
            continue
        if unit * value_count <= 4:
            value_offset = start + 2 + 12 * index + 8
        else:
            value_offset = base + struct.unpack(endian + "I", inline)[0]
        entries.setdefault(tag, _Entry(type_, value_count, value_offset))
    return entries


def _value(src: _Source, entry: _Entry) -> bytes | None:
    data = src.read_at(entry.offset, entry.size)
    return data if len(data) == entry.size else None


def _text(src: _Source, entry: _Entry | None) -> str | None:
    """An ASCII (or UNDEFINED) value up to its first NUL, stripped; None when blank."""
    if entry is None or entry.type not in (2, 7):
        return None
    data = _value(src, entry)
    if data is None:
        return None
    text = data.split(b"\0", 1)[0].decode("utf-8", errors="replace").strip()
    return text or None


def _ints(src: _Source, entry: _Entry | None, endian: str) -> tuple[int, ...]:
    if entry is None or entry.type not in _INT_FORMATS:
        return ()
    data = _value(src, entry)
    if data is None:
        return ()
    values: tuple[int, ...] = struct.unpack(
        f"{endian}{entry.count}{_INT_FORMATS[entry.type]}", data
    )
    return values


def _first_int(src: _Source, entry: _Entry | None, endian: str) -> int | None:
    values = _ints(src, entry, endian)
    return values[0] if values else None
