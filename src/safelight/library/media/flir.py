"""The capture time FLIR thermal cameras keep in their own block of a JPEG.

FLIR cameras (and the phones' FLIR One) write an FFF structure, their "FLIR File
Format", into APP1 segments that start ``FLIR\\0``; many write no EXIF date at all.
The layout, as ExifTool's FLIR module documents it:

- Each segment: ``FLIR\\0``, one byte, the chunk's number, the number of chunks less
  one; the chunks' data (from byte 8) joined in number order make the FFF.
- The FFF header (0x40 bytes): ``FFF\\0`` (``AFF\\0`` in sequences), a creator string,
  a version (100-199) at 0x14 whose reading decides the byte order (big-endian in
  JPEGs), the record directory's offset at 0x18 and its count at 0x1c.
- Each directory entry (0x20 bytes): the record's type (int16u at 0), its offset (0x0c)
  and length (0x10) from the FFF's start. Type 0x20 is CameraInfo.
- CameraInfo: int16u 2 at 0 in its own byte order (else the other order), and at 0x384
  DateTimeOriginal as int32u seconds since 1970 (UTC), int32u whose low 16 bits are
  milliseconds, int16s minutes *west* of UTC (the zone is the negative of it).

Every read is bounded by the data the segments hold; a block that does not parse gives
no date, never an error.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone

_SEGMENT = b"FLIR\0"
_MAX_CHUNKS = 256  # the chunk number is one byte
_HEADER_BYTES = 0x40
_ENTRY_BYTES = 0x20
_MAX_RECORDS = 1024  # cameras write a dozen; more is garbage
_CAMERA_INFO = 0x20
_DATE_AT = 0x384
_EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)  # an unset clock counts from 1970
_MAX_ZONE_MINUTES = 14 * 60


def flir_capture_time(applist: Sequence[tuple[str, bytes]]) -> datetime | None:
    """The DateTimeOriginal of the FLIR block among a JPEG's APP segments (aware, in the
    camera's zone), or None when there is no such block or it does not parse."""
    data = _joined(applist)
    return _camera_info_date(data) if data else None


def _joined(applist: Sequence[tuple[str, bytes]]) -> bytes:
    """The FFF structure: the chunks' data in number order, as ExifTool joins them;
    empty when any chunk is missing or the chunks disagree on their count."""
    chunks: dict[int, bytes] = {}
    total: int | None = None
    for marker, segment in applist:
        if marker != "APP1" or not segment.startswith(_SEGMENT) or len(segment) < 8:
            continue
        number, count = segment[6], segment[7] + 1
        if total is None:
            total = count
        if count != total or number >= total or number in chunks:
            return b""
        chunks[number] = segment[8:]
    if total is None or len(chunks) != total:
        return b""
    return b"".join(chunks[number] for number in range(total))


def _camera_info_date(data: bytes) -> datetime | None:
    header = data[:_HEADER_BYTES]
    if len(header) < _HEADER_BYTES or header[:4] not in (b"FFF\0", b"AFF\0"):
        return None
    endian = next(
        (e for e in (">", "<") if 100 <= struct.unpack(e + "I", header[0x14:0x18])[0] < 200),
        None,
    )
    if endian is None:
        return None
    directory, count = struct.unpack(endian + "II", header[0x18:0x20])
    if count > _MAX_RECORDS:
        return None
    for index in range(count):
        at = directory + index * _ENTRY_BYTES
        entry = data[at : at + _ENTRY_BYTES]
        if len(entry) < _ENTRY_BYTES:
            return None
        (kind,) = struct.unpack(endian + "H", entry[:2])
        if kind == _CAMERA_INFO:
            offset, length = struct.unpack(endian + "II", entry[0x0C:0x14])
            record = data[offset : offset + length]
            # A record cut short is not read, as ExifTool reads none ("Invalid FLIR record").
            return _date_in(record, endian) if len(record) == length else None
    return None


def _date_in(record: bytes, endian: str) -> datetime | None:
    if len(record) < _DATE_AT + 10:
        return None
    if struct.unpack(endian + "H", record[:2])[0] >= 0x100:
        endian = "<" if endian == ">" else ">"  # ExifTool's test: 2 in the right order
    seconds, fraction, west = struct.unpack(endian + "IIh", record[_DATE_AT : _DATE_AT + 10])
    milliseconds = fraction & 0xFFFF
    if abs(west) > _MAX_ZONE_MINUTES:
        return None
    if milliseconds >= 1000:
        milliseconds = 0  # not a fraction of a second: the second itself still stands
    try:
        stamp = datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    if stamp < _EARLIEST:
        return None
    zone = timezone(timedelta(minutes=-west))
    return (stamp + timedelta(milliseconds=milliseconds)).astimezone(zone)
