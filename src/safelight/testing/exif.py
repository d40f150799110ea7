"""EXIF blocks for test and demo photos: the tags that ``safelight.library.media.exif`` reads,
written with Pillow (ExifTool reads what this writes), so a test states a photo's camera,
capture time, orientation, burst and Live Photo identifiers and checks them read back.
"""

from __future__ import annotations

import struct
from datetime import datetime

from PIL import Image

from safelight.library.media.exif import (
    APPLE_BURST_UUID,
    APPLE_MEDIA_GROUP_UUID,
    TAG_DATE_DIGITIZED,
    TAG_DATE_ORIGINAL,
    TAG_EXIF_IFD,
    TAG_MAKE,
    TAG_MAKER_NOTE,
    TAG_MODEL,
    TAG_OFFSET_DIGITIZED,
    TAG_OFFSET_ORIGINAL,
    TAG_ORIENTATION,
    TAG_SUBSEC_DIGITIZED,
    TAG_SUBSEC_ORIGINAL,
)


def exif_bytes(
    *,
    make: str | None = None,
    model: str | None = None,
    orientation: int | None = None,
    captured_at: datetime | None = None,
    maker_note: bytes | None = None,
) -> bytes:
    """An EXIF block (``Exif\\0\\0`` + TIFF) for ``Image.save(exif=...)``: IFD0 Make, Model,
    Orientation; Exif IFD DateTimeOriginal = DateTimeDigitized with SubsecTime* (ms) and,
    when ``captured_at`` is aware, OffsetTime*; and the maker note."""
    exif = Image.Exif()
    for tag, value in ((TAG_MAKE, make), (TAG_MODEL, model), (TAG_ORIENTATION, orientation)):
        if value is not None:
            exif[tag] = value
    sub = exif.get_ifd(TAG_EXIF_IFD)
    if captured_at is not None:
        sub[TAG_DATE_ORIGINAL] = sub[TAG_DATE_DIGITIZED] = captured_at.strftime("%Y:%m:%d %H:%M:%S")
        sub[TAG_SUBSEC_ORIGINAL] = sub[TAG_SUBSEC_DIGITIZED] = (
            f"{captured_at.microsecond // 1000:03d}"
        )
        offset = captured_at.utcoffset()
        if offset is not None:
            minutes = int(offset.total_seconds()) // 60
            text = f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
            sub[TAG_OFFSET_ORIGINAL] = sub[TAG_OFFSET_DIGITIZED] = text
    if maker_note is not None:
        sub[TAG_MAKER_NOTE] = maker_note
    return exif.tobytes()


def apple_maker_note(
    *, burst_id: str | None = None, content_identifier: str | None = None
) -> bytes:
    """An Apple maker note: header, big-endian IFD at 14 with MakerNoteVersion, BurstUUID
    and MediaGroupUUID, string values after it (offsets relative to the note)."""
    strings = [
        (tag, value.encode("ascii") + b"\0")
        for tag, value in (
            (APPLE_BURST_UUID, burst_id),
            (APPLE_MEDIA_GROUP_UUID, content_identifier),
        )
        if value
    ]
    count = 1 + len(strings)
    data_start = 14 + 2 + 12 * count + 4
    table = struct.pack(">HHIi", 0x0001, 9, 1, 14)  # MakerNoteVersion 14, as recent iPhones
    data = b""
    for tag, raw in strings:
        if len(raw) <= 4:  # TIFF keeps values of up to 4 bytes in the entry itself
            table += struct.pack(">HHI4s", tag, 2, len(raw), raw)
        else:
            table += struct.pack(">HHII", tag, 2, len(raw), data_start + len(data))
            data += raw
    header = b"Apple iOS\0" + b"\x00\x01" + b"MM" + struct.pack(">H", count)
    return header + table + b"\0" * 4 + data
