"""Writers of the less usual places a photo holds a date (ADR 0053): EXIF with only IFD0
DateTime, FLIR's APP1 FFF block, a PNG's ``tIME`` chunk and ``Creation Time`` text, and
XMP with junk around it, so the tests build the files the readers
(``library.media.exif``, ``flir``, ``containers``, ``xmp``) must date. ExifTool reads
what these write."""

from __future__ import annotations

import io
import struct
import zlib
from datetime import UTC, datetime

from PIL import Image

from safelight.library.media.exif import (
    TAG_DATE_ORIGINAL,
    TAG_DATE_TIME,
    TAG_EXIF_IFD,
    TAG_MAKE,
    TAG_MODEL,
    TAG_OFFSET_TIME,
    TAG_SUBSEC_TIME,
)

_FLIR_RECORD = 0x20  # CameraInfo
_FLIR_DATE_AT = 0x384


def exif_with_modify_date(
    written: datetime,
    *,
    make: str | None = None,
    model: str | None = None,
    captured_at: datetime | None = None,
) -> bytes:
    """An EXIF block with IFD0 DateTime (ExifTool's ModifyDate), SubSecTime (ms) and,
    when ``written`` is aware, OffsetTime in the Exif IFD; its only date unless
    ``captured_at`` adds DateTimeOriginal (wall clock only)."""
    exif = Image.Exif()
    for tag, value in ((TAG_MAKE, make), (TAG_MODEL, model)):
        if value is not None:
            exif[tag] = value
    exif[TAG_DATE_TIME] = written.strftime("%Y:%m:%d %H:%M:%S")
    sub = exif.get_ifd(TAG_EXIF_IFD)
    sub[TAG_SUBSEC_TIME] = f"{written.microsecond // 1000:03d}"
    if captured_at is not None:
        sub[TAG_DATE_ORIGINAL] = captured_at.strftime("%Y:%m:%d %H:%M:%S")
    offset = written.utcoffset()
    if offset is not None:
        minutes = int(offset.total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        sub[TAG_OFFSET_TIME] = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return exif.tobytes()


def flir_segments(
    captured_at: datetime, *, chunks: int = 2, big_endian: bool = True
) -> list[bytes]:
    """The APP1 payloads of a FLIR FFF block (``FLIR\\0``, chunk number, chunks less one)
    whose CameraInfo record holds ``captured_at`` (aware: its zone is written as minutes
    west of UTC), split over ``chunks`` segments as the cameras split theirs."""
    order = ">" if big_endian else "<"
    offset = captured_at.utcoffset()
    assert offset is not None, "FLIR keeps a zone: give an aware time"
    seconds = int(captured_at.astimezone(UTC).replace(microsecond=0).timestamp())
    west = -int(offset.total_seconds()) // 60
    record = bytearray(0x400)
    record[0:2] = struct.pack(order + "H", 2)  # the record's byte-order check
    record[0xD4 : 0xD4 + 9] = b"FLIR E60\0"
    date = struct.pack(order + "IIh", seconds, captured_at.microsecond // 1000, west)
    record[_FLIR_DATE_AT : _FLIR_DATE_AT + 10] = date
    directory_at = 0x40
    records_at = directory_at + 2 * 0x20
    header = bytearray(0x40)
    header[0:4] = b"FFF\0"
    header[4:11] = b"CAMCTRL"
    header[0x14:0x20] = struct.pack(order + "III", 100, directory_at, 2)
    directory = struct.pack(order + "HHIIII12x", 0x0E, 1, 0x64, 1, records_at, 0)  # empty image
    directory += struct.pack(order + "HHIIII12x", _FLIR_RECORD, 1, 0x64, 1, records_at, len(record))
    fff = bytes(header) + directory + bytes(record)
    size = -(-len(fff) // chunks)
    return [
        b"FLIR\0\x01" + bytes([number, chunks - 1]) + fff[number * size : (number + 1) * size]
        for number in range(chunks)
    ]


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def time_chunk(modified: datetime) -> bytes:
    """A ``tIME`` chunk: ``modified`` in UTC, as the PNG spec wants it."""
    utc = modified.astimezone(UTC) if modified.tzinfo is not None else modified
    fields = (utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)
    return png_chunk(b"tIME", struct.pack(">H5B", *fields))


def text_chunk(keyword: str, text: str) -> bytes:
    return png_chunk(b"tEXt", keyword.encode("latin-1") + b"\0" + text.encode("latin-1"))


def xmp_itxt_chunk(packet: bytes) -> bytes:
    """An uncompressed ``iTXt`` chunk of XMP, as ExifTool and Adobe write it (the packet
    may carry junk after it, as some editors leave)."""
    return png_chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + packet)


def png_with(*chunks: bytes, after_pixels: bool = True, size: tuple[int, int] = (16, 12)) -> bytes:
    """A small PNG with ``chunks`` added after its pixels (``after_pixels``, where libpng
    writes ``tIME``) or before them."""
    out = io.BytesIO()
    Image.new("RGB", size, (40, 90, 160)).save(out, format="PNG")
    data = out.getvalue()
    where = data.rindex(b"IEND") - 4 if after_pixels else data.index(b"IDAT") - 4
    return data[:where] + b"".join(chunks) + data[where:]


def app1_xmp(packet: bytes) -> bytes:
    """A JPEG APP1 payload of XMP (the packet, with whatever junk the caller put around)."""
    return b"http://ns.adobe.com/xap/1.0/\0" + packet
