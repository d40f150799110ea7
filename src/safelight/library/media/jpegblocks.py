"""The camera's own blocks older JPEGs carry instead of (or beside) EXIF.

Read from the segments Pillow already holds after opening the file (``image.applist``),
so nothing is read again:

- Canon's CIFF heap in APP0 (``II\\x1a\\0\\0\\0HEAPJPGM``, the PowerShot A5 era and the
  CRW format's JPEG twin): MakeModel (0x080a: make NUL model NUL) and TimeStamp
  (0x180e: seconds since 1970 of the camera's wall clock, zone unknown).
- Olympus's "picture info" text in APP12 (``TimeDate=<seconds since 1970>``, the
  camera's wall clock again).

Both clocks count local time as if it were UTC (ExifTool reads them so), so the
result is a *naive* datetime, like EXIF without an offset. Every read is bounded; a
block that does not parse gives nothing.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

_CIFF_JPEG_HEADER = b"HEAPJPGM"
_CIFF_MAKE_MODEL = 0x080A
_CIFF_TIME_STAMP = 0x180E
_CIFF_MAX_DEPTH = 4
_CIFF_MAX_ENTRIES = 256
_OLYMPUS_TIME = re.compile(rb"\[picture info\].*?TimeDate=(\d{1,12})", re.DOTALL)
_EARLIEST = datetime(1980, 1, 1, tzinfo=UTC)  # before digital cameras: an unset clock


@dataclass(frozen=True, slots=True)
class MakerBlock:
    make: str | None = None
    model: str | None = None
    captured_at: datetime | None = None
    """Naive: the camera's wall clock."""


def read_maker_blocks(applist: Sequence[tuple[str, bytes]]) -> MakerBlock:
    """What the CIFF (APP0) or Olympus (APP12) blocks among ``applist`` say."""
    for marker, data in applist:
        if marker == "APP0" and data[6:14] == _CIFF_JPEG_HEADER:
            found = read_ciff(data)
            if found.make or found.captured_at:
                return found
        elif marker == "APP12":
            match = _OLYMPUS_TIME.search(data[:4096])
            if match is not None:
                return MakerBlock(captured_at=_wall_clock(int(match.group(1))))
    return MakerBlock()


def read_ciff(data: bytes) -> MakerBlock:
    """Make, model and wall-clock time of a CIFF file: the APP0 block of Canon's early
    JPEGs (``HEAPJPGM``), or a whole CRW RAW file (``HEAPCCDR``), which is one."""
    if data[:2] != b"II" or len(data) < 14:
        return MakerBlock()  # every CIFF a camera wrote is little-endian
    (header_length,) = struct.unpack("<I", data[2:6])
    heap = data[header_length:]
    values: dict[int, bytes] = {}
    _ciff_heap(heap, values, depth=0)
    make = model = None
    if (make_model := values.get(_CIFF_MAKE_MODEL)) is not None:
        parts = [p.decode("latin-1").strip() for p in make_model.split(b"\0")]
        make = parts[0] or None if parts else None
        model = parts[1] or None if len(parts) > 1 else None
    captured_at = None
    if (stamp := values.get(_CIFF_TIME_STAMP)) is not None and len(stamp) >= 4:
        captured_at = _wall_clock(struct.unpack("<I", stamp[:4])[0])
    return MakerBlock(make, model, captured_at)


def _ciff_heap(heap: bytes, values: dict[int, bytes], depth: int) -> None:
    """Collect the first value of each tag in a CIFF heap and its subheaps. The heap's
    last four bytes give its directory's offset; each entry is tag, size, offset."""
    if len(heap) < 6 or depth > _CIFF_MAX_DEPTH:
        return
    (directory,) = struct.unpack("<I", heap[-4:])
    if directory + 2 > len(heap):
        return
    (count,) = struct.unpack("<H", heap[directory : directory + 2])
    if count > _CIFF_MAX_ENTRIES:
        return
    for index in range(count):
        at = directory + 2 + 10 * index
        entry = heap[at : at + 10]
        if len(entry) < 10:
            return
        tag, size, offset = struct.unpack("<HII", entry)
        location, kind, tag_id = tag & 0xC000, tag & 0x3800, tag & 0x3FFF
        if location == 0x4000:
            value = entry[2:10]  # a value of up to 8 bytes kept in the entry itself
        elif location == 0x0000 and offset + size <= len(heap):
            value = heap[offset : offset + size]
        else:
            continue
        if kind in (0x2800, 0x3000) and location == 0x0000:
            _ciff_heap(value, values, depth + 1)
        else:
            values.setdefault(tag_id, value)


def _wall_clock(seconds: int) -> datetime | None:
    try:
        stamp = datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.replace(tzinfo=None) if stamp >= _EARLIEST else None
